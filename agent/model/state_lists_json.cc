#include "agent/model/state_lists_json.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "agent/model/cli_safety.h"
#include "agent/model/desired_json.h"
#include "agent/model/server_json.h"

namespace hawk::model {
namespace {

using json::object;
using json::Path;
using json::Reader;
using json::value;

absl::Status ParseServer(Reader& r, value& e, const Path& path, size_t index,
                         json::SeenNames* names, const StateListsOptions& options,
                         std::string* name, ServerSpec* out) {
  object obj;
  RETURN_IF_ERROR(r.AsObject(e, path, &obj));
  bool has_name = false;
  bool has_address = false;
  auto handle = [&](std::string_view key, value& v, const Path& field) -> absl::Status {
    if (key != "name") {
      has_address = has_address || key == "address";
      return ReadServerSpecField(r, key, v, field, out);
    }
    absl::string_view text;
    RETURN_IF_ERROR(r.AsString(v, field, &text));
    RETURN_IF_ERROR(CheckIdentifier(text, field));
    RETURN_IF_ERROR(json::CheckUnique(names, text, index, field, "server name", "servers"));
    *name = std::string(text);
    has_name = true;
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(r.ForEachMember(obj, path, kNamedServerFields, handle));
  if (!has_name) return json::Error(path.Field("name"), "required");
  if (!has_address && !options.partial_servers) {
    return json::Error(path.Field("address"), "required");
  }
  return absl::OkStatus();
}

absl::Status ParseServers(Reader& r, value& v, const Path& path, const StateListsOptions& options,
                          DesiredBackend* out) {
  json::List items;
  size_t size = 0;
  RETURN_IF_ERROR(r.AsArray(v, path, kMaxServersPerBackend, "servers", &items));
  RETURN_IF_ERROR(r.Size(items, path, &size));
  json::SeenNames names;
  names.reserve(size);
  out->servers.reserve(size);
  auto read = [&](value& item, size_t i, const Path& at) -> absl::Status {
    std::string name;
    ServerSpec spec;
    RETURN_IF_ERROR(ParseServer(r, item, at, i, &names, options, &name, &spec));
    out->servers.emplace(std::move(name), std::move(spec));
    return absl::OkStatus();
  };
  return r.ForEachItem(items, path, read);
}

// The name member of a named list item, checked by `check` and unique in the list.
template <typename Check>
absl::Status ParseItemName(Reader& r, value& v, const Path& field, size_t index,
                           json::SeenNames* names, absl::string_view what,
                           absl::string_view list_name, Check check, std::string* out) {
  absl::string_view text;
  RETURN_IF_ERROR(r.AsString(v, field, &text));
  RETURN_IF_ERROR(check(text, field));
  RETURN_IF_ERROR(json::CheckUnique(names, text, index, field, what, list_name));
  *out = std::string(text);
  return absl::OkStatus();
}

absl::Status ParseBackends(Reader& r, value& v, const Path& path, const StateListsOptions& options,
                           DesiredState* out) {
  json::List items;
  RETURN_IF_ERROR(r.AsArray(v, path, kMaxBackends, "backends", &items));
  json::SeenNames names;
  auto read = [&](value& item, size_t i, const Path& at) -> absl::Status {
    object obj;
    RETURN_IF_ERROR(r.AsObject(item, at, &obj));
    std::string name;
    DesiredBackend backend;
    auto handle = [&](std::string_view key, value& member, const Path& field) -> absl::Status {
      if (key == "name") {
        return ParseItemName(r, member, field, i, &names, "backend name", "backends",
                             CheckIdentifier, &name);
      }
      return ParseServers(r, member, field, options, &backend);
    };
    RETURN_IF_ERROR(r.ForEachMember(obj, at, {"name", "servers"}, handle));
    if (name.empty()) return json::Error(at.Field("name"), "required");
    out->backends.emplace(std::move(name), std::move(backend));
    return absl::OkStatus();
  };
  return r.ForEachItem(items, path, read);
}

// One item of `entries` ({key, value}) or `patterns` (a string), validated.
absl::Status ReadTableItem(Reader& r, value& item, const Path& at, bool acl, absl::string_view* key,
                           absl::string_view* text) {
  if (acl) {
    RETURN_IF_ERROR(r.AsString(item, at, key));
    *text = absl::string_view();
    return CheckEntryText(*key, at);
  }
  object obj;
  RETURN_IF_ERROR(r.AsObject(item, at, &obj));
  bool has_key = false;
  bool has_value = false;
  auto handle = [&](std::string_view name, value& member, const Path& field) -> absl::Status {
    absl::string_view s;
    RETURN_IF_ERROR(r.AsString(member, field, &s));
    RETURN_IF_ERROR(CheckEntryText(s, field));
    (name == "key" ? *key : *text) = s;
    (name == "key" ? has_key : has_value) = true;
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(r.ForEachMember(obj, at, {"key", "value"}, handle));
  if (!has_key) return json::Error(at.Field("key"), "required");
  if (!has_value) return json::Error(at.Field("value"), "required (HAProxy maps need a value)");
  return absl::OkStatus();
}

// The content of one table (`entries` of a map, `patterns` of an ACL) as the change from `before`
// (nullptr: the table is not held, so every item goes to `out->set`). A listed item that is held
// with the same value costs one lookup; `out->erase` gets what `before` holds and the list does
// not. Duplicates are errors.
absl::Status DiffTableContent(Reader& r, value& v, const Path& path, bool acl,
                              const StringTable* before, TableDelta* out) {
  json::List items;
  RETURN_IF_ERROR(acl ? r.AsArray(v, path, kMaxAclPatterns, "patterns", &items)
                      : r.AsArray(v, path, kMaxMapEntries, "entries", &items));
  if (before == nullptr) {  // every item is copied: one allocation for the table
    size_t size = 0;
    RETURN_IF_ERROR(r.Size(items, path, &size));
    out->set.Reserve(size, r.StringBytes(items));
  }
  // Which held entries the list named, by entry id: a bit each, cleared per document.
  std::vector<bool> listed(before == nullptr ? 0 : before->id_limit());
  size_t matched = 0;
  uint32_t cursor = 0;  // where the next listed key is likeliest held: after the previous one
  auto read = [&](value& item, size_t, const Path& at) -> absl::Status {
    absl::string_view key, text;
    RETURN_IF_ERROR(ReadTableItem(r, item, at, acl, &key, &text));
    absl::optional<StringTable::Entry> held =
        before == nullptr ? absl::nullopt : before->FindEntry(key, &cursor);
    bool duplicate = false;
    if (held) {
      duplicate = listed[held->id];
      listed[held->id] = true;
      ++matched;
      if (!duplicate && held->value != text) out->set.Set(key, text);
    } else {
      duplicate = out->set.Set(key, text).has_value();
    }
    if (duplicate) {
      return acl ? json::DuplicateError(at, "pattern", key, "patterns",
                                        r.FirstIndexOf(items, "", key))
                 : json::DuplicateError(at.Field("key"), "key", key, "entries",
                                        r.FirstIndexOf(items, "key", key));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(r.ForEachItem(items, path, read));
  if (before != nullptr && matched < before->size()) {
    before->ForEachWithId([&](uint32_t id, absl::string_view key) {
      if (!listed[id]) out->erase.Set(key, "");
    });
  }
  return absl::OkStatus();
}

absl::Status ParseTableContent(Reader& r, value& v, const Path& path, bool acl, StringTable* out) {
  TableDelta content;
  RETURN_IF_ERROR(DiffTableContent(r, v, path, acl, /*before=*/nullptr, &content));
  *out = std::move(content.set);
  return absl::OkStatus();
}

// `maps` or `acls`: named tables with `entries` or `patterns`.
absl::Status ParseTables(Reader& r, value& v, const Path& path, bool acl,
                         absl::flat_hash_map<std::string, StringTable>* out) {
  json::List items;
  RETURN_IF_ERROR(r.AsArray(v, path, acl ? kMaxAcls : kMaxMaps, acl ? "acls" : "maps", &items));
  json::SeenNames names;
  auto read = [&](value& item, size_t i, const Path& at) -> absl::Status {
    object obj;
    RETURN_IF_ERROR(r.AsObject(item, at, &obj));
    std::string name;
    StringTable table;
    auto handle = [&](std::string_view key, value& member, const Path& field) -> absl::Status {
      if (key == "name") {
        return ParseItemName(r, member, field, i, &names, acl ? "ACL name" : "map name",
                             acl ? "acls" : "maps", CheckFilePath, &name);
      }
      return ParseTableContent(r, member, field, acl, &table);
    };
    RETURN_IF_ERROR(r.ForEachMember(obj, at, {"name", acl ? "patterns" : "entries"}, handle));
    if (name.empty()) return json::Error(at.Field("name"), "required");
    out->emplace(std::move(name), std::move(table));
    return absl::OkStatus();
  };
  return r.ForEachItem(items, path, read);
}

template <typename V>
std::vector<std::string> SortedNamesNotIn(const absl::flat_hash_map<std::string, V>& held,
                                          const json::SeenNames& listed) {
  std::vector<std::string> names;
  for (const auto& [name, unused] : held) {
    if (!listed.contains(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// `servers` of a backend as the change from `before` (nullptr: the backend is not held): each
// listed server that is new or differs, sorted by name, then each held server not listed (no
// longer managed), sorted by name.
absl::Status DiffServers(Reader& r, value& v, const Path& path, const DesiredBackend* before,
                         std::vector<std::pair<std::string, absl::optional<ServerSpec>>>* out) {
  json::List items;
  size_t size = 0;
  RETURN_IF_ERROR(r.AsArray(v, path, kMaxServersPerBackend, "servers", &items));
  RETURN_IF_ERROR(r.Size(items, path, &size));
  json::SeenNames names;
  names.reserve(size);
  size_t matched = 0;
  auto read = [&](value& item, size_t i, const Path& at) -> absl::Status {
    std::string name;
    ServerSpec spec;
    RETURN_IF_ERROR(ParseServer(r, item, at, i, &names, StateListsOptions{}, &name, &spec));
    if (before != nullptr) {
      auto held = before->servers.find(name);
      if (held != before->servers.end()) {
        ++matched;
        if (held->second == spec) return absl::OkStatus();
      }
    }
    out->emplace_back(std::move(name), std::move(spec));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(r.ForEachItem(items, path, read));
  auto by_name = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::sort(out->begin(), out->end(), by_name);
  if (before != nullptr && matched < before->servers.size()) {
    for (std::string& gone : SortedNamesNotIn(before->servers, names)) {
      out->emplace_back(std::move(gone), absl::nullopt);
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsStateListKey(absl::string_view key) {
  return key == "backends" || key == "maps" || key == "acls";
}

absl::Status ParseStateList(Reader& r, absl::string_view key, value& v, const Path& path,
                            const StateListsOptions& options, DesiredState* out) {
  if (key == "backends") return ParseBackends(r, v, path, options, out);
  if (key == "maps") return ParseTables(r, v, path, /*acl=*/false, &out->maps);
  return ParseTables(r, v, path, /*acl=*/true, &out->acls);
}

}  // namespace hawk::model

namespace hawk::model {

StateListsDiff::StateListsDiff(Reader& reader, const DesiredState& held)
    : reader_(reader), held_(held) {}

absl::Status StateListsDiff::Read(absl::string_view key, value& v, const Path& path) {
  if (key == "backends") return ReadBackends(v, path);
  return ReadTables(v, path, /*acl=*/key == "acls");
}

absl::Status StateListsDiff::ReadBackends(value& v, const Path& path) {
  Reader& r = reader_;
  json::List items;
  RETURN_IF_ERROR(r.AsArray(v, path, kMaxBackends, "backends", &items));
  auto read = [&](value& item, size_t i, const Path& at) -> absl::Status {
    object obj;
    RETURN_IF_ERROR(r.AsObject(item, at, &obj));
    // Which backend held the item's content is compared with: its name, read before its members
    // are validated in order (empty when absent or not a string: the validation reports it).
    auto held = held_.backends.find(r.NameMember(obj));
    const DesiredBackend* before = held == held_.backends.end() ? nullptr : &held->second;
    BackendDelta backend;
    bool listed_servers = false;
    auto handle = [&](std::string_view key, value& member, const Path& field) -> absl::Status {
      if (key == "name") {
        return ParseItemName(r, member, field, i, &backend_names_, "backend name", "backends",
                             CheckIdentifier, &backend.name);
      }
      listed_servers = true;
      return DiffServers(r, member, field, before, &backend.servers);
    };
    RETURN_IF_ERROR(r.ForEachMember(obj, at, {"name", "servers"}, handle));
    if (backend.name.empty()) return json::Error(at.Field("name"), "required");
    if (!listed_servers && before != nullptr) {  // no `servers`: none of them stays managed
      for (std::string& gone : SortedNamesNotIn(before->servers, json::SeenNames())) {
        backend.servers.emplace_back(std::move(gone), absl::nullopt);
      }
    }
    backend.create = before == nullptr;
    if (backend.create || !backend.servers.empty()) backends_.push_back(std::move(backend));
    return absl::OkStatus();
  };
  return r.ForEachItem(items, path, read);
}

absl::Status StateListsDiff::ReadTables(value& v, const Path& path, bool acl) {
  Reader& r = reader_;
  json::List items;
  RETURN_IF_ERROR(r.AsArray(v, path, acl ? kMaxAcls : kMaxMaps, acl ? "acls" : "maps", &items));
  const auto& held_tables = acl ? held_.acls : held_.maps;
  json::SeenNames& names = acl ? acl_names_ : map_names_;
  std::vector<TableDelta>& changed = acl ? acls_ : maps_;
  auto read = [&](value& item, size_t i, const Path& at) -> absl::Status {
    object obj;
    RETURN_IF_ERROR(r.AsObject(item, at, &obj));
    auto held = held_tables.find(r.NameMember(obj));  // as in ReadBackends
    const StringTable* before = held == held_tables.end() ? nullptr : &held->second;
    TableDelta table;
    bool listed_content = false;
    auto handle = [&](std::string_view key, value& member, const Path& field) -> absl::Status {
      if (key == "name") {
        return ParseItemName(r, member, field, i, &names, acl ? "ACL name" : "map name",
                             acl ? "acls" : "maps", CheckFilePath, &table.name);
      }
      listed_content = true;
      return DiffTableContent(r, member, field, acl, before, &table);
    };
    RETURN_IF_ERROR(r.ForEachMember(obj, at, {"name", acl ? "patterns" : "entries"}, handle));
    if (table.name.empty()) return json::Error(at.Field("name"), "required");
    if (!listed_content && before != nullptr) {  // no entries listed: every held one goes
      before->ForEach([&](absl::string_view key, absl::string_view) { table.erase.Set(key, ""); });
    }
    table.create = before == nullptr;
    if (table.create || !table.set.empty() || !table.erase.empty()) {
      changed.push_back(std::move(table));
    }
    return absl::OkStatus();
  };
  return r.ForEachItem(items, path, read);
}

void StateListsDiff::Finish(Delta* out) {
  auto by_name = [](const auto& a, const auto& b) { return a.name < b.name; };
  out->backends.clear();
  for (std::string& name : SortedNamesNotIn(held_.backends, backend_names_)) {
    BackendDelta drop;
    drop.name = std::move(name);
    drop.drop = true;
    out->backends.push_back(std::move(drop));
  }
  std::sort(backends_.begin(), backends_.end(), by_name);
  for (BackendDelta& backend : backends_) out->backends.push_back(std::move(backend));
  auto finish_tables = [&](const absl::flat_hash_map<std::string, StringTable>& held,
                           const json::SeenNames& listed, std::vector<TableDelta>* changed,
                           std::vector<TableDelta>* tables) {
    tables->clear();
    for (std::string& name : SortedNamesNotIn(held, listed)) {
      TableDelta drop;
      drop.name = std::move(name);
      drop.drop = true;
      tables->push_back(std::move(drop));
    }
    std::sort(changed->begin(), changed->end(), by_name);
    for (TableDelta& table : *changed) tables->push_back(std::move(table));
  };
  finish_tables(held_.maps, map_names_, &maps_, &out->maps);
  finish_tables(held_.acls, acl_names_, &acls_, &out->acls);
}

}  // namespace hawk::model

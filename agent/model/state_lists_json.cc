#include "agent/model/state_lists_json.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/model/cli_safety.h"
#include "agent/model/desired_json.h"

namespace hawk::model {
namespace {

using json::array;
using json::element;
using json::object;
using json::Path;

absl::Status ParseServer(element e, const Path& path, size_t index, json::SeenNames* names,
                         const StateListsOptions& options, std::string* name, ServerSpec* out) {
  object obj;
  RETURN_IF_ERROR(json::AsObject(e, path, &obj));
  bool has_name = false;
  bool has_address = false;
  auto handle = [&](std::string_view key, element value, const Path& field) -> absl::Status {
    if (key == "name" || key == "address") {
      absl::string_view text;
      RETURN_IF_ERROR(json::AsString(value, field, &text));
      if (key == "name") {
        RETURN_IF_ERROR(CheckIdentifier(text, field));
        RETURN_IF_ERROR(json::CheckUnique(names, text, index, field, "server name", "servers"));
        *name = std::string(text);
        has_name = true;
      } else {
        RETURN_IF_ERROR(CheckAddress(text, field));
        out->address = std::string(text);
        has_address = true;
      }
    } else if (key == "port" || key == "weight") {
      int64_t number = 0;
      RETURN_IF_ERROR(key == "port" ? json::AsInteger(value, field, 1, 65535, &number)
                                    : json::AsInteger(value, field, 0, 256, &number));
      (key == "port" ? out->port : out->weight) = static_cast<int>(number);
    } else {  // state
      std::string_view state_name;
      absl::optional<ServerState> state;
      if (value.get_string().get(state_name) == simdjson::SUCCESS) {
        state = ServerStateFromName(json::View(state_name));
      }
      if (!state) {
        return json::Error(field,
                           absl::StrCat("must be one of \"READY\", \"DRAIN\", \"MAINT\", got ",
                                        value.is_string() ? json::Quote(json::View(state_name))
                                                          : json::TypeName(value.type())));
      }
      out->state = state;
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(
      json::ForEachMember(obj, path, {"name", "address", "port", "weight", "state"}, handle));
  if (!has_name) return json::Error(path.Field("name"), "required");
  if (!has_address && !options.partial_servers) {
    return json::Error(path.Field("address"), "required");
  }
  return absl::OkStatus();
}

absl::Status ParseServers(element value, const Path& path, const StateListsOptions& options,
                          DesiredBackend* out) {
  array items;
  RETURN_IF_ERROR(json::AsArray(value, path, kMaxServersPerBackend, "servers", &items));
  json::SeenNames names;
  names.reserve(items.size());
  out->servers.reserve(items.size());
  size_t i = 0;
  for (element item : items) {
    std::string name;
    ServerSpec spec;
    RETURN_IF_ERROR(ParseServer(item, path.At(i), i, &names, options, &name, &spec));
    out->servers.emplace(std::move(name), std::move(spec));
    ++i;
  }
  return absl::OkStatus();
}

// The name member of a named list item, checked by `check` and unique in the list.
template <typename Check>
absl::Status ParseItemName(element value, const Path& field, size_t index, json::SeenNames* names,
                           absl::string_view what, absl::string_view list_name, Check check,
                           std::string* out) {
  absl::string_view text;
  RETURN_IF_ERROR(json::AsString(value, field, &text));
  RETURN_IF_ERROR(check(text, field));
  RETURN_IF_ERROR(json::CheckUnique(names, text, index, field, what, list_name));
  *out = std::string(text);
  return absl::OkStatus();
}

absl::Status ParseBackends(element value, const Path& path, const StateListsOptions& options,
                           DesiredState* out) {
  array items;
  RETURN_IF_ERROR(json::AsArray(value, path, kMaxBackends, "backends", &items));
  json::SeenNames names;
  size_t i = 0;
  for (element item : items) {
    Path at = path.At(i);
    object obj;
    RETURN_IF_ERROR(json::AsObject(item, at, &obj));
    std::string name;
    DesiredBackend backend;
    auto handle = [&](std::string_view key, element member, const Path& field) -> absl::Status {
      if (key == "name") {
        return ParseItemName(member, field, i, &names, "backend name", "backends", CheckIdentifier,
                             &name);
      }
      return ParseServers(member, field, options, &backend);
    };
    RETURN_IF_ERROR(json::ForEachMember(obj, at, {"name", "servers"}, handle));
    if (name.empty()) return json::Error(at.Field("name"), "required");
    out->backends.emplace(std::move(name), std::move(backend));
    ++i;
  }
  return absl::OkStatus();
}

// The index of the first item of `items` whose string member `field` (or the item itself, when
// `field` is empty) equals `text`: for "(also entries[3])" once a duplicate is found.
size_t FirstIndexOf(array items, std::string_view field, absl::string_view text) {
  size_t i = 0;
  for (element item : items) {
    std::string_view s;
    simdjson::error_code error =
        field.empty() ? item.get_string().get(s) : item[field].get_string().get(s);
    if (error == simdjson::SUCCESS && json::View(s) == text) return i;
    ++i;
  }
  return i;
}

// The bytes of the strings in `items` (an entry's key and value, or a pattern): one arena
// allocation for the whole table instead of a doubling copy of megabytes. Malformed items count
// nothing; validation comes after.
size_t StringBytes(array items) {
  size_t bytes = 0;
  for (element item : items) {
    std::string_view s;
    if (item.get_string().get(s) == simdjson::SUCCESS) {
      bytes += s.size();
      continue;
    }
    object obj;
    if (item.get_object().get(obj) != simdjson::SUCCESS) continue;
    for (simdjson::dom::key_value_pair member : obj) {
      if (member.value.get_string().get(s) == simdjson::SUCCESS) bytes += s.size();
    }
  }
  return bytes;
}

// One item of `entries` ({key, value}) or `patterns` (a string), validated.
absl::Status ReadTableItem(element item, const Path& at, bool acl, absl::string_view* key,
                           absl::string_view* value) {
  if (acl) {
    RETURN_IF_ERROR(json::AsString(item, at, key));
    *value = absl::string_view();
    return CheckEntryText(*key, at);
  }
  object obj;
  RETURN_IF_ERROR(json::AsObject(item, at, &obj));
  bool has_key = false;
  bool has_value = false;
  auto handle = [&](std::string_view name, element member, const Path& field) -> absl::Status {
    absl::string_view s;
    RETURN_IF_ERROR(json::AsString(member, field, &s));
    RETURN_IF_ERROR(CheckEntryText(s, field));
    (name == "key" ? *key : *value) = s;
    (name == "key" ? has_key : has_value) = true;
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(json::ForEachMember(obj, at, {"key", "value"}, handle));
  if (!has_key) return json::Error(at.Field("key"), "required");
  if (!has_value) return json::Error(at.Field("value"), "required (HAProxy maps need a value)");
  return absl::OkStatus();
}

// The content of one table (`entries` of a map, `patterns` of an ACL) as the change from `before`
// (nullptr: the table is not held, so every item goes to `out->set`). A listed item that is held
// with the same value costs one lookup; `out->erase` gets what `before` holds and the list does
// not. Duplicates are errors.
absl::Status DiffTableContent(element value, const Path& path, bool acl, const StringTable* before,
                              TableDelta* out) {
  array items;
  RETURN_IF_ERROR(acl ? json::AsArray(value, path, kMaxAclPatterns, "patterns", &items)
                      : json::AsArray(value, path, kMaxMapEntries, "entries", &items));
  if (before == nullptr) out->set.Reserve(items.size(), StringBytes(items));
  // Which held entries the list named, by entry id: a bit each, cleared per document.
  std::vector<bool> listed(before == nullptr ? 0 : before->id_limit());
  size_t matched = 0;
  uint32_t cursor = 0;  // where the next listed key is likeliest held: after the previous one
  size_t i = 0;
  for (element item : items) {
    Path at = path.At(i);
    absl::string_view key, text;
    RETURN_IF_ERROR(ReadTableItem(item, at, acl, &key, &text));
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
                                        FirstIndexOf(items, "", key))
                 : json::DuplicateError(at.Field("key"), "key", key, "entries",
                                        FirstIndexOf(items, "key", key));
    }
    ++i;
  }
  if (before != nullptr && matched < before->size()) {
    before->ForEachWithId([&](uint32_t id, absl::string_view key) {
      if (!listed[id]) out->erase.Set(key, "");
    });
  }
  return absl::OkStatus();
}

absl::Status ParseTableContent(element value, const Path& path, bool acl, StringTable* out) {
  TableDelta content;
  RETURN_IF_ERROR(DiffTableContent(value, path, acl, /*before=*/nullptr, &content));
  *out = std::move(content.set);
  return absl::OkStatus();
}

// `maps` or `acls`: named tables with `entries` or `patterns`.
absl::Status ParseTables(element value, const Path& path, bool acl,
                         absl::flat_hash_map<std::string, StringTable>* out) {
  array items;
  RETURN_IF_ERROR(
      json::AsArray(value, path, acl ? kMaxAcls : kMaxMaps, acl ? "acls" : "maps", &items));
  json::SeenNames names;
  size_t i = 0;
  for (element item : items) {
    Path at = path.At(i);
    object obj;
    RETURN_IF_ERROR(json::AsObject(item, at, &obj));
    std::string name;
    StringTable table;
    auto handle = [&](std::string_view key, element member, const Path& field) -> absl::Status {
      if (key == "name") {
        return ParseItemName(member, field, i, &names, acl ? "ACL name" : "map name",
                             acl ? "acls" : "maps", CheckFilePath, &name);
      }
      return ParseTableContent(member, field, acl, &table);
    };
    RETURN_IF_ERROR(json::ForEachMember(obj, at, {"name", acl ? "patterns" : "entries"}, handle));
    if (name.empty()) return json::Error(at.Field("name"), "required");
    out->emplace(std::move(name), std::move(table));
    ++i;
  }
  return absl::OkStatus();
}

// The name member of a list item, read before its members are validated in order: which held
// object the item's content is compared with. Empty when absent or not a string (the members'
// validation then reports it).
absl::string_view NameBeforeValidation(object obj) {
  std::string_view name;
  if (obj["name"].get_string().get(name) != simdjson::SUCCESS) return absl::string_view();
  return json::View(name);
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
absl::Status DiffServers(element value, const Path& path, const DesiredBackend* before,
                         std::vector<std::pair<std::string, absl::optional<ServerSpec>>>* out) {
  array items;
  RETURN_IF_ERROR(json::AsArray(value, path, kMaxServersPerBackend, "servers", &items));
  json::SeenNames names;
  names.reserve(items.size());
  size_t matched = 0;
  size_t i = 0;
  for (element item : items) {
    std::string name;
    ServerSpec spec;
    RETURN_IF_ERROR(ParseServer(item, path.At(i), i, &names, StateListsOptions{}, &name, &spec));
    ++i;
    if (before != nullptr) {
      auto held = before->servers.find(name);
      if (held != before->servers.end()) {
        ++matched;
        if (held->second == spec) continue;
      }
    }
    out->emplace_back(std::move(name), std::move(spec));
  }
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

absl::Status ParseStateList(absl::string_view key, element value, const Path& path,
                            const StateListsOptions& options, DesiredState* out) {
  if (key == "backends") return ParseBackends(value, path, options, out);
  if (key == "maps") return ParseTables(value, path, /*acl=*/false, &out->maps);
  return ParseTables(value, path, /*acl=*/true, &out->acls);
}

}  // namespace hawk::model

namespace hawk::model {

StateListsDiff::StateListsDiff(const DesiredState& held) : held_(held) {}

absl::Status StateListsDiff::Read(absl::string_view key, element value, const Path& path) {
  if (key == "backends") return ReadBackends(value, path);
  return ReadTables(value, path, /*acl=*/key == "acls");
}

absl::Status StateListsDiff::ReadBackends(element value, const Path& path) {
  array items;
  RETURN_IF_ERROR(json::AsArray(value, path, kMaxBackends, "backends", &items));
  size_t i = 0;
  for (element item : items) {
    Path at = path.At(i);
    object obj;
    RETURN_IF_ERROR(json::AsObject(item, at, &obj));
    auto held = held_.backends.find(NameBeforeValidation(obj));
    const DesiredBackend* before = held == held_.backends.end() ? nullptr : &held->second;
    BackendDelta backend;
    bool listed_servers = false;
    auto handle = [&](std::string_view key, element member, const Path& field) -> absl::Status {
      if (key == "name") {
        return ParseItemName(member, field, i, &backend_names_, "backend name", "backends",
                             CheckIdentifier, &backend.name);
      }
      listed_servers = true;
      return DiffServers(member, field, before, &backend.servers);
    };
    RETURN_IF_ERROR(json::ForEachMember(obj, at, {"name", "servers"}, handle));
    if (backend.name.empty()) return json::Error(at.Field("name"), "required");
    if (!listed_servers && before != nullptr) {  // no `servers`: none of them stays managed
      for (std::string& gone : SortedNamesNotIn(before->servers, json::SeenNames())) {
        backend.servers.emplace_back(std::move(gone), absl::nullopt);
      }
    }
    backend.create = before == nullptr;
    if (backend.create || !backend.servers.empty()) backends_.push_back(std::move(backend));
    ++i;
  }
  return absl::OkStatus();
}

absl::Status StateListsDiff::ReadTables(element value, const Path& path, bool acl) {
  array items;
  RETURN_IF_ERROR(
      json::AsArray(value, path, acl ? kMaxAcls : kMaxMaps, acl ? "acls" : "maps", &items));
  const auto& held_tables = acl ? held_.acls : held_.maps;
  json::SeenNames& names = acl ? acl_names_ : map_names_;
  std::vector<TableDelta>& changed = acl ? acls_ : maps_;
  size_t i = 0;
  for (element item : items) {
    Path at = path.At(i);
    object obj;
    RETURN_IF_ERROR(json::AsObject(item, at, &obj));
    auto held = held_tables.find(NameBeforeValidation(obj));
    const StringTable* before = held == held_tables.end() ? nullptr : &held->second;
    TableDelta table;
    bool listed_content = false;
    auto handle = [&](std::string_view key, element member, const Path& field) -> absl::Status {
      if (key == "name") {
        return ParseItemName(member, field, i, &names, acl ? "ACL name" : "map name",
                             acl ? "acls" : "maps", CheckFilePath, &table.name);
      }
      listed_content = true;
      return DiffTableContent(member, field, acl, before, &table);
    };
    RETURN_IF_ERROR(json::ForEachMember(obj, at, {"name", acl ? "patterns" : "entries"}, handle));
    if (table.name.empty()) return json::Error(at.Field("name"), "required");
    if (!listed_content && before != nullptr) {  // no entries listed: every held one goes
      before->ForEach([&](absl::string_view key, absl::string_view) { table.erase.Set(key, ""); });
    }
    table.create = before == nullptr;
    if (table.create || !table.set.empty() || !table.erase.empty()) {
      changed.push_back(std::move(table));
    }
    ++i;
  }
  return absl::OkStatus();
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

#include "agent/model/state_lists_json.h"

#include <string>
#include <utility>

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

absl::Status ParseEntries(element value, const Path& path, StringTable* out) {
  array items;
  RETURN_IF_ERROR(json::AsArray(value, path, kMaxMapEntries, "entries", &items));
  out->Reserve(items.size(), StringBytes(items));
  size_t i = 0;
  for (element item : items) {
    Path at = path.At(i);
    object obj;
    RETURN_IF_ERROR(json::AsObject(item, at, &obj));
    absl::string_view key, text;
    bool has_key = false;
    bool has_value = false;
    auto handle = [&](std::string_view name, element member, const Path& field) -> absl::Status {
      absl::string_view s;
      RETURN_IF_ERROR(json::AsString(member, field, &s));
      RETURN_IF_ERROR(CheckEntryText(s, field));
      (name == "key" ? key : text) = s;
      (name == "key" ? has_key : has_value) = true;
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(json::ForEachMember(obj, at, {"key", "value"}, handle));
    if (!has_key) return json::Error(at.Field("key"), "required");
    if (!has_value) {
      return json::Error(at.Field("value"), "required (HAProxy maps need a value)");
    }
    if (out->Set(key, text).has_value()) {
      return json::DuplicateError(at.Field("key"), "key", key, "entries",
                                  FirstIndexOf(items, "key", key));
    }
    ++i;
  }
  return absl::OkStatus();
}

absl::Status ParsePatterns(element value, const Path& path, StringTable* out) {
  array items;
  RETURN_IF_ERROR(json::AsArray(value, path, kMaxAclPatterns, "patterns", &items));
  out->Reserve(items.size(), StringBytes(items));
  size_t i = 0;
  for (element item : items) {
    Path at = path.At(i);
    absl::string_view text;
    RETURN_IF_ERROR(json::AsString(item, at, &text));
    RETURN_IF_ERROR(CheckEntryText(text, at));
    if (out->Set(text, "").has_value()) {
      return json::DuplicateError(at, "pattern", text, "patterns", FirstIndexOf(items, "", text));
    }
    ++i;
  }
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
      return acl ? ParsePatterns(member, field, &table) : ParseEntries(member, field, &table);
    };
    RETURN_IF_ERROR(json::ForEachMember(obj, at, {"name", acl ? "patterns" : "entries"}, handle));
    if (name.empty()) return json::Error(at.Field("name"), "required");
    out->emplace(std::move(name), std::move(table));
    ++i;
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

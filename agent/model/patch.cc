#include "agent/model/patch.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/model/cli_safety.h"
#include "agent/model/desired_json.h"
#include "agent/model/json_read.h"
#include "agent/model/state_lists_json.h"

namespace hawk::model {
namespace {

using json::array;
using json::element;
using json::object;
using json::Path;

size_t HeldServers(const DesiredState& held, absl::string_view backend) {
  auto it = held.backends.find(backend);
  return it == held.backends.end() ? 0 : it->second.servers.size();
}

// What the upsert adds to the state held must keep it within the document limits, and a new
// server needs an address. Walks the upsert part of the document again for the paths.
absl::Status CheckUpsert(element upsert, const Path& path, const StatePatch& patch,
                         const DesiredState& held) {
  object obj;
  RETURN_IF_ERROR(json::AsObject(upsert, path, &obj));
  size_t backends = held.backends.size();
  for (const auto& [name, backend] : patch.upsert.backends) {
    if (!held.backends.contains(name)) ++backends;
  }
  if (backends > kMaxBackends) {
    return json::Error(path.Field("backends"),
                       absl::StrCat("would make ", backends, " backends; at most ", kMaxBackends));
  }
  size_t maps = held.maps.size();
  for (const auto& [name, table] : patch.upsert.maps) maps += held.maps.contains(name) ? 0 : 1;
  if (maps > kMaxMaps) {
    return json::Error(path.Field("maps"),
                       absl::StrCat("would make ", maps, " maps; at most ", kMaxMaps));
  }
  size_t acls = held.acls.size();
  for (const auto& [name, table] : patch.upsert.acls) acls += held.acls.contains(name) ? 0 : 1;
  if (acls > kMaxAcls) {
    return json::Error(path.Field("acls"),
                       absl::StrCat("would make ", acls, " ACLs; at most ", kMaxAcls));
  }
  auto each_named = [&](std::string_view list, auto&& check) -> absl::Status {
    element items_element;
    if (obj[list].get(items_element) != simdjson::SUCCESS || items_element.is_null()) {
      return absl::OkStatus();
    }
    array items;
    if (items_element.get_array().get(items) != simdjson::SUCCESS) return absl::OkStatus();
    size_t i = 0;
    for (element item : items) {
      std::string_view name = item["name"].get_string().value_unsafe();
      RETURN_IF_ERROR(check(json::View(name), item, path.Field(json::View(list)).At(i)));
      ++i;
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(each_named(
      "backends", [&](absl::string_view name, element item, const Path& at) -> absl::Status {
        const DesiredBackend& want = patch.upsert.backends.find(name)->second;
        size_t total = HeldServers(held, name);
        element servers_element;
        if (item["servers"].get(servers_element) != simdjson::SUCCESS ||
            servers_element.is_null()) {
          return absl::OkStatus();
        }
        array servers;
        if (servers_element.get_array().get(servers) != simdjson::SUCCESS) return absl::OkStatus();
        size_t j = 0;
        for (element server : servers) {
          std::string_view server_name = server["name"].get_string().value_unsafe();
          const ServerSpec& spec = want.servers.find(json::View(server_name))->second;
          if (held.FindServer(name, json::View(server_name)) == nullptr) {
            ++total;
            if (spec.address.empty()) {
              return json::Error(at.Field("servers").At(j).Field("address"),
                                 "required for a server hawk does not manage yet");
            }
          }
          ++j;
        }
        if (total > kMaxServersPerBackend) {
          return json::Error(at.Field("servers"),
                             absl::StrCat("would make ", total, " servers in backend ", name,
                                          "; at most ", kMaxServersPerBackend));
        }
        return absl::OkStatus();
      }));
  auto check_tables = [&](std::string_view list, bool acl) {
    const auto& upserted = acl ? patch.upsert.acls : patch.upsert.maps;
    size_t max = acl ? kMaxAclPatterns : kMaxMapEntries;
    return each_named(list, [&](absl::string_view name, element, const Path& at) -> absl::Status {
      const StringTable* have = acl ? held.FindAcl(name) : held.FindMap(name);
      const StringTable& add = upserted.find(name)->second;
      size_t total = have == nullptr ? 0 : have->size();
      add.ForEach([&](absl::string_view key, absl::string_view) {
        if (have == nullptr || !have->Contains(key)) ++total;
      });
      if (total > max) {
        return json::Error(at.Field(acl ? "patterns" : "entries"),
                           absl::StrCat("would make ", total, acl ? " patterns" : " entries",
                                        " in ", name, "; at most ", max));
      }
      return absl::OkStatus();
    });
  };
  RETURN_IF_ERROR(check_tables("maps", /*acl=*/false));
  return check_tables("acls", /*acl=*/true);
}

absl::Status Conflict(const Path& path, absl::string_view what) {
  return json::Error(path, absl::StrCat(what,
                                        " is also upserted: a PATCH either upserts or removes an "
                                        "object"));
}

absl::Status ParseRemovedNames(element value, const Path& path, size_t max, absl::string_view what,
                               bool identifiers, StringTable* out) {
  array items;
  RETURN_IF_ERROR(json::AsArray(value, path, max, what, &items));
  size_t i = 0;
  for (element item : items) {
    Path at = path.At(i);
    absl::string_view text;
    RETURN_IF_ERROR(json::AsString(item, at, &text));
    RETURN_IF_ERROR(identifiers ? CheckIdentifier(text, at) : CheckEntryText(text, at));
    out->Set(text, "");  // naming a key twice is harmless: it is removed once
    ++i;
  }
  return absl::OkStatus();
}

absl::Status ParseRemove(element value, const Path& path, StatePatch* patch) {
  object obj;
  RETURN_IF_ERROR(json::AsObject(value, path, &obj));
  auto handle = [&](std::string_view list, element items_element,
                    const Path& list_path) -> absl::Status {
    bool backends = list == "backends";
    bool acl = list == "acls";
    std::string_view inner = backends ? "servers" : acl ? "patterns" : "keys";
    size_t max_items = backends ? kMaxBackends : acl ? kMaxAcls : kMaxMaps;
    array items;
    RETURN_IF_ERROR(json::AsArray(items_element, list_path, max_items, json::View(list), &items));
    json::SeenNames names;
    size_t i = 0;
    for (element item : items) {
      Path at = list_path.At(i);
      object item_obj;
      RETURN_IF_ERROR(json::AsObject(item, at, &item_obj));
      std::string name;
      bool has_list = false;
      bool whole = false;
      StringTable keys;
      auto member = [&](std::string_view key, element v, const Path& field) -> absl::Status {
        if (key == "whole") {
          RETURN_IF_ERROR(json::AsBool(v, field, &whole));
          if (whole && has_list) {
            return json::Error(field, absl::StrCat("cannot be combined with ", json::View(inner)));
          }
          return absl::OkStatus();
        }
        if (key == "name") {
          absl::string_view text;
          RETURN_IF_ERROR(json::AsString(v, field, &text));
          RETURN_IF_ERROR(backends ? CheckIdentifier(text, field) : CheckFilePath(text, field));
          RETURN_IF_ERROR(json::CheckUnique(&names, text, i, field, "name", json::View(list)));
          name = std::string(text);
          return absl::OkStatus();
        }
        has_list = true;
        if (whole) {
          return json::Error(field, "cannot be combined with whole: true");
        }
        size_t max = backends ? kMaxServersPerBackend : acl ? kMaxAclPatterns : kMaxMapEntries;
        return ParseRemovedNames(v, field, max, json::View(inner), backends, &keys);
      };
      RETURN_IF_ERROR(json::ForEachMember(item_obj, at, {"name", inner, "whole"}, member));
      if (name.empty()) return json::Error(at.Field("name"), "required");
      // Conflicts with the upsert.
      if (backends) {
        auto up = patch->upsert.backends.find(name);
        if (up != patch->upsert.backends.end()) {
          if (whole) return Conflict(at, absl::StrCat("backend ", name));
          absl::Status conflict;
          keys.ForEach([&](absl::string_view server, absl::string_view) {
            if (conflict.ok() && up->second.servers.contains(server)) {
              conflict = Conflict(at.Field("servers"), absl::StrCat("server ", name, "/", server));
            }
          });
          RETURN_IF_ERROR(conflict);
        }
        StatePatch::BackendRemoval& removal = patch->remove_backends[name];
        removal.whole = whole;
        keys.ForEach([&](absl::string_view server, absl::string_view) {
          removal.servers.emplace_back(server);
        });
      } else {
        const auto& upserted = acl ? patch->upsert.acls : patch->upsert.maps;
        auto up = upserted.find(name);
        if (up != upserted.end()) {
          if (whole) return Conflict(at, absl::StrCat(acl ? "ACL " : "map ", name));
          absl::Status conflict;
          keys.ForEach([&](absl::string_view key, absl::string_view) {
            if (conflict.ok() && up->second.Contains(key)) {
              conflict = Conflict(at.Field(json::View(inner)),
                                  absl::StrCat(acl ? "pattern " : "key ", json::Quote(key)));
            }
          });
          RETURN_IF_ERROR(conflict);
        }
        StatePatch::TableRemoval& removal = (acl ? patch->remove_acls : patch->remove_maps)[name];
        removal.whole = whole;
        removal.keys = std::move(keys);
      }
      ++i;
    }
    return absl::OkStatus();
  };
  return json::ForEachMember(obj, path, {"backends", "maps", "acls"}, handle);
}

}  // namespace

absl::StatusOr<StatePatch> ParseStatePatch(const json::JsonInput& input, const DesiredState& held) {
  json::DocumentParser scratch;
  json::object root;
  RETURN_IF_ERROR(json::ParseRootObject(input, "state patch", &scratch, &root));
  StatePatch patch;
  absl::optional<element> upsert, remove;
  auto handle = [&](std::string_view key, element value, const Path& field) -> absl::Status {
    if (key == "version") {
      absl::string_view text;
      RETURN_IF_ERROR(json::AsString(value, field, &text));
      if (!text.empty()) RETURN_IF_ERROR(CheckVersion(text, field));
      patch.version = std::string(text);
    } else if (key == "generation" || key == "baseGeneration") {
      int64_t number = 0;
      RETURN_IF_ERROR(
          json::AsInteger(value, field, 0, std::numeric_limits<int64_t>::max(), &number));
      (key == "generation" ? patch.generation : patch.base_generation) = number;
    } else if (key == "upsert") {
      upsert = value;
    } else {
      remove = value;
    }
    return absl::OkStatus();
  };
  Path path;
  RETURN_IF_ERROR(json::ForEachMember(
      root, path, {"generation", "baseGeneration", "version", "upsert", "remove"}, handle));
  // The upsert first, whatever the member order: removals are checked against it.
  if (upsert) {
    Path at = path.Field("upsert");
    object obj;
    RETURN_IF_ERROR(json::AsObject(*upsert, at, &obj));
    StateListsOptions options;
    options.partial_servers = true;
    auto list = [&](std::string_view key, element value, const Path& field) -> absl::Status {
      return ParseStateList(json::View(key), value, field, options, &patch.upsert);
    };
    RETURN_IF_ERROR(json::ForEachMember(obj, at, {"backends", "maps", "acls"}, list));
    RETURN_IF_ERROR(CheckUpsert(*upsert, at, patch, held));
  }
  if (remove) RETURN_IF_ERROR(ParseRemove(*remove, path.Field("remove"), &patch));
  return patch;
}

Delta PatchToDelta(const StatePatch& patch, const DesiredState& held) {
  Delta delta;
  delta.version = patch.version.value_or(held.version);
  delta.generation = patch.generation ? patch.generation : held.generation;
  for (const auto& [name, backend] : SortedByName(patch.upsert.backends)) {
    BackendDelta out;
    out.name = *name;
    out.create = !held.backends.contains(*name);
    for (const auto& [server, partial] : SortedByName(backend->servers)) {
      const ServerSpec* have = held.FindServer(*name, *server);
      ServerSpec spec = have != nullptr ? *have : ServerSpec{};
      if (!partial->address.empty()) spec.address = partial->address;
      if (partial->port) spec.port = partial->port;
      if (partial->weight) spec.weight = partial->weight;
      if (partial->state) spec.state = partial->state;
      out.servers.emplace_back(*server, std::move(spec));
    }
    delta.backends.push_back(std::move(out));
  }
  for (const auto& [name, removal] : SortedByName(patch.remove_backends)) {
    if (!held.backends.contains(*name)) continue;
    BackendDelta out;
    out.name = *name;
    out.drop = removal->whole;
    for (const std::string& server : removal->servers)
      out.servers.emplace_back(server, absl::nullopt);
    delta.backends.push_back(std::move(out));
  }
  auto tables = [&](const absl::flat_hash_map<std::string, StringTable>& upserted,
                    const absl::flat_hash_map<std::string, StatePatch::TableRemoval>& removed,
                    const absl::flat_hash_map<std::string, StringTable>& have,
                    std::vector<TableDelta>* out) {
    for (const auto& [name, table] : SortedByName(upserted)) {
      TableDelta t;
      t.name = *name;
      t.create = !have.contains(*name);
      t.set = *table;
      out->push_back(std::move(t));
    }
    for (const auto& [name, removal] : SortedByName(removed)) {
      if (!have.contains(*name)) continue;
      TableDelta t;
      t.name = *name;
      t.drop = removal->whole;
      t.erase = removal->keys;
      out->push_back(std::move(t));
    }
  };
  tables(patch.upsert.maps, patch.remove_maps, held.maps, &delta.maps);
  tables(patch.upsert.acls, patch.remove_acls, held.acls, &delta.acls);
  return delta;
}

}  // namespace hawk::model

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

using json::object;
using json::Path;
using json::Reader;
using json::value;

size_t HeldServers(const DesiredState& held, absl::string_view backend) {
  auto it = held.backends.find(backend);
  return it == held.backends.end() ? 0 : it->second.servers.size();
}

// What the upsert adds to the state held must keep it within the document limits, and a new
// server needs an address. Walks the upsert part of the document again for the paths (it was
// read and validated before).
absl::Status CheckUpsert(Reader& r, value& upsert, const Path& path, const StatePatch& patch,
                         const DesiredState& held) {
  object obj;
  RETURN_IF_ERROR(r.AsObject(upsert, path, &obj));
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
  // check(name, item, path) for each item of the list `list` of the upsert.
  auto each_named = [&](std::string_view list, auto&& check) -> absl::Status {
    Path list_path = path.Field(json::View(list));
    return r.ReadMemberAgain(obj, json::View(list), [&](value& items_value) -> absl::Status {
      json::List items;  // read before, within its limit
      items.max = std::numeric_limits<size_t>::max();
      if (items_value.get_array().get(items.items) != simdjson::SUCCESS) return absl::OkStatus();
      auto item = [&](value& v, size_t, const Path& at) -> absl::Status {
        object item_obj;
        if (v.get_object().get(item_obj) != simdjson::SUCCESS) return absl::OkStatus();
        return check(r.NameMember(item_obj), item_obj, at);
      };
      return r.ForEachItem(items, list_path, item);
    });
  };
  auto check_backend = [&](absl::string_view name, object& item, const Path& at) -> absl::Status {
    const DesiredBackend& want = patch.upsert.backends.find(name)->second;
    size_t total = HeldServers(held, name);
    Path servers_path = at.Field("servers");
    auto servers_value = [&](value& servers_list) -> absl::Status {
      json::List servers;  // read before, within its limit
      servers.max = std::numeric_limits<size_t>::max();
      if (servers_list.get_array().get(servers.items) != simdjson::SUCCESS) {
        return absl::OkStatus();
      }
      auto server = [&](value& v, size_t, const Path& server_at) -> absl::Status {
        object server_obj;
        if (v.get_object().get(server_obj) != simdjson::SUCCESS) return absl::OkStatus();
        absl::string_view server_name = r.NameMember(server_obj);
        const ServerSpec& spec = want.servers.find(server_name)->second;
        if (held.FindServer(name, server_name) == nullptr) {
          ++total;
          if (spec.address.empty()) {
            return json::Error(server_at.Field("address"),
                               "required for a server hawk does not manage yet");
          }
        }
        return absl::OkStatus();
      };
      RETURN_IF_ERROR(r.ForEachItem(servers, servers_path, server));
      if (total > kMaxServersPerBackend) {
        return json::Error(servers_path, absl::StrCat("would make ", total, " servers in backend ",
                                                      name, "; at most ", kMaxServersPerBackend));
      }
      return absl::OkStatus();
    };
    return r.ReadMemberAgain(item, "servers", servers_value);
  };
  RETURN_IF_ERROR(each_named("backends", check_backend));
  auto check_tables = [&](std::string_view list, bool acl) {
    const auto& upserted = acl ? patch.upsert.acls : patch.upsert.maps;
    size_t max = acl ? kMaxAclPatterns : kMaxMapEntries;
    return each_named(list, [&](absl::string_view name, object&, const Path& at) -> absl::Status {
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

absl::Status ParseRemovedNames(Reader& r, value& v, const Path& path, size_t max,
                               absl::string_view what, bool identifiers, StringTable* out) {
  json::List items;
  RETURN_IF_ERROR(r.AsArray(v, path, max, what, &items));
  auto read = [&](value& item, size_t, const Path& at) -> absl::Status {
    absl::string_view text;
    RETURN_IF_ERROR(r.AsString(item, at, &text));
    RETURN_IF_ERROR(identifiers ? CheckIdentifier(text, at) : CheckEntryText(text, at));
    out->Set(text, "");  // naming a key twice is harmless: it is removed once
    return absl::OkStatus();
  };
  return r.ForEachItem(items, path, read);
}

absl::Status ParseRemove(Reader& r, value& remove, const Path& path, StatePatch* patch) {
  object obj;
  RETURN_IF_ERROR(r.AsObject(remove, path, &obj));
  auto handle = [&](std::string_view list, value& items_value,
                    const Path& list_path) -> absl::Status {
    bool backends = list == "backends";
    bool acl = list == "acls";
    std::string_view inner = backends ? "servers" : acl ? "patterns" : "keys";
    size_t max_items = backends ? kMaxBackends : acl ? kMaxAcls : kMaxMaps;
    json::List items;
    RETURN_IF_ERROR(r.AsArray(items_value, list_path, max_items, json::View(list), &items));
    json::SeenNames names;
    auto read = [&](value& item, size_t i, const Path& at) -> absl::Status {
      object item_obj;
      RETURN_IF_ERROR(r.AsObject(item, at, &item_obj));
      std::string name;
      bool has_list = false;
      bool whole = false;
      StringTable keys;
      auto member = [&](std::string_view key, value& v, const Path& field) -> absl::Status {
        if (key == "whole") {
          RETURN_IF_ERROR(r.AsBool(v, field, &whole));
          if (whole && has_list) {
            return json::Error(field, absl::StrCat("cannot be combined with ", json::View(inner)));
          }
          return absl::OkStatus();
        }
        if (key == "name") {
          absl::string_view text;
          RETURN_IF_ERROR(r.AsString(v, field, &text));
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
        return ParseRemovedNames(r, v, field, max, json::View(inner), backends, &keys);
      };
      RETURN_IF_ERROR(r.ForEachMember(item_obj, at, {"name", inner, "whole"}, member));
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
      return absl::OkStatus();
    };
    return r.ForEachItem(items, list_path, read);
  };
  return r.ForEachMember(obj, path, {"backends", "maps", "acls"}, handle);
}

}  // namespace

absl::StatusOr<StatePatch> ParseStatePatch(const json::JsonInput& input, const DesiredState& held) {
  StatePatch patch;
  auto read = [&](Reader& r, object& root) -> absl::Status {
    bool has_upsert = false;
    bool has_remove = false;
    auto handle = [&](std::string_view key, value& v, const Path& field) -> absl::Status {
      if (key == "version") {
        absl::string_view text;
        RETURN_IF_ERROR(r.AsString(v, field, &text));
        if (!text.empty()) RETURN_IF_ERROR(CheckVersion(text, field));
        patch.version = std::string(text);
      } else if (key == "generation" || key == "baseGeneration") {
        int64_t number = 0;
        RETURN_IF_ERROR(r.AsInteger(v, field, 0, std::numeric_limits<int64_t>::max(), &number));
        (key == "generation" ? patch.generation : patch.base_generation) = number;
      } else {  // read below, once every member is checked
        (key == "upsert" ? has_upsert : has_remove) = true;
      }
      return absl::OkStatus();
    };
    Path path;
    RETURN_IF_ERROR(r.ForEachMember(
        root, path, {"generation", "baseGeneration", "version", "upsert", "remove"}, handle));
    // The upsert first, whatever the member order: removals are checked against it.
    Path upsert_path = path.Field("upsert");
    if (has_upsert) {
      auto upsert = [&](value& v) -> absl::Status {
        object obj;
        RETURN_IF_ERROR(r.AsObject(v, upsert_path, &obj));
        StateListsOptions options;
        options.partial_servers = true;
        auto list = [&](std::string_view key, value& items, const Path& field) -> absl::Status {
          return ParseStateList(r, json::View(key), items, field, options, &patch.upsert);
        };
        return r.ForEachMember(obj, upsert_path, {"backends", "maps", "acls"}, list);
      };
      RETURN_IF_ERROR(r.ReadMemberAgain(root, "upsert", upsert));
      auto check = [&](value& v) { return CheckUpsert(r, v, upsert_path, patch, held); };
      RETURN_IF_ERROR(r.ReadMemberAgain(root, "upsert", check));
    }
    if (has_remove) {
      Path remove_path = path.Field("remove");
      auto remove = [&](value& v) { return ParseRemove(r, v, remove_path, &patch); };
      RETURN_IF_ERROR(r.ReadMemberAgain(root, "remove", remove));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(Reader::ReadObject(input, "state patch", read));
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

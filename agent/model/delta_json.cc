#include "agent/model/delta_json.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/base/json_writer.h"
#include "agent/model/cli_safety.h"
#include "agent/model/desired_json.h"
#include "agent/model/json_read.h"
#include "agent/model/server_json.h"

namespace hawk::model {
namespace {

using json::object;
using json::Path;
using json::Reader;
using json::value;

void WriteSpec(const ServerSpec& spec, base::JsonWriter* w) {
  w->BeginObject();
  WriteServerSpecFields(spec, w);
  w->EndObject();
}

void WriteTables(absl::string_view key, const std::vector<TableDelta>& tables, bool acl,
                 base::JsonWriter* w) {
  w->Key(key).BeginArray();
  for (const TableDelta& t : tables) {
    w->BeginObject();
    w->Key("name").String(t.name);
    w->Key("create").Bool(t.create);
    w->Key("drop").Bool(t.drop);
    w->Key("set").BeginArray();
    t.set.ForEach([&](absl::string_view k, absl::string_view v) {
      w->String(k);
      if (!acl) w->String(v);
    });
    w->EndArray();
    w->Key("erase").BeginArray();
    t.erase.ForEach([&](absl::string_view k, absl::string_view) { w->String(k); });
    w->EndArray();
    w->EndObject();
  }
  w->EndArray();
}

absl::Status ParseSpec(Reader& r, value& spec_value, const Path& path, ServerSpec* spec) {
  object obj;
  RETURN_IF_ERROR(r.AsObject(spec_value, path, &obj));
  auto handle = [&](std::string_view key, value& v, const Path& field) {
    return ReadServerSpecField(r, key, v, field, spec);
  };
  RETURN_IF_ERROR(r.ForEachMember(obj, path, kServerSpecFields, handle));
  if (spec->address.empty()) return json::Error(path.Field("address"), "required");
  return absl::OkStatus();
}

absl::Status ParseBackend(Reader& r, value& backend, const Path& path, BackendDelta* out) {
  object obj;
  RETURN_IF_ERROR(r.AsObject(backend, path, &obj));
  auto handle = [&](std::string_view key, value& v, const Path& field) -> absl::Status {
    if (key == "name") {
      absl::string_view text;
      RETURN_IF_ERROR(r.AsString(v, field, &text));
      RETURN_IF_ERROR(CheckIdentifier(text, field));
      out->name = std::string(text);
      return absl::OkStatus();
    }
    if (key == "create" || key == "drop") {
      return r.AsBool(v, field, key == "create" ? &out->create : &out->drop);
    }
    json::List servers;
    RETURN_IF_ERROR(r.AsArray(v, field, kMaxServersPerBackend, "servers", &servers));
    auto server = [&](value& item, size_t, const Path& at) -> absl::Status {
      object server_obj;
      RETURN_IF_ERROR(r.AsObject(item, at, &server_obj));
      std::string name;
      absl::optional<ServerSpec> spec;
      auto member = [&](std::string_view k, value& sv, const Path& f) -> absl::Status {
        if (k == "name") {
          absl::string_view text;
          RETURN_IF_ERROR(r.AsString(sv, f, &text));
          RETURN_IF_ERROR(CheckIdentifier(text, f));
          name = std::string(text);
          return absl::OkStatus();
        }
        spec.emplace();
        return ParseSpec(r, sv, f, &*spec);
      };
      RETURN_IF_ERROR(r.ForEachMember(server_obj, at, {"name", "spec"}, member));
      if (name.empty()) return json::Error(at.Field("name"), "required");
      out->servers.emplace_back(std::move(name), std::move(spec));
      return absl::OkStatus();
    };
    return r.ForEachItem(servers, field, server);
  };
  RETURN_IF_ERROR(r.ForEachMember(obj, path, {"name", "create", "drop", "servers"}, handle));
  if (out->name.empty()) return json::Error(path.Field("name"), "required");
  return absl::OkStatus();
}

absl::Status ParseStrings(Reader& r, value& strings, const Path& path, bool pairs,
                          StringTable* out) {
  json::List items;
  RETURN_IF_ERROR(r.AsArray(strings, path, 2 * kMaxMapEntries, "strings", &items));
  size_t count = 0;
  absl::string_view key;
  auto read = [&](value& item, size_t i, const Path& at) -> absl::Status {
    absl::string_view text;
    RETURN_IF_ERROR(r.AsString(item, at, &text));
    RETURN_IF_ERROR(CheckEntryText(text, at));
    if (!pairs) {
      out->Set(text, "");
    } else if (i % 2 == 0) {
      key = text;
    } else {
      out->Set(key, text);
    }
    count = i + 1;
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(r.ForEachItem(items, path, read));
  if (pairs && count % 2 != 0) return json::Error(path, "must hold key, value pairs");
  return absl::OkStatus();
}

absl::Status ParseTable(Reader& r, value& table, const Path& path, bool acl, TableDelta* out) {
  object obj;
  RETURN_IF_ERROR(r.AsObject(table, path, &obj));
  auto handle = [&](std::string_view key, value& v, const Path& field) -> absl::Status {
    if (key == "name") {
      absl::string_view text;
      RETURN_IF_ERROR(r.AsString(v, field, &text));
      RETURN_IF_ERROR(CheckFilePath(text, field));
      out->name = std::string(text);
      return absl::OkStatus();
    }
    if (key == "create" || key == "drop") {
      return r.AsBool(v, field, key == "create" ? &out->create : &out->drop);
    }
    if (key == "set") return ParseStrings(r, v, field, /*pairs=*/!acl, &out->set);
    return ParseStrings(r, v, field, /*pairs=*/false, &out->erase);
  };
  RETURN_IF_ERROR(r.ForEachMember(obj, path, {"name", "create", "drop", "set", "erase"}, handle));
  if (out->name.empty()) return json::Error(path.Field("name"), "required");
  absl::Status both;
  out->erase.ForEach([&](absl::string_view key, absl::string_view) {
    if (both.ok() && out->set.Contains(key)) {
      both = json::Error(path.Field("erase"),
                         absl::StrCat("key ", json::Quote(key), " is also in set"));
    }
  });
  return both;
}

template <typename T, typename ParseFn>
absl::Status ParseItems(Reader& r, value& list, const Path& path, size_t max, ParseFn parse,
                        std::vector<T>* out) {
  json::List items;
  RETURN_IF_ERROR(r.AsArray(list, path, max, "items", &items));
  auto read = [&](value& item, size_t, const Path& at) {
    return parse(r, item, at, &out->emplace_back());
  };
  return r.ForEachItem(items, path, read);
}

}  // namespace

std::string DeltaToJson(const Delta& delta) {
  base::JsonWriter w;
  w.BeginObject();
  w.Key("version").String(delta.version);
  if (delta.generation) w.Key("generation").String(absl::StrCat(*delta.generation));
  w.Key("backends").BeginArray();
  for (const BackendDelta& b : delta.backends) {
    w.BeginObject();
    w.Key("name").String(b.name);
    w.Key("create").Bool(b.create);
    w.Key("drop").Bool(b.drop);
    w.Key("servers").BeginArray();
    for (const auto& [server, spec] : b.servers) {
      w.BeginObject();
      w.Key("name").String(server);
      if (spec) {
        w.Key("spec");
        WriteSpec(*spec, &w);
      }
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  WriteTables("maps", delta.maps, /*acl=*/false, &w);
  WriteTables("acls", delta.acls, /*acl=*/true, &w);
  w.EndObject();
  return w.Take();
}

absl::StatusOr<Delta> ParseDeltaJson(const json::JsonInput& input) {
  Delta delta;
  auto read = [&](Reader& r, object& root) {
    auto handle = [&](std::string_view key, value& v, const Path& field) -> absl::Status {
      if (key == "version") {
        absl::string_view text;
        RETURN_IF_ERROR(r.AsString(v, field, &text));
        if (!text.empty()) RETURN_IF_ERROR(CheckVersion(text, field));
        delta.version = std::string(text);
        return absl::OkStatus();
      }
      if (key == "generation") {
        int64_t n = 0;
        RETURN_IF_ERROR(r.AsInteger(v, field, 0, std::numeric_limits<int64_t>::max(), &n));
        delta.generation = n;
        return absl::OkStatus();
      }
      if (key == "backends") {
        return ParseItems(r, v, field, kMaxBackends, ParseBackend, &delta.backends);
      }
      bool acl = key == "acls";
      auto parse_table = [acl](Reader& reader, value& e, const Path& p, TableDelta* t) {
        return ParseTable(reader, e, p, acl, t);
      };
      return ParseItems(r, v, field, acl ? kMaxAcls : kMaxMaps, parse_table,
                        acl ? &delta.acls : &delta.maps);
    };
    Path path;
    return r.ForEachMember(root, path, {"version", "generation", "backends", "maps", "acls"},
                           handle);
  };
  RETURN_IF_ERROR(Reader::ReadObject(input, "journal record", read));
  return delta;
}

}  // namespace hawk::model

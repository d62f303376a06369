#include "agent/model/desired_json.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/base/json_writer.h"
#include "agent/model/json_read.h"
#include "agent/model/server_json.h"
#include "agent/model/state_lists_json.h"

namespace hawk::model {

namespace {

// The document's `version` and `generation` members.
absl::Status ReadLabel(json::Reader& r, std::string_view key, json::value& value,
                       const json::Path& field, std::string* version,
                       absl::optional<int64_t>* generation) {
  if (key == "version") {
    absl::string_view text;
    RETURN_IF_ERROR(r.AsString(value, field, &text));
    if (text.empty()) return absl::OkStatus();  // the proto3 default
    RETURN_IF_ERROR(CheckVersion(text, field));
    *version = std::string(text);
    return absl::OkStatus();
  }
  int64_t number = 0;
  RETURN_IF_ERROR(r.AsInteger(value, field, 0, std::numeric_limits<int64_t>::max(), &number));
  *generation = number;
  return absl::OkStatus();
}

// Hands each member of the document's root to `read_list` (backends, maps, acls) or ReadLabel.
template <typename ReadList>
absl::Status ReadMembers(json::Reader& r, json::object& root, std::string* version,
                         absl::optional<int64_t>* generation, ReadList&& read_list) {
  auto handle = [&](std::string_view key, json::value& value,
                    const json::Path& field) -> absl::Status {
    if (key == "version" || key == "generation") {
      return ReadLabel(r, key, value, field, version, generation);
    }
    return read_list(json::View(key), value, field);
  };
  json::Path path;
  return r.ForEachMember(root, path, {"version", "generation", "backends", "maps", "acls"}, handle);
}

}  // namespace

absl::StatusOr<DesiredState> ParseDesiredState(const json::JsonInput& input) {
  DesiredState state;
  auto read = [&](json::Reader& r, json::object& root) {
    StateListsOptions options;
    auto read_list = [&](absl::string_view key, json::value& value, const json::Path& field) {
      return ParseStateList(r, key, value, field, options, &state);
    };
    return ReadMembers(r, root, &state.version, &state.generation, read_list);
  };
  RETURN_IF_ERROR(json::Reader::ReadObject(input, "desired state", read));
  return state;
}

absl::StatusOr<Delta> ParseDesiredStateAsDelta(const json::JsonInput& input,
                                               const DesiredState& held) {
  Delta delta;
  auto read = [&](json::Reader& r, json::object& root) -> absl::Status {
    StateListsDiff lists(r, held);  // holds views into the document: finished within the read
    auto read_list = [&](absl::string_view key, json::value& value, const json::Path& field) {
      return lists.Read(key, value, field);
    };
    RETURN_IF_ERROR(ReadMembers(r, root, &delta.version, &delta.generation, read_list));
    lists.Finish(&delta);
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(json::Reader::ReadObject(input, "desired state", read));
  return delta;
}

std::string DesiredStateToJson(const DesiredState& state) {
  base::JsonWriter w;
  w.BeginObject();
  w.Key("version").String(state.version);
  // proto3 maps int64 to a decimal string (JavaScript numbers lose precision above 2^53).
  if (state.generation) w.Key("generation").String(absl::StrCat(*state.generation));
  w.Key("backends").BeginArray();
  for (const auto& [name, backend] : SortedByName(state.backends)) {
    w.BeginObject();
    w.Key("name").String(*name);
    w.Key("servers").BeginArray();
    for (const auto& [server, spec] : SortedByName(backend->servers)) {
      w.BeginObject();
      w.Key("name").String(*server);
      WriteServerSpecFields(*spec, &w);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("maps").BeginArray();
  for (const auto& [name, table] : SortedByName(state.maps)) {
    w.BeginObject();
    w.Key("name").String(*name);
    w.Key("entries").BeginArray();
    for (const auto& [key, value] : table->Sorted()) {
      w.BeginObject();
      w.Key("key").String(key);
      w.Key("value").String(value);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("acls").BeginArray();
  for (const auto& [name, table] : SortedByName(state.acls)) {
    w.BeginObject();
    w.Key("name").String(*name);
    w.Key("patterns").BeginArray();
    for (const auto& [pattern, unused] : table->Sorted()) w.String(pattern);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace hawk::model

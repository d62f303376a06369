#include "agent/model/desired_json.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/base/json_writer.h"
#include "agent/model/json_read.h"
#include "agent/model/state_lists_json.h"

namespace hawk::model {

absl::StatusOr<DesiredState> ParseDesiredState(const json::JsonInput& input) {
  json::DocumentParser scratch;
  json::object root;
  RETURN_IF_ERROR(json::ParseRootObject(input, "desired state", &scratch, &root));
  DesiredState state;
  StateListsOptions options;
  auto handle = [&](std::string_view key, json::element value,
                    const json::Path& field) -> absl::Status {
    if (key == "version") {
      absl::string_view text;
      RETURN_IF_ERROR(json::AsString(value, field, &text));
      if (text.empty()) return absl::OkStatus();  // the proto3 default
      RETURN_IF_ERROR(CheckVersion(text, field));
      state.version = std::string(text);
      return absl::OkStatus();
    }
    if (key == "generation") {
      int64_t generation = 0;
      RETURN_IF_ERROR(
          json::AsInteger(value, field, 0, std::numeric_limits<int64_t>::max(), &generation));
      state.generation = generation;
      return absl::OkStatus();
    }
    return ParseStateList(json::View(key), value, field, options, &state);
  };
  json::Path path;
  RETURN_IF_ERROR(json::ForEachMember(
      root, path, {"version", "generation", "backends", "maps", "acls"}, handle));
  return state;
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
      w.Key("address").String(spec->address);
      if (spec->port) w.Key("port").Int(*spec->port);
      if (spec->weight) w.Key("weight").Int(*spec->weight);
      if (spec->state) w.Key("state").String(ServerStateName(*spec->state));
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

#include "agent/model/server_json.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/model/cli_safety.h"

namespace hawk::model {

absl::Status ReadServerSpecField(json::Reader& reader, std::string_view key, json::value& value,
                                 const json::Path& field, ServerSpec* spec) {
  if (key == "address") {
    absl::string_view text;
    RETURN_IF_ERROR(reader.AsString(value, field, &text));
    RETURN_IF_ERROR(CheckAddress(text, field));
    spec->address = std::string(text);
    return absl::OkStatus();
  }
  if (key == "port" || key == "weight") {
    int64_t number = 0;
    RETURN_IF_ERROR(key == "port" ? reader.AsInteger(value, field, 1, 65535, &number)
                                  : reader.AsInteger(value, field, 0, 256, &number));
    (key == "port" ? spec->port : spec->weight) = static_cast<int>(number);
    return absl::OkStatus();
  }
  // state
  json::json_type type;
  RETURN_IF_ERROR(reader.TypeOf(value, &type));
  absl::string_view name;
  absl::optional<ServerState> state;
  if (type == json::json_type::string) {
    RETURN_IF_ERROR(reader.AsString(value, field, &name));
    state = ServerStateFromName(name);
  }
  if (!state) {
    return json::Error(field, absl::StrCat("must be one of \"READY\", \"DRAIN\", \"MAINT\", got ",
                                           type == json::json_type::string ? json::Quote(name)
                                                                           : json::TypeName(type)));
  }
  spec->state = state;
  return absl::OkStatus();
}

void WriteServerSpecFields(const ServerSpec& spec, base::JsonWriter* w) {
  w->Key("address").String(spec.address);
  if (spec.port) w->Key("port").Int(*spec.port);
  if (spec.weight) w->Key("weight").Int(*spec.weight);
  if (spec.state) w->Key("state").String(ServerStateName(*spec.state));
}

}  // namespace hawk::model

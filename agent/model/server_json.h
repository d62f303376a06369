#pragma once

// The fields of a server object that carry its ServerSpec — `address`, `port`, `weight`, `state` —
// read and written in one place for every document that holds servers: the API's state
// documents (state_lists_json.h), GET /v1/state (desired_json.h) and the journal's records
// (delta_json.h). A field added to ServerSpec is added here, and each of them takes it.
// Internal to the model's JSON codecs.

#include <string_view>

#include "absl/status/status.h"
#include "agent/base/json_writer.h"
#include "agent/model/desired.h"
#include "agent/model/json_read.h"

namespace hawk::model {

// The spec's fields, as json::Reader::ForEachMember's `known` names.
inline constexpr std::string_view kServerSpecFields[] = {"address", "port", "weight", "state"};
// A server in a document's `servers` list: its name, then the spec's fields.
inline constexpr std::string_view kNamedServerFields[] = {"name", "address", "port", "weight",
                                                          "state"};

// Reads member `key` (one of kServerSpecFields) at `field` into `spec`, validated: `address` an IP
// literal or hostname a CLI word can carry, `port` 1..65535, `weight` 0..256, `state` one of
// "READY", "DRAIN", "MAINT".
absl::Status ReadServerSpecField(json::Reader& reader, std::string_view key, json::value& value,
                                 const json::Path& field, ServerSpec* spec);

// Writes the spec's fields into the object open in `w` (absent optional fields are left out).
void WriteServerSpecFields(const ServerSpec& spec, base::JsonWriter* w);

}  // namespace hawk::model

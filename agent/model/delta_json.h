#pragma once

// The journal's record format: one Delta as JSON. Written by hawk, read back at start; the
// reader still validates every name and value (cli_safety.h), so a damaged or hand-edited
// journal cannot put a byte into a CLI line that a client could not.
//
//   {"version": "v43", "generation": "43",
//    "backends": [{"name": "be_app", "create": true, "drop": false,
//                  "servers": [{"name": "SRV_1", "spec": {"address": "10.0.0.6", "port": 8080}},
//                              {"name": "SRV_2"}]}],          // no spec: no longer managed
//    "maps": [{"name": "/etc/haproxy/hosts.map", "create": false, "drop": false,
//              "set": ["b.example.com", "be_b"], "erase": ["a.example.com"]}],  // set: k, v, k, v…
//    "acls": [{"name": "/etc/haproxy/blocked.acl", "set": ["10.1.0.0/16"], "erase": []}]}
//
// Entries are written in the table's own order (no sort: a record of 100,000 entries is written
// in O(n)).

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/model/delta.h"
#include "agent/model/json_input.h"

namespace hawk::model {

std::string DeltaToJson(const Delta& delta);
// InvalidArgument naming the field on anything DeltaToJson would not write.
absl::StatusOr<Delta> ParseDeltaJson(const json::JsonInput& input);

}  // namespace hawk::model

#pragma once

// PATCH /v1/state: a delta push, in the style of delta xDS (hawk.v1.StatePatch in the proto):
//
//   {"generation": 43, "baseGeneration": 42, "version": "v43",
//    "upsert": {"backends": [{"name": "be_app", "servers": [{"name": "SRV_1", "address":
//    "10.0.0.6"}]}],
//               "maps": [{"name": "/etc/haproxy/hosts.map", "entries": [{"key": "b.example.com",
//               "value": "be_b"}]}], "acls": [{"name": "/etc/haproxy/blocked.acl", "patterns":
//               ["10.1.0.0/16"]}]},
//    "remove": {"backends": [{"name": "be_app", "servers": ["SRV_2"]}],
//               "maps": [{"name": "/etc/haproxy/hosts.map", "keys": ["a.example.com"]}],
//               "acls": [{"name": "/etc/haproxy/blocked.acl", "patterns": ["10.0.0.0/8"]}]}}
//
// `upsert` has the shape of a whole-state document and merges by key: a server's listed fields
// replace its desired fields (a server hawk does not manage yet needs an address), map entries
// are set by key, ACL patterns added; a backend, map or ACL not managed yet becomes managed (a
// map or ACL then holds exactly what is upserted: hawk replaces its content on every worker).
// `remove` names what leaves the desired state: servers hawk stops managing (they stay as they
// are), map entries and ACL patterns to delete; a backend, map or ACL named with `"whole": true`
// (and no list) leaves management whole. A missing or empty list removes nothing: proto3 printers
// omit empty lists, which must never mean "everything". Removing what is not there is a no-op
// (retries are safe). An object may not be both upserted and removed. A field of a server cannot
// be unmanaged by a PATCH (use PUT). `version` and `generation` are optional: absent, the held
// ones stay.
//
// ParseStatePatch validates in full against the state held, before anything is applied: every
// error names its field (`upsert.backends[0].servers[1].port`), and the state after the patch
// must stay within the document limits (desired_json.h).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/json_input.h"
#include "agent/model/string_table.h"

namespace hawk::model {

struct StatePatch {
  absl::optional<int64_t> generation;
  absl::optional<int64_t> base_generation;
  absl::optional<std::string> version;
  // Servers may be partial: an empty address means "not given".
  DesiredState upsert;
  struct BackendRemoval {
    bool whole = false;                // "whole": true: the backend leaves management
    std::vector<std::string> servers;  // servers hawk stops managing
  };
  struct TableRemoval {
    bool whole = false;  // "whole": true: the map or ACL leaves management
    StringTable keys;    // keys or patterns to delete (values "")
  };
  absl::flat_hash_map<std::string, BackendRemoval> remove_backends;
  absl::flat_hash_map<std::string, TableRemoval> remove_maps;
  absl::flat_hash_map<std::string, TableRemoval> remove_acls;
};

absl::StatusOr<StatePatch> ParseStatePatch(const json::JsonInput& input, const DesiredState& held);

// The resolved change: upserted servers merged into their whole specs, version and generation
// filled from `held` where the patch leaves them out. `patch` must come from ParseStatePatch
// against the same `held`.
Delta PatchToDelta(const StatePatch& patch, const DesiredState& held);

}  // namespace hawk::model

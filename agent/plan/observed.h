#pragma once

// What one worker holds of the objects hawk manages, as observed through `show servers state
// <be>`, `show map <name>` and `show acl <name>` on that worker. Plain data built from the
// parsers' output; the planner (plan.h) compares it with the desired state.

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/parse/maps.h"
#include "agent/parse/servers_state.h"

namespace hawk::plan {

struct ObservedServer {
  std::string address;  // srv_addr as HAProxy prints it (canonical inet_ntop form), "" for "-"
  int port = 0;         // srv_port
  int admin_state = 0;  // srv_admin_state: parse::kAdmin* bits
  int op_state = 0;     // srv_op_state: parse::kOp*
  int user_weight = 0;  // srv_uweight: the runtime weight `set server … weight` changes
  std::string fqdn;     // srv_fqdn, "" for "-"

  friend bool operator==(const ObservedServer&, const ObservedServer&) = default;
};

struct ObservedBackend {
  bool present = true;  // false: the worker has no such backend
  absl::flat_hash_map<std::string, ObservedServer> servers;  // by server name

  friend bool operator==(const ObservedBackend&, const ObservedBackend&) = default;
};

// `show map` prints each entry as "%p %s %s" (pointer, key, value), so a key holding a space
// cannot be told from a value holding one: {"a b" → "c"} and {"a" → "b c"} both print
// "0x… a b c". Maps are therefore compared as these joined lines, never as key/value pairs; the
// planner sees those two maps as equal (an ambiguity HAProxy leaves no way to resolve).
struct ObservedMap {
  bool present = true;             // false: this worker knows no map by that name
  std::vector<std::string> lines;  // each entry as key + " " + value, in the worker's order

  friend bool operator==(const ObservedMap&, const ObservedMap&) = default;
};

struct ObservedAcl {
  bool present = true;  // false: this worker knows no ACL by that name
  std::vector<std::string> patterns;

  friend bool operator==(const ObservedAcl&, const ObservedAcl&) = default;
};

// Keyed by the names used in the desired state. A desired object missing from these maps is
// treated as absent on the worker, so observe every desired object before planning.
struct ObservedWorker {
  absl::flat_hash_map<std::string, ObservedBackend> backends;
  absl::flat_hash_map<std::string, ObservedMap> maps;
  absl::flat_hash_map<std::string, ObservedAcl> acls;

  friend bool operator==(const ObservedWorker&, const ObservedWorker&) = default;
};

// The rows of `show servers state <be>` (one backend), keyed by server name. Every row is taken,
// whatever its be_name: pass the rows of one backend (see BackendsFromServersState for the
// whole `show servers state` table).
ObservedBackend FromServersState(const std::vector<parse::ServerStateRow>& rows);
// The rows of `show servers state` (every backend), grouped by be_name.
absl::flat_hash_map<std::string, ObservedBackend> BackendsFromServersState(
    const std::vector<parse::ServerStateRow>& rows);

// `show map <name>` entries as key + " " + value lines (see ObservedMap for why they are joined).
ObservedMap FromMapEntries(const std::vector<parse::MapEntry>& entries);
ObservedAcl FromAclEntries(const std::vector<parse::AclEntry>& entries);

// Whole replies, classified. Each returns the observed object, `present = false` when the worker
// says it has no such object, or an error when the reply says nothing about the object:
//   - a master error (written by the master itself, not the worker): NotFound for "Can't find
//     the target PID…" (the worker is gone), Unavailable for "Can't connect to the target CLI!",
//     PermissionDenied for "Permission denied";
//   - FailedPrecondition for an "Unknown command…" / help listing (too long a line, too low a
//     level);
//   - InvalidArgument for a reply that starts like the expected listing but does not parse.
//
// `show servers state <unknown>` answers "Can't find backend." (src/proxy.c
// cli_parse_show_servers, checked on 2.6.12); any other text that is not a table is read as
// "absent" too, since the command has no other error. `show map|acl <unknown>` answers
// "Unknown map identifier. Please use #<id> or <file>." (or "Unknown ACL identifier…"); an empty
// reply is an empty map.
absl::StatusOr<ObservedBackend> BackendFromReply(absl::string_view reply);
absl::StatusOr<ObservedMap> MapFromReply(absl::string_view reply);
absl::StatusOr<ObservedAcl> AclFromReply(absl::string_view reply);

}  // namespace hawk::plan

#pragma once

// What one worker holds of the objects hawk manages, as observed through `show servers state
// <be>`, `show map <name>` and `show acl <name>` on that worker. Plain data built from the
// replies (streamed: a 100,000-entry map is read without a copy per line); the planner (plan.h)
// compares it with the desired state. Observing is whole-state work: hawk does it for a worker
// it knows nothing about, after a failure, and on the resync timer, never on a push.

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/model/string_table.h"

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

// A map's or an ACL's entries. `show map` prints each entry as "%p %s %s" (pointer, key, value),
// so a key holding a space cannot be told from a value holding one: {"a b" → "c"} and
// {"a" → "b c"} both print "0x… a b c". Entries are stored split at the first space; when any
// line has more than one blank after its pointer (`ambiguous`), that split may be wrong, and the
// lines are kept whole too: the planner then compares lines and replaces the whole map when they
// differ, never planning a per-entry command from a guess.
struct ObservedTable {
  bool present = true;         // false: this worker knows no map or ACL by that name
  model::StringTable entries;  // key → value (ACL: pattern → "")
  bool duplicates = false;     // a key (or, when ambiguous, a whole line) is listed twice
  bool ambiguous = false;      // a map line with several blanks: see above
  model::StringTable lines;    // ambiguous: every line after its pointer ("key value" → "")

  friend bool operator==(const ObservedTable&, const ObservedTable&) = default;
};

// Keyed by the names used in the desired state. A desired object missing from these maps is
// treated as absent on the worker, so observe every desired object before planning.
struct ObservedWorker {
  absl::flat_hash_map<std::string, ObservedBackend> backends;
  absl::flat_hash_map<std::string, ObservedTable> maps;
  absl::flat_hash_map<std::string, ObservedTable> acls;

  friend bool operator==(const ObservedWorker&, const ObservedWorker&) = default;
};

// Whole replies, classified. Each returns the observed object, `present = false` when the worker
// says it has no such object, or an error when the reply says nothing about the object:
//   - a master error: NotFound for "Can't find the target PID…" (the worker is gone),
//     Unavailable for "Can't connect to the target CLI!", PermissionDenied for "Permission
//     denied";
//   - FailedPrecondition for an "Unknown command…" / help listing (too long a line, too low a
//     level);
//   - InvalidArgument for a reply that starts like the expected listing but does not parse.
//
// `show servers state <unknown>` answers "Can't find backend." (checked on 2.6.12); any other
// text that is not a table is read as "absent" too, since the command has no other error.
// `show map|acl <unknown>` answers "Unknown map identifier. Please use #<id> or <file>." (or
// "Unknown ACL identifier…"); an empty reply is an empty map.
absl::StatusOr<ObservedBackend> BackendFromReply(absl::string_view reply);
absl::StatusOr<ObservedTable> MapFromReply(absl::string_view reply);
absl::StatusOr<ObservedTable> AclFromReply(absl::string_view reply);

}  // namespace hawk::plan

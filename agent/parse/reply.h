#pragma once

// Classification of reply texts. HAProxy's CLI has no status codes: a mutation succeeds silently
// (a lone "\n"), succeeds with a known message, or answers an error text. Anything else from a
// mutating command is an error, never a success.
//
// 3.1+ master-level `set severity-output number|string` puts `[3]: ` / `[err]: ` in front of
// error messages and `[4]: ` / `[warning]: ` in front of warnings; the prefix is stripped before
// matching, so "[4]: port changed from …" is still a success and "[3]: No such server." is
// kNoSuchServer.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::parse {

enum class ReplyCode {
  kEmptySuccess,      // empty, or only newlines: the usual silent success
  kSuccess,           // a known success message: "IP changed from …", "port changed from …",
                      // "no need to change …", "nothing changed", "New server registered.",
                      // "Server deleted.", "Done.", "New version created: N"
  kProxyDisabled,     // "Proxy is disabled.": server commands on a leaving worker
  kNoSuchServer,      // "No such server."
  kNoSuchBackend,     // "No such backend."
  kUnknownMap,        // "Unknown map identifier. Please use #<id> or <file>."
  kUnknownAcl,        // "Unknown ACL identifier. Please use #<id> or <file>."
  kEntryNotFound,     // "entry not found.": `set map` on a key the map does not hold
  kKeyNotFound,       // "Key not found.": `del map|acl` on a key or pattern that is not there
  kServerInUse,       // "Server still has connections attached to it, cannot remove it.":
                      // `del server` while connections remain (2.6–3.4)
  kNotInMaintenance,  // "Only servers in maintenance mode can be deleted.": `del server` of a
                      // server in rotation (2.6–3.4)
  kStaticBackend,     // `add server` where the balance algorithm takes no dynamic server:
                      // "Backend must use a dynamic load balancing to support dynamic
                      // servers." (2.6–3.2), "Backend does not support dynamic servers : …"
                      // (3.4)
  kUnknownCommand,    // "Unknown command…" or a bare help listing ("The following commands are
                      // valid at this level:"), which is also how the master answers a line
                      // longer than ~15 KB
  kTargetNotFound,    // master: "Can't find the target PID matching the prefix '…'"
  kCantConnect,       // master: "Can't connect to the target CLI!"
  kPermissionDenied,  // master "Permission denied!" or worker "Permission denied"
  kOtherError,        // any other non-empty text
};

// "kNoSuchServer" → "no_such_server": for messages and metric labels.
absl::string_view ReplyCodeName(ReplyCode code);

// kEmptySuccess and kSuccess.
bool IsSuccess(ReplyCode code);

struct ClassifiedReply {
  ReplyCode code = ReplyCode::kEmptySuccess;
  std::string text;   // the reply with surrounding whitespace trimmed, severity prefix kept
  int severity = -1;  // 0–7 from a `[N]: ` or `[name]: ` prefix, -1 without one

  bool ok() const { return IsSuccess(code); }
};

// For `set server`, `set weight`, `enable/disable …`, map and ACL commands, `add/del server`,
// `wait`. A success message must be the whole reply (one line); error texts match on their
// first line. Never fails: unknown text is kOtherError.
ClassifiedReply ClassifyMutationReply(absl::string_view reply);

// The three errors the master produces itself. They are never followed by a blank line; 2.6
// then closes the connection, 2.8+ keeps it open but throws away the commands buffered after
// them. Matches only when the whole reply (trailing newlines aside) is one of them, so a worker
// reply cannot be mistaken for one: kTargetNotFound, kCantConnect or kPermissionDenied, else
// nullopt.
absl::optional<ReplyCode> ClassifyMasterError(absl::string_view reply);

// The Status of a reply that says nothing about the object a command asked for, because the
// command never reached a worker that could answer it; Ok for every other code (the caller reads
// those). The one mapping of HAProxy's CLI errors to Status codes:
//   kTargetNotFound    NotFound            the master has no such worker
//   kCantConnect       Unavailable         the master could not reach the worker
//   kPermissionDenied  PermissionDenied    the master or the worker refused the level
//   kUnknownCommand    FailedPrecondition  this HAProxy does not know the command
absl::Status ReplyCodeStatus(ReplyCode code, std::string message);

// `prepare map|acl` → "New version created: N" → N. InvalidArgument on anything else, with the
// reply quoted.
absl::StatusOr<int64_t> ParseNewVersion(absl::string_view reply);

}  // namespace hawk::parse

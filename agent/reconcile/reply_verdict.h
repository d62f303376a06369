#pragma once

// What HAProxy's reply to one planned action means for the worker (ClassifyActionReply), and
// whether a batch reached HAProxy at all (TransportFailure). Pure: no I/O, no clock.

#include <string>
#include <vector>

#include "absl/types/optional.h"
#include "agent/cli/command.h"
#include "agent/model/workers.h"
#include "agent/plan/plan.h"
#include "agent/reconcile/command_result.h"

namespace hawk::reconcile {

enum class ReplyVerdict {
  kOk,        // done (a `del` of what is not there is done too)
  kNeedsAdd,  // `set map` answered "entry not found.": send `add map`
  kFrozen,    // a server command refused with "Proxy is disabled." on a leaving worker
  kMissing,   // the worker has no such server, backend, map or ACL
  kInUse,     // `del server` refused while connections remain: the server is draining
  kRefused,   // anything else: HAProxy refused it
};

struct ActionReply {
  ReplyVerdict verdict = ReplyVerdict::kOk;
  std::string text;                          // the reply (or the error), trimmed
  absl::optional<model::StaleObject> stale;  // what stays stale because of it
  bool unexpected = false;                   // a refusal hawk has no explanation for
};

// What `result` (the reply to `command`, sent for `action`) means. `as_add`: the command is an
// `add map` (a transaction's, or the follow-up of an upsert). `leaving`: the worker is LEAVING.
// A server command a leaving worker refuses with "Proxy is disabled." freezes it (kFrozen), and
// stays stale as plan::FrozenItem, the item of the actions the planner withholds from then on.
ActionReply ClassifyActionReply(const plan::Action& action, const CommandResult& result,
                                bool as_add, bool leaving);

// Why a batch did not reach HAProxy, if it did not: the worker is gone (NotFound), the connection
// closed under it (a reload) or the deadline passed. Such an apply is retried, not reported:
// HAProxy did not refuse anything, and some commands may not have run.
absl::optional<std::string> TransportFailure(const std::vector<cli::Command>& sent,
                                             const std::vector<CommandResult>& results);

}  // namespace hawk::reconcile

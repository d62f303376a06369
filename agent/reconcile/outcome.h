#pragma once

// Pure pieces of the reconciler: what a reply to an action means, which objects stay stale on a
// worker, and how a full observation's replies become an ObservedWorker. No I/O, no clock.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/cli/client.h"
#include "agent/model/desired.h"
#include "agent/model/workers.h"
#include "agent/plan/observed.h"
#include "agent/plan/pending.h"
#include "agent/plan/plan.h"

namespace hawk::reconcile {

// The objects that stay stale on one worker, by object and field ("" for the whole object).
// Kept across incremental reconciles: an object leaves it when a later change plans it again,
// or when a full reconcile recomputes everything.
class StaleSet {
 public:
  void Add(model::StaleObject item);
  void AddAll(const std::vector<model::StaleObject>& items);
  void Clear() { by_object_.clear(); }
  bool empty() const { return by_object_.empty(); }
  // Forgets what `taken` is about to replan: changed servers, replaced or dropped tables, and the
  // changed entries of the others.
  void ForgetChanged(const plan::PendingChanges& taken);
  // Forgets everything about `object` ("backend/<b>" of a backend no longer managed, …).
  void ForgetObject(const std::string& object) { by_object_.erase(object); }
  // "backend/<b>/server/<s>" of every stale server.
  absl::flat_hash_set<std::string> Servers() const;
  bool HasServers() const;
  // Sorted by object, then field.
  std::vector<model::StaleObject> Sorted() const;
  size_t size() const;

 private:
  absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, model::StaleObject>> by_object_;
};

enum class ReplyVerdict {
  kOk,        // done (a `del` of what is not there is done too)
  kNeedsAdd,  // `set map` answered "entry not found.": send `add map`
  kFrozen,    // a server command refused with "Proxy is disabled." on a leaving worker
  kMissing,   // the worker has no such server, backend, map or ACL
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
ActionReply ClassifyActionReply(const plan::Action& action, const cli::CommandResult& result,
                                bool as_add, bool leaving);

// The stale item of a server action not sent to a frozen worker.
model::StaleObject FrozenItem(const plan::Action& action);

// Why a batch did not reach HAProxy, if it did not: the worker is gone (NotFound), the connection
// closed under it (a reload) or the deadline passed. Such an apply is retried, not reported:
// HAProxy did not refuse anything, and some commands may not have run.
absl::optional<std::string> TransportFailure(const std::vector<cli::Command>& sent,
                                             const std::vector<cli::CommandResult>& results);

// The command as an operator would type it on the worker: without the `@!<pid> ` prefix.
std::string WithoutPrefix(const cli::Command& command);

// The replies to the observation of `desired` (`show servers state <be>` per backend, `show map`
// per map, `show acl` per ACL, in the sorted order of each) as an ObservedWorker. An error when a
// reply says nothing about its object (the worker is gone, the connection closed).
absl::StatusOr<plan::ObservedWorker> ObservedFromReplies(
    const model::DesiredState& desired, const std::vector<cli::CommandResult>& results);

// Live streams (`show sess`, CLI sessions excluded) whose server is stale in `stale`.
absl::StatusOr<int64_t> CountSessionsOnStaleServers(absl::string_view show_sess,
                                                    const StaleSet& stale);

}  // namespace hawk::reconcile

#pragma once

// Pure pieces of the reconciler: what a reply to an action means, which objects stay stale on a
// worker, the commands of an observation or a table listing and what their replies mean, and a
// push's outcome on each worker. No I/O, no clock.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/cli/command.h"
#include "agent/model/desired.h"
#include "agent/model/workers.h"
#include "agent/plan/observed.h"
#include "agent/plan/pending.h"
#include "agent/plan/plan.h"

namespace hawk::reconcile {

// A command's reply or error: the same type as cli::CommandResult, named here without the
// client's header (which brings libuv), so that this file stays pure.
using CommandResult = absl::StatusOr<std::string>;

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
// A server command a leaving worker refuses with "Proxy is disabled." freezes it (kFrozen), and
// stays stale as plan::FrozenItem, the item of the actions the planner withholds from then on.
ActionReply ClassifyActionReply(const plan::Action& action, const CommandResult& result,
                                bool as_add, bool leaving);

// Why a batch did not reach HAProxy, if it did not: the worker is gone (NotFound), the connection
// closed under it (a reload) or the deadline passed. Such an apply is retried, not reported:
// HAProxy did not refuse anything, and some commands may not have run.
absl::optional<std::string> TransportFailure(const std::vector<cli::Command>& sent,
                                             const std::vector<CommandResult>& results);

// The replies to the observation of `desired` (ObservationCommands) as an ObservedWorker. A map
// or ACL is present only when the worker's listing names it, whatever its own reply says (an
// empty reply reads as an empty table). An error when a reply says nothing about its object (the
// worker is gone, the connection closed) or a listing does not parse.
absl::StatusOr<plan::ObservedWorker> ObservedFromReplies(const model::DesiredState& desired,
                                                         const std::vector<CommandResult>& results);

// The commands that observe `desired` on worker `pid` in full: `show servers state <be>` per
// backend; with maps, the listing `show map` then `show map <m>` per map; with ACLs, `show acl`
// then `show acl <a>` per ACL; each kind in sorted order (the order ObservedFromReplies reads
// them in). Names are escaped (cli::EscapeWord).
std::vector<cli::Command> ObservationCommands(const model::DesiredState& desired, int pid);

// A seed with written tables first lists the worker's maps and ACLs: `show map`, `show acl`.
std::vector<cli::Command> TableListingCommands(int pid);

// The tables of `written` (file name → entries written) that a worker read from their files: those
// its listing (the reply to `show map`, or to `show acl` when `acl`) names with the number of
// entries written. Anything else — a reply that failed, a file the configuration does not load, a
// count that differs because someone else rewrote the file — is not.
absl::flat_hash_set<std::string> TablesReadFromFiles(
    const CommandResult& listing, bool acl,
    const absl::flat_hash_map<std::string, int64_t>& written);

// Live streams (`show sess`, CLI sessions excluded) whose server is stale in `stale`.
absl::StatusOr<int64_t> CountSessionsOnStaleServers(absl::string_view show_sess,
                                                    const StaleSet& stale);

// A push's outcome, per target worker (Reconciler::WaitForPush).
enum class PushResult {
  kApplied,  // the worker holds every desired object
  kPartial,  // the reconcile finished, but some objects are stale there (see refused/stale)
  kPending,  // not finished before the deadline
};
const char* PushResultName(PushResult result);

struct WorkerOutcome {
  int pid = 0;
  model::WorkerRole role = model::WorkerRole::kUnknown;
  PushResult result = PushResult::kPending;
  std::string reason;  // kPending: why the worker has not finished (busy, unreachable, …)
  std::vector<model::Refusal> refused;
  std::vector<model::StaleObject> stale;
};

struct PushOutcome {
  std::string version;
  absl::optional<int64_t> generation;
  std::vector<WorkerOutcome> workers;
};

// The outcome of a push on one target worker. `reached`: the worker's last completed reconcile
// covers the push (its `sync` and `stale` then say how it went); otherwise the reason says why
// not yet: `sync.error` (the last reconcile failed and is retried), `busy` (one is running), or
// none started.
WorkerOutcome OutcomeOnWorker(int pid, model::WorkerRole role, bool reached, bool busy,
                              const model::WorkerSync& sync, const StaleSet& stale);

}  // namespace hawk::reconcile

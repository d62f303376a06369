#pragma once

// Reconciler: makes every live worker hold the desired state, as far as HAProxy allows, at a cost
// proportional to what changed.
//
// Ownership and threading: owns per-worker sync state and its timers, and the calls waiting for a
// push (push_waiters.h); uses (does not own) the MasterClient, the WorkerRegistry and the desired
// state (owned by the caller, which changes it and then calls Publish); loop thread only.
//
// What hawk knows of each worker decides how it is reconciled, one reconcile at a time per
// worker:
//   - a worker that appears after hawk started (a reload, whoever triggered it) started from the
//     config file: it is seeded with the whole desired state, without observing first;
//   - a worker hawk knows nothing about (present when hawk started, a target again after it was
//     not, an apply that HAProxy refused for an unexpected reason) and every worker on the resync
//     timer: observed in full (`show servers state <be>`, `show map`, `show acl`) and diffed;
//   - otherwise the worker held the desired state before the pushes since: only the objects they
//     changed are planned and sent (plan/pending.h), and the replies are trusted — no
//     observation on the hot path.
// A leaving worker that answers `Proxy is disabled.` is frozen: server commands are no longer
// sent there (the planner withholds them) and its stale servers are listed, while maps and ACLs
// keep being applied. Pushes
// coalesce: a worker busy with an older change runs again with everything pending when it
// finishes. An apply cut short (a reload closed the connection) is retried with what it carried
// merged back, planned for a worker whose map keys are uncertain.

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/base/callback_list.h"
#include "agent/base/lifetime.h"
#include "agent/cli/client.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/workers.h"
#include "agent/plan/pending.h"
#include "agent/plan/plan.h"
#include "agent/plan/written_tables.h"
#include "agent/reconcile/observation.h"
#include "agent/reconcile/preview.h"
#include "agent/reconcile/push_outcome.h"
#include "agent/reconcile/push_waiters.h"
#include "agent/reconcile/reply_verdict.h"
#include "agent/reconcile/stale_set.h"
#include "agent/registry/registry.h"
#include "agent/uv/timer.h"

namespace hawk::reconcile {

struct ReconcilerOptions {
  absl::Duration resync_interval = absl::Seconds(10);
  // A batch's deadline: this, plus kPerCommandBudget per command (a seed of 10,000 servers
  // through the 2.6 master takes seconds).
  absl::Duration batch_timeout = absl::Seconds(5);
  // false: only CURRENT workers are targets (`--workers=current`, what stats-socket based
  // controllers do); leaving workers keep whatever they had.
  bool leaving_workers = true;
  // A worker whose pending changes grow past this many objects (unreachable for long, say) is
  // observed in full instead when it comes back: memory stays bounded.
  size_t max_pending_objects = 200000;
};

// Counters for benches and metrics.
struct ReconcilerStats {
  uint64_t incremental_reconciles = 0;
  uint64_t seeds = 0;
  uint64_t observes = 0;
  uint64_t commands_sent = 0;
  uint64_t batches_via_worker_socket = 0;
  // Tables that seeds took from the files hawk wrote (TablesWritten) instead of replacing them.
  uint64_t tables_from_files = 0;
};

// One reconcile of one worker ended (AddReconcileListener).
struct ReconcileEnd {
  int pid = 0;
  uint64_t epoch = 0;  // the reconciler's number for this worker: a reused pid gets another
  model::WorkerRole role = model::WorkerRole::kUnknown;
  bool ok = false;    // false: cut short (retried); nothing below but `full` is meaningful then
  bool full = false;  // a seed or an observation: the whole state was planned, replies and all
  absl::Time listed_at = absl::InfinitePast();  // when the registry first listed the worker
  uint64_t from_seq = 0;                        // the push the worker held before …
  uint64_t to_seq = 0;                          // … and the push it holds now
  bool first_sync = false;     // the first to leave a worker born while hawk runs in sync
  bool stale_servers = false;  // some of its servers stay stale
  absl::Time finished_at = absl::InfinitePast();
};

// What the reconciler knows of one worker, for its subscribers (Reconciler::View).
struct WorkerView {
  uint64_t epoch = 0;
  model::WorkerRole role = model::WorkerRole::kUnknown;
  bool relayed = false;
  bool reconciling = false;
  const StaleSet* stale = nullptr;  // valid until the worker's state changes
};

// Which connection carries a batch for a worker: its own stats socket (--worker-socket) while that
// socket reaches it and it is CURRENT, else the master CLI (`@!<pid>`).
class WorkerRoute {
 public:
  explicit WorkerRoute(cli::MasterClient* master) : master_(master) {}
  void SetWorkerSocket(cli::MasterClient* worker_socket) { worker_socket_ = worker_socket; }
  bool Direct(int pid, model::WorkerRole role) const {
    return worker_socket_ != nullptr && role == model::WorkerRole::kCurrent &&
           worker_socket_->worker_pid() == pid;
  }
  cli::MasterClient* For(int pid, model::WorkerRole role) const {
    return Direct(pid, role) ? worker_socket_ : master_;
  }

 private:
  cli::MasterClient* master_;
  cli::MasterClient* worker_socket_ = nullptr;
};

class Reconciler {
 public:
  // `desired` outlives the reconciler; it is read, never changed, here.
  Reconciler(uv_loop_t* loop, cli::MasterClient* client, registry::WorkerRegistry* registry,
             const model::DesiredState* desired, ReconcilerOptions options,
             std::function<absl::Time()> wall_clock);
  ~Reconciler();
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  void Start();
  // The current worker's own stats socket (--worker-socket): batches for the worker it reaches
  // (cli::MasterClient::worker_pid) go there while that worker is CURRENT; the rest, and all
  // batches whenever it reaches no one, through the master.
  void SetWorkerSocket(cli::MasterClient* worker_client) { route_.SetWorkerSocket(worker_client); }
  const WorkerRoute& route() const { return route_; }

  // The desired state changed as `summary` says (it is already in `desired`). Returns the push's
  // sequence number, for WaitForPush. O(summary × target workers).
  uint64_t Publish(const model::ChangeSummary& summary);
  // The desired state was replaced in a way no summary describes (hawk started with a saved
  // state): every worker is observed in full.
  uint64_t PublishWhole();
  // The map and ACL files hawk wrote before a reload now hold these tables as they are in the
  // desired state (name → entries written). A worker that appears from now on read them when it
  // started: once `show map`/`show acl` confirm it holds that many entries, its seed sends those
  // tables only the changes made since the write instead of their whole content. The next call
  // replaces this; PublishWhole forgets it.
  void TablesWritten(absl::flat_hash_map<std::string, int64_t> maps,
                     absl::flat_hash_map<std::string, int64_t> acls);
  // Whether the last TablesWritten named this table and nothing changed it since.
  bool TableUnchangedSinceWritten(bool acl, const std::string& name) const;
  // The sequence number of the latest push (0 before any).
  uint64_t latest_seq() const { return desired_seq_; }
  // The sequence number of the latest push that changed a server or a backend (0 before any).
  uint64_t latest_server_seq() const { return server_seq_; }
  // nullptr until something was published.
  const model::DesiredState* desired() const { return active_ ? desired_ : nullptr; }

  // Calls `done` once every target worker has finished a reconcile of push `seq` (or a later
  // one), or when `timeout` passes, with the per-worker outcome. Never from inside this call.
  void WaitForPush(uint64_t seq, absl::Duration timeout, std::function<void(PushOutcome)> done);

  // Calls `done(true)` once worker `pid` has finished a reconcile of the latest desired state
  // (at once when there is none, or when `pid` is not a target), `done(false)` when `timeout`
  // passes first. Never from inside this call. The reload pre-sync uses it.
  void WaitForWorker(int pid, absl::Duration timeout, std::function<void(bool synced)> done);

  // Whether worker `pid` has finished reconciling the latest desired state (true when there is
  // none, or when `pid` is not a target).
  bool HoldsLatest(int pid) const;

  // What publishing `summary` would send to each target worker now (a dry run), by pid. The
  // desired state must already hold the change (the caller applies it, previews, and undoes it);
  // nothing is sent, merged or counted. O(change + what each worker still has pending).
  std::vector<WorkerPreview> Preview(const model::ChangeSummary& summary) const;

  // Fills each worker's `sync` from what the reconciler knows.
  void Annotate(model::WorkersReport* report) const;

  // Runs `listener` after any worker's sync state changed, until the returned handle is destroyed.
  base::Subscription AddListener(std::function<void()> listener) {
    return listeners_.Add(std::move(listener));
  }
  // Runs `listener` with each push's sequence number as it is published.
  base::Subscription AddPublishListener(std::function<void(uint64_t seq)> listener) {
    return publish_listeners_.Add(std::move(listener));
  }
  // Runs `listener` whenever a reconcile of a worker ends, finished or cut short.
  base::Subscription AddReconcileListener(std::function<void(const ReconcileEnd&)> listener) {
    return reconcile_listeners_.Add(std::move(listener));
  }
  // What the reconciler knows of worker `pid` (nullopt: nothing, it is not listed).
  absl::optional<WorkerView> View(int pid) const;

  const ReconcilerStats& stats() const { return stats_; }

 private:
  enum class Phase;
  enum class NextRun;
  struct WorkerState;
  struct Run;

  void OnWorkers(const model::WorkersReport& report, const registry::WorkerChanges& changes);
  bool IsTarget(const WorkerState& worker) const;
  // The worker's next reconcile looks at everything first (a seed stays a seed: it plans
  // everything anyway).
  static void RequireObservation(WorkerState* worker);
  // Planning options for `worker`: the HAProxy version's costs, and whether it is frozen.
  plan::PlanOptions PlanOptionsFor(const WorkerState& worker) const;
  // Starts a reconcile of `worker` when it is idle and has work; coalesces when one runs.
  void Kick(WorkerState* worker);
  std::unique_ptr<Run> NewRun(bool full) const;
  // The steps of one reconcile. Callbacks find their worker again by pid and epoch: it may be
  // gone, or its pid reused by another worker.
  void Seed(WorkerState* worker);
  void Observe(WorkerState* worker);
  void OnTablesListed(int pid, uint64_t epoch, std::vector<cli::CommandResult> results);
  void OnObserved(int pid, uint64_t epoch, std::vector<cli::CommandResult> results);
  void Apply(WorkerState* worker, plan::Plan plan);
  void OnFirstPhase(int pid, uint64_t epoch, std::vector<cli::CommandResult> results);
  void OnSecondPhase(int pid, uint64_t epoch, std::vector<cli::CommandResult> results);
  void Submit(WorkerState* worker, std::vector<cli::Command> commands,
              void (Reconciler::*then)(int, uint64_t, std::vector<cli::CommandResult>));
  // Records what the reply to `command` (sent for `action`) means on `worker`: refusals, stale
  // objects, freezing. Returns the verdict.
  ReplyVerdict Record(WorkerState* worker, const plan::Action& action, const cli::Command& command,
                      const cli::CommandResult& result, bool as_add);
  void RecordRefusal(WorkerState* worker, const plan::Action& action, std::string command,
                     std::string reply);
  // A reconcile ends: kRunning → kIdle (Finish) or kBackoff (Fail).
  void Finish(WorkerState* worker);
  void Fail(WorkerState* worker, std::string error);
  void OnRetryDue(int pid, uint64_t epoch);
  void EndReconcile(WorkerState* worker, ReconcileEnd end);
  // For the waiters: whether every target worker (only `only_pid`, when not 0) reached push
  // `seq`, and the outcome of push `seq` on each target worker, as of now.
  bool PushComplete(uint64_t seq, int only_pid) const;
  PushOutcome OutcomeFor(uint64_t seq) const;
  void Notify();
  WorkerState* Find(int pid, uint64_t epoch);
  WorkerState* FindPid(int pid);

  uv_loop_t* loop_;
  WorkerRoute route_;
  registry::WorkerRegistry* registry_;
  const model::DesiredState* desired_;
  ReconcilerOptions options_;
  std::function<absl::Time()> wall_clock_;
  bool active_ = false;  // a desired state was published
  uint64_t desired_seq_ = 0;
  uint64_t server_seq_ = 0;  // latest_server_seq()
  uint64_t next_epoch_ = 1;
  bool seen_first_report_ = false;
  absl::flat_hash_map<int, std::unique_ptr<WorkerState>> workers_;
  PushWaiters waiters_;  // checked whenever a worker finished or the worker set changed
  // What the map and ACL files hold (TablesWritten), and every change since.
  absl::optional<plan::WrittenTables> written_;
  uv::Timer resync_timer_;
  base::CallbackList<> listeners_;
  base::CallbackList<uint64_t> publish_listeners_;
  base::CallbackList<const ReconcileEnd&> reconcile_listeners_;
  base::Subscription workers_subscription_;  // to the registry's reports (Start)
  ReconcilerStats stats_;
  // Guards callbacks that outlive the reconciler (batches still in the clients' queues). Last:
  // disarmed before any other member goes.
  base::Lifetime lifetime_;
};

}  // namespace hawk::reconcile

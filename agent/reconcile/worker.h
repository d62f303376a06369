#pragma once

// Worker: one HAProxy worker as the reconciler sees it, and the steps of its reconciles — its
// phase (one reconcile at a time), what it lacks since its last one, what stays stale there,
// what it refused, and how a reconcile runs: seed, observe or incremental, then the apply's two
// phases, then its end or its retry. The Reconciler (reconciler.h) owns the workers and the state
// they share (WorkerShared), publishes pushes to them and answers for them.
//
// Threading: loop thread only. A worker's callbacks (batches in a client's queue, its retry timer)
// are guarded by its own Lifetime: a worker that is gone (exited, or its pid reused) is never
// called back.

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/base/lifetime.h"
#include "agent/birth/servers_in_config.h"
#include "agent/birth/table_files.h"
#include "agent/cli/client.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/workers.h"
#include "agent/plan/pending.h"
#include "agent/plan/plan.h"
#include "agent/plan/written_tables.h"
#include "agent/reconcile/apply_replies.h"
#include "agent/reconcile/created_servers.h"
#include "agent/reconcile/preview.h"
#include "agent/reconcile/push_outcome.h"
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
  // Tables that seeds took from the files hawk wrote (birth::TableFiles) instead of replacing them.
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

// What the reconciler knows of one worker, for its subscribers (Reconciler::View).
struct WorkerView {
  uint64_t epoch = 0;
  model::WorkerRole role = model::WorkerRole::kUnknown;
  bool relayed = false;
  bool reconciling = false;
  const StaleSet* stale = nullptr;  // valid until the worker's state changes
};

// What every worker shares: set by the Reconciler, which owns it and the workers; read by them
// (they count into `stats`).
struct WorkerShared {
  uv_loop_t* loop = nullptr;
  registry::WorkerRegistry* registry = nullptr;
  const model::DesiredState* desired = nullptr;
  ReconcilerOptions options;
  std::function<absl::Time()> wall_clock;
  WorkerRoute route{nullptr};
  bool active = false;                                        // a desired state was published
  uint64_t desired_seq = 0;                                   // the latest push
  const birth::TableFiles* table_files = nullptr;             // Reconciler::SetTableFiles
  const birth::ServersInConfig* servers_in_config = nullptr;  // Reconciler::SetServersInConfig
  ReconcilerStats stats;
  // A reconcile of a worker ended: `ended` runs after the worker's own bookkeeping, before it
  // runs again; `subscribers` after it started again (their own batches queue behind it).
  std::function<void()> ended;
  std::function<void(const ReconcileEnd&)> subscribers;
};

class Worker {
 public:
  // `born`: the worker appeared while hawk runs, so it started from the configuration file and
  // is seeded; otherwise what it holds is unknown and it is observed first.
  Worker(WorkerShared* shared, int pid, uint64_t epoch, bool born);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  int pid() const { return pid_; }
  uint64_t epoch() const { return epoch_; }
  model::WorkerRole role() const { return role_; }
  uint64_t synced_seq() const { return synced_seq_; }
  bool idle() const;
  // What the registry lists: its role, whether hawk may send it commands, and whether it is a
  // leaving worker whose grace is over (soft-stopped, its listeners closed).
  void Listed(model::WorkerRole role, bool relayed, bool grace_over);
  // The registry reported from refresh number `refresh`: a retry that waited for it may run.
  void RegistryLooked(uint64_t refresh);
  // Pushes go to targets: CURRENT workers, and LEAVING ones unless --workers=current, that hawk
  // may send commands to.
  bool IsTarget() const;

  // A push was published (already in the desired state); Kick runs it.
  void Publish(const model::ChangeSummary& summary);
  // The next reconcile looks at everything first (a seed stays a seed: it plans it all anyway).
  void RequireObservation();
  void ForgetPending() { pending_.Clear(); }
  // The desired state was replaced whole: which servers hawk created here it no longer holds.
  // O(servers created here).
  void DesiredReplaced();
  // Starts a reconcile when the worker is idle and has work; coalesces when one runs.
  void Kick();

  WorkerView View() const;
  WorkerOutcome OutcomeFor(uint64_t seq) const;
  void Annotate(model::WorkerReport* report) const;
  // What publishing `summary` would send to it now (Reconciler::Preview).
  WorkerPreview Preview(const model::ChangeSummary& summary) const;

 private:
  enum class Phase;
  enum class NextRun;
  struct Run;

  plan::PlanOptions PlanOptions() const;
  std::unique_ptr<Run> NewRun(bool full) const;
  // What a worker born now read from the table files hawk wrote (null: nothing to rely on).
  const plan::WrittenTables* BornWith() const {
    return shared_->table_files != nullptr ? shared_->table_files->born_with() : nullptr;
  }
  void Seed();
  void Observe();
  void OnTablesListed(std::vector<cli::CommandResult> results);
  void OnObserved(std::vector<cli::CommandResult> results);
  void Apply(plan::Plan plan);
  void OnFirstPhase(std::vector<cli::CommandResult> results);
  void OnSecondPhase(std::vector<cli::CommandResult> results);
  void Take(Judged judged);
  void Submit(std::vector<cli::Command> commands,
              void (Worker::*then)(std::vector<cli::CommandResult>));
  // A reconcile ends: kRunning → kIdle (Finish) or kBackoff (Fail).
  void Finish();
  void Fail(std::string error);
  void OnRetryDue();
  void End(const ReconcileEnd& end);

  WorkerShared* shared_;
  const int pid_;
  const uint64_t epoch_;  // unique per Worker: a reused pid is another worker
  model::WorkerRole role_ = model::WorkerRole::kUnknown;
  bool relayed_ = true;
  bool grace_over_ = false;
  Phase phase_;
  NextRun next_;
  bool run_again_ = false;  // kRunning: run again when this reconcile ends (a push came)
  bool uncertain_ = false;  // the last apply was cut short: map keys may differ from the summaries
  // After a failure, run again only once the registry has reported from a refresh with this
  // number or later (0: not waiting). A failure is often a reload closing the connection, and
  // the pid may then belong to another process: a retry sent before the registry looked would
  // put the old worker's changes on a new worker and count them as its own.
  uint64_t await_refresh_ = 0;
  int failures_ = 0;  // consecutive failed reconciles (the retry backs off)
  uv::Timer retry_timer_;
  plan::PendingChanges pending_;  // changes since the last reconcile started
  uint64_t synced_seq_ = 0;       // the push the last completed reconcile brought it to
  std::unique_ptr<Run> run_;      // kRunning only
  CreatedServers servers_;        // created here: the only servers hawk deletes
  // Set when drain_timer_ fires (a `del server` refused while connections remained is tried
  // again) or a delete is due at once.
  bool drain_poll_due_ = false;
  uv::Timer drain_timer_;
  StaleSet stale_;
  model::WorkerSync sync_;    // stale is filled from `stale_` when read
  std::string freeze_reply_;  // the reply that froze it
  const absl::Time listed_at_;
  bool awaiting_first_sync_;  // born while hawk runs, and never in sync yet
  base::Lifetime lifetime_;   // last: callbacks still queued find the worker gone
};

}  // namespace hawk::reconcile

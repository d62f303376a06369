#pragma once

// Reconciler: makes every live worker hold the desired state, as far as HAProxy allows.
//
// Ownership and threading: owns per-worker sync state and its timers; uses (does not own) the
// MasterClient and the WorkerRegistry; loop thread only.
//
// Per worker, one reconcile at a time: observe (`show servers state <be>`, `show map`,
// `show acl`), plan (agent/plan, pure), apply pipelined through `@!<pid>`, verify by observing
// again. A worker that appears after hawk started (a reload, whoever triggered it) is seeded
// with the whole desired state without observing first: it started from the config file, which
// may be stale. A leaving worker that answers `Proxy is disabled.` is frozen: its servers can no
// longer change, so server commands are no longer sent there and its stale servers are listed,
// while maps and ACLs keep being applied. New desired states coalesce: a worker busy with an
// older one runs again with the latest when it finishes. A periodic resync repairs drift.

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "agent/cli/client.h"
#include "agent/model/desired.h"
#include "agent/model/workers.h"
#include "agent/plan/plan.h"
#include "agent/registry/registry.h"
#include "agent/uv/timer.h"

namespace hawk::reconcile {

struct ReconcilerOptions {
  absl::Duration resync_interval = absl::Seconds(10);
  absl::Duration batch_timeout = absl::Seconds(5);
  // false: only CURRENT workers are targets (`--workers=current`, what stats-socket based
  // controllers do); leaving workers keep whatever they had.
  bool leaving_workers = true;
  // How often the live-session count on stale servers of a worker is refreshed.
  absl::Duration stale_sessions_refresh = absl::Seconds(1);
};

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
  std::vector<model::Refusal> refused;
  std::vector<model::StaleObject> stale;
};

struct PushOutcome {
  std::string version;
  absl::optional<int64_t> generation;
  std::vector<WorkerOutcome> workers;
};

class Reconciler {
 public:
  Reconciler(uv_loop_t* loop, cli::MasterClient* client, registry::WorkerRegistry* registry,
             ReconcilerOptions options, std::function<absl::Time()> wall_clock);
  ~Reconciler();
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  void Start();

  // Replaces the desired state (latest wins) and reconciles every target worker. Returns the
  // push's sequence number, for WaitForPush.
  uint64_t SetDesired(model::DesiredState desired);
  const model::DesiredState* desired() const { return desired_.get(); }

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

  // Fills each worker's `sync` from what the reconciler knows.
  void Annotate(model::WorkersReport* report) const;

  // Runs after any worker's sync state changed.
  void AddListener(std::function<void()> listener) { listeners_.push_back(std::move(listener)); }

 private:
  struct WorkerState;
  struct Waiter;

  void OnWorkers(const model::WorkersReport& report, const registry::WorkerChanges& changes);
  bool IsTarget(model::WorkerRole role) const;
  void Kick(WorkerState* worker);
  // The steps of one reconcile. Callbacks find their worker again by pid: it may be gone.
  void Observe(int pid, bool verify);
  void OnObserved(int pid, bool verify, std::vector<cli::CommandResult> results);
  void Apply(WorkerState* worker, plan::Plan plan);
  void OnFirstPhase(int pid, plan::Plan plan, std::vector<cli::Command> sent,
                    std::vector<size_t> action_of, std::vector<cli::CommandResult> results);
  void OnSecondPhase(int pid, std::vector<std::string> objects, std::vector<cli::Command> sent,
                     std::vector<cli::CommandResult> results);
  void Finish(WorkerState* worker, const plan::Plan& remaining);
  void Fail(WorkerState* worker, std::string error);
  void EndReconcile(WorkerState* worker);
  void RefreshSessions(WorkerState* worker);
  void OnSessions(int pid, std::vector<cli::CommandResult> results);
  // Classifies one reply to a mutating command; records refusals and freezing. True on success.
  bool Judge(WorkerState* worker, const std::string& object, const cli::Command& command,
             const cli::CommandResult& result);
  // Wraps a batch callback so that it does nothing once the reconciler is gone.
  cli::BatchCallback Guard(std::function<void(std::vector<cli::CommandResult>)> callback);
  void AddWaiter(uint64_t seq, int only_pid, absl::Duration timeout,
                 std::function<void(PushOutcome)> done);
  void CheckWaiters();
  PushOutcome OutcomeFor(uint64_t seq) const;
  void Notify();
  WorkerState* Find(int pid);

  uv_loop_t* loop_;
  cli::MasterClient* client_;
  registry::WorkerRegistry* registry_;
  ReconcilerOptions options_;
  std::function<absl::Time()> wall_clock_;
  std::shared_ptr<const model::DesiredState> desired_;
  uint64_t desired_seq_ = 0;
  bool seen_first_report_ = false;
  absl::flat_hash_map<int, std::unique_ptr<WorkerState>> workers_;
  std::vector<std::unique_ptr<Waiter>> waiters_;
  uv::Timer resync_timer_;
  std::vector<std::function<void()>> listeners_;
  // Guards callbacks that outlive the reconciler (batches still in the client's queue).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace hawk::reconcile

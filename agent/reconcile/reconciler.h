#pragma once

// Reconciler: makes every live worker hold the desired state, as far as HAProxy allows, at a cost
// proportional to what changed.
//
// Ownership and threading: owns the workers (worker.h: each one's phase, what it lacks, what stays
// stale, the steps of its reconciles) and the state they share, and the calls waiting for a push
// (push_waiters.h); uses (does not own) the MasterClient, the WorkerRegistry and the desired
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
#include "agent/birth/servers_in_config.h"
#include "agent/birth/table_files.h"
#include "agent/cli/client.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/workers.h"
#include "agent/reconcile/preview.h"
#include "agent/reconcile/push_outcome.h"
#include "agent/reconcile/push_waiters.h"
#include "agent/reconcile/worker.h"
#include "agent/registry/registry.h"
#include "agent/uv/timer.h"

namespace hawk::reconcile {

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
  void SetWorkerSocket(cli::MasterClient* worker_client) {
    shared_.route.SetWorkerSocket(worker_client);
  }
  const WorkerRoute& route() const { return shared_.route; }
  // The map and ACL files hawk writes before reloads (birth/table_files.h): a worker that appears
  // after a write read them when it started; once `show map`/`show acl` confirm it holds the
  // entries written, its seed sends those tables only the changes made since instead of their
  // whole content. Unset: every seed sends every table whole.
  void SetTableFiles(const birth::TableFiles* table_files) { shared_.table_files = table_files; }
  // The servers hawk wrote into the configuration file (birth/servers_in_config.h): a worker
  // holds them from its start, and hawk deletes them as it deletes those it created. Set before
  // Start.
  void SetServersInConfig(const birth::ServersInConfig* servers) {
    shared_.servers_in_config = servers;
  }

  // The desired state changed as `summary` says (it is already in `desired`). Returns the push's
  // sequence number, for WaitForPush. O(summary × target workers).
  uint64_t Publish(const model::ChangeSummary& summary);
  // The desired state was replaced in a way no summary describes (hawk started with a saved
  // state): every worker is observed in full.
  uint64_t PublishWhole();
  // The sequence number of the latest push (0 before any).
  uint64_t latest_seq() const { return shared_.desired_seq; }
  // The sequence number of the latest push that changed a server or a backend (0 before any).
  uint64_t latest_server_seq() const { return server_seq_; }
  // nullptr until something was published.
  const model::DesiredState* desired() const { return shared_.active ? shared_.desired : nullptr; }

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

  const ReconcilerStats& stats() const { return shared_.stats; }

 private:
  void OnWorkers(const model::WorkersReport& report, const registry::WorkerChanges& changes);
  // For the waiters: whether every target worker (only `only_pid`, when not 0) reached push
  // `seq`, and the outcome of push `seq` on each target worker, as of now.
  bool PushComplete(uint64_t seq, int only_pid) const;
  PushOutcome OutcomeFor(uint64_t seq) const;
  void KickAll();
  Worker* FindPid(int pid);

  WorkerShared shared_;
  uint64_t server_seq_ = 0;  // latest_server_seq()
  uint64_t next_epoch_ = 1;
  bool seen_first_report_ = false;
  absl::flat_hash_map<int, std::unique_ptr<Worker>> workers_;
  PushWaiters waiters_;  // checked whenever a worker finished or the worker set changed
  uv::Timer resync_timer_;
  base::CallbackList<> listeners_;
  base::CallbackList<uint64_t> publish_listeners_;
  base::CallbackList<const ReconcileEnd&> reconcile_listeners_;
  base::Subscription workers_subscription_;  // to the registry's reports (Start)
};

}  // namespace hawk::reconcile

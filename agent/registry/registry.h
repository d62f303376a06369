#pragma once

// WorkerRegistry keeps the per-worker report fresh.
//
// Ownership and threading: owns its poll timer; uses (does not own) the MasterClient, whose
// queue may outlive it (batches are guarded); loop thread only. Subscribers run on the loop after
// each refresh.
//
// A refresh is `show proc`, then `@!<pid> show info` for every listed worker, pipelined in one
// batch. Triggers: the master closing hawk's connection (a reload: noticed at once), the master
// becoming reachable, a periodic poll for everything else (SIGUSR2 reloads, workers exiting,
// HAProxy restarted), polled faster while a worker is leaving or starting so that its exit and
// its connection count show up promptly. Refresh requests during a refresh coalesce into one
// more refresh.

#include <uv.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "agent/base/callback_list.h"
#include "agent/base/lifetime.h"
#include "agent/cli/client.h"
#include "agent/model/workers.h"
#include "agent/parse/show_proc.h"
#include "agent/uv/timer.h"

namespace hawk::registry {

struct RegistryOptions {
  absl::Duration poll_interval = absl::Seconds(1);
  // While a worker is LEAVING (its exit and connection count show up promptly).
  absl::Duration transition_poll_interval = absl::Milliseconds(250);
  // While a worker is STARTING (3.1+: listed while it parses its configuration, unreachable until
  // it is ready): the reconciler seeds it the moment a poll finds it CURRENT.
  absl::Duration starting_poll_interval = absl::Milliseconds(20);
  absl::Duration query_timeout = absl::Seconds(5);
};

// What changed between two consecutive reports.
struct WorkerChanges {
  // A pid in both: the process that had it exited and another got it (see SameProcess).
  std::vector<int> appeared;      // pids new in this report
  std::vector<int> gone;          // pids no longer listed
  std::vector<int> role_changed;  // pids whose role differs (e.g. STARTING → CURRENT)
  bool master_changed = false;    // another master pid, or its reload counters moved
  bool any() const {
    return !appeared.empty() || !gone.empty() || !role_changed.empty() || master_changed;
  }
};

class WorkerRegistry {
 public:
  using Listener = std::function<void(const model::WorkersReport&, const WorkerChanges&)>;

  WorkerRegistry(uv_loop_t* loop, cli::MasterClient* client, RegistryOptions options,
                 std::function<absl::Time()> wall_clock);
  WorkerRegistry(const WorkerRegistry&) = delete;
  WorkerRegistry& operator=(const WorkerRegistry&) = delete;

  void Start();
  void RefreshNow();

  const model::WorkersReport& report() const { return report_; }
  // The last report, with the master's reachability as of now (the report itself only changes
  // when a poll completes).
  model::WorkersReport Snapshot() const;
  // Ready: the master CLI answers and a CURRENT worker is known. Otherwise `reason` says why.
  bool Ready(std::string* reason) const;
  // Runs `listener` after every completed refresh, with what changed (possibly nothing), until
  // the returned handle is destroyed.
  base::Subscription AddListener(Listener listener) { return listeners_.Add(std::move(listener)); }
  uint64_t refreshes() const { return refreshes_; }
  // Refreshes begun so far, and which of them produced report(): a report newer than a moment is
  // one whose refresh number is above refreshes_begun() at that moment.
  uint64_t refreshes_begun() const { return refreshes_begun_; }
  uint64_t report_refresh() const { return report_refresh_; }

 private:
  void BeginRefresh();
  void OnShowProc(std::vector<cli::CommandResult> results);
  void OnShowInfo(parse::ShowProc proc, std::vector<int> pids,
                  std::vector<cli::CommandResult> results);
  void Publish(model::WorkersReport next);
  void FailRefresh(std::string error);
  void EndRefresh();
  void SchedulePoll();

  uv_loop_t* loop_;
  cli::MasterClient* client_;
  RegistryOptions options_;
  std::function<absl::Time()> wall_clock_;
  uv::Timer poll_timer_;
  model::WorkersReport report_;
  bool have_report_ = false;
  uint64_t refreshes_begun_ = 0;
  uint64_t report_refresh_ = 0;
  bool refreshing_ = false;
  bool again_ = false;
  // The last refresh lost answers behind a `Can't find the target PID`: poll again at the
  // STARTING interval.
  bool retry_soon_ = false;
  bool last_refresh_ok_ = false;
  uint64_t refreshes_ = 0;
  base::CallbackList<const model::WorkersReport&, const WorkerChanges&> listeners_;
  // To the client's lost and reachable connections (Start).
  base::Subscription connection_lost_;
  base::Subscription reachable_;
  // Guards the batches it submits, which may outlive it in the client's queue. Last: disarmed
  // before any other member goes.
  base::Lifetime lifetime_;
};

}  // namespace hawk::registry

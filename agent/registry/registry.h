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
//
// Relays (registry/relay_policy.h): after each `show proc` the registry tells the client which
// workers are listed and until when each may be sent commands through the master, asks `show
// info` only of those it may, and reports the others with why (`not_relayed`). When the master
// closes a connection right after relaying to a worker, the next listing decides: the master's
// reload counter moved (a reload closed it) — nothing to do; the worker is gone — nothing to do;
// otherwise it is exiting, is sent nothing more, and on HAProxy before 3.0 the master has kept
// that session's slot: counted in `slots_lost` (and against the client's connections) until the
// master re-executes. With --worker-socket, the current worker's `show info` goes there.

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
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
  // The `grace` of the configuration file HAProxy starts workers from (nullopt: unknown), asked
  // once for each worker when it is first listed. Without a source every grace is unknown.
  void SetGraceSource(std::function<absl::optional<absl::Duration>()> source) {
    grace_source_ = std::move(source);
  }
  // --worker-socket: the `show info` of the worker this client reaches goes there.
  void SetWorkerSocket(cli::MasterClient* worker_client) { worker_client_ = worker_client; }

  const model::WorkersReport& report() const { return report_; }
  // The last report, with the master's reachability as of now (the report itself only changes
  // when a poll completes).
  model::WorkersReport Snapshot() const;
  // Ready: the master CLI answers, a CURRENT worker is known, and not every connection hawk may
  // open is held waiting for a worker's reply. Otherwise false, with a reason code (safe to show
  // anyone: MASTER_UNREACHABLE, WORKER_POLL_FAILED, NO_CURRENT_WORKER, MASTER_CONNECTIONS_HELD)
  // and the detail (names sockets, quotes the master's errors: for authenticated readers). Ready
  // with master CLI slots lost (slots_lost()): true, with the detail saying so.
  bool Ready(std::string* code, std::string* detail) const;
  // Slots the master keeps for sessions it closed on hawk (see the file comment).
  int slots_lost() const { return slots_lost_; }
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
  // The master closed a connection right after relaying a command to `pid`.
  void OnRelayClosed(int pid);
  // Sets each listed worker's relay window in the client, and records in not_relayed_ those it
  // may not be sent anything now. Returns the pids `show info` may be asked of.
  std::vector<int> ApplyRelayWindows(const parse::ShowProc& proc);
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
  // To the client's lost and reachable connections, and its relay closes (Start).
  base::Subscription connection_lost_;
  base::Subscription reachable_;
  base::Subscription relay_closed_;
  base::Subscription refused_;
  cli::MasterClient* worker_client_ = nullptr;  // --worker-socket
  std::function<absl::optional<absl::Duration>()> grace_source_;
  // The grace of the configuration each listed worker started from, read when it was first listed.
  absl::flat_hash_map<int, absl::optional<absl::Duration>> grace_of_;
  // A relay to the pid ended in a close by the master; `refresh` is refreshes_begun_ then (only a
  // listing asked later decides), `master_pid`/`master_reloads` the master as last seen.
  struct Suspect {
    uint64_t refresh = 0;
    int master_pid = 0;
    int master_reloads = 0;
  };
  absl::flat_hash_map<int, Suspect> suspects_;
  // Workers found exiting that way: sent nothing more while listed. Why, per pid.
  absl::flat_hash_map<int, std::string> exiting_;
  // Listed workers that may not be sent anything now (relay window closed): why, per pid.
  absl::flat_hash_map<int, std::string> not_relayed_;
  // The next moment a relay window closes (InfiniteFuture: none): a poll then updates the report.
  absl::Time next_window_close_ = absl::InfiniteFuture();
  // When the registry asked for the listing under way, and for the last one that succeeded (by
  // which master, at which reload count).
  absl::Time refresh_asked_at_ = absl::InfinitePast();
  absl::Time listing_asked_at_ = absl::InfinitePast();
  int listing_master_pid_ = 0;
  int listing_master_reloads_ = 0;
  // When the master closed hawk's connections, and refused connects, since the last listing was
  // asked (oldest first, at most kMaxEvents each).
  std::vector<absl::Time> closes_;
  std::vector<absl::Time> refusals_;
  // pid → a moment before the reload that started that worker signalled the workers before it
  // (relay_policy.h).
  absl::flat_hash_map<int, absl::Time> signalled_after_;
  int slots_lost_ = 0;
  int lost_master_pid_ = 0;  // the master the lost slots are counted for (a re-exec frees them)
  int lost_master_reloads_ = 0;
  // Guards the batches it submits, which may outlive it in the client's queue. Last: disarmed
  // before any other member goes.
  base::Lifetime lifetime_;
};

}  // namespace hawk::registry

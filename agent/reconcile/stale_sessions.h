#pragma once

// StaleSessions: how many live streams each worker still serves on its stale servers (`show
// sess`), for the report's sessionsOnStaleServers — counted when a reconcile leaves a worker with
// stale servers, and again at most every `refresh` while any stay. A subscriber of the
// reconciler's reconcile events and of the registry's reports; loop thread only.

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "agent/base/callback_list.h"
#include "agent/base/lifetime.h"
#include "agent/cli/client.h"
#include "agent/model/workers.h"
#include "agent/reconcile/reconciler.h"
#include "agent/registry/registry.h"

namespace hawk::reconcile {

struct StaleSessionsOptions {
  absl::Duration refresh = absl::Seconds(1);
  absl::Duration batch_timeout = absl::Seconds(5);
};

class StaleSessions {
 public:
  // Subscribes to both; `reconciler` and `registry` outlive this object.
  StaleSessions(Reconciler* reconciler, registry::WorkerRegistry* registry,
                StaleSessionsOptions options, std::function<absl::Time()> wall_clock);
  StaleSessions(const StaleSessions&) = delete;
  StaleSessions& operator=(const StaleSessions&) = delete;

  // Fills each worker's sync.sessions_on_stale_servers (after Reconciler::Annotate).
  void Annotate(model::WorkersReport* report) const;
  // Runs `listener` whenever a count changed.
  base::Subscription AddListener(std::function<void()> listener) {
    return listeners_.Add(std::move(listener));
  }

 private:
  struct Count {
    uint64_t epoch = 0;   // the reconciler's: a reused pid is another worker
    bool asking = false;  // a `show sess` is in flight
    absl::Time at = absl::InfinitePast();
    int64_t sessions = 0;
  };

  void OnReconciled(const ReconcileEnd& end);
  void OnWorkers(const model::WorkersReport& report);
  void Ask(int pid, const WorkerView& worker);
  void OnReply(int pid, uint64_t epoch, std::vector<cli::CommandResult> results);
  void Set(Count* count, int64_t sessions);

  const Reconciler* reconciler_;
  StaleSessionsOptions options_;
  std::function<absl::Time()> wall_clock_;
  absl::flat_hash_map<int, Count> counts_;  // by pid
  base::CallbackList<> listeners_;
  base::Subscription reconcile_subscription_;
  base::Subscription workers_subscription_;
  base::Lifetime lifetime_;  // last: replies still queued in a client find it gone
};

}  // namespace hawk::reconcile

#pragma once

// PushLatency: how long pushes take to reach the workers, and new workers to be seeded — the
// histograms behind hawk_push_applied_seconds and hawk_worker_seed_seconds. A subscriber of the
// reconciler's publish and reconcile events; loop thread only.

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>

#include "absl/time/time.h"
#include "agent/base/callback_list.h"
#include "agent/metrics/exposition.h"
#include "agent/reconcile/reconciler.h"

namespace hawk::reconcile {

class PushLatency {
 public:
  // Subscribes to `reconciler`, which must outlive this object's subscriptions (it does when
  // this is destroyed first, or when the reconciler goes first: see base::Subscription).
  PushLatency(Reconciler* reconciler, std::function<absl::Time()> wall_clock);

  // From a push's Publish to each target worker finishing a reconcile that covers it (pushes
  // made after the worker appeared), by the worker's role then.
  const metrics::Histogram& applied_current() const { return applied_current_; }
  const metrics::Histogram& applied_leaving() const { return applied_leaving_; }
  // From a new worker being listed to its first reconcile that leaves it in sync.
  const metrics::Histogram& seed() const { return seed_; }

 private:
  void OnPublished(uint64_t seq);
  void OnReconciled(const ReconcileEnd& end);

  std::function<absl::Time()> wall_clock_;
  // When each recent push was published, oldest first, consecutive sequence numbers.
  std::deque<std::pair<uint64_t, absl::Time>> published_;
  metrics::Histogram applied_current_{metrics::LatencyBucketsSeconds()};
  metrics::Histogram applied_leaving_{metrics::LatencyBucketsSeconds()};
  metrics::Histogram seed_{metrics::LatencyBucketsSeconds()};
  base::Subscription publish_subscription_;
  base::Subscription reconcile_subscription_;
};

}  // namespace hawk::reconcile

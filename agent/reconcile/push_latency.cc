#include "agent/reconcile/push_latency.h"

#include <algorithm>

namespace hawk::reconcile {
namespace {

// Pushes whose publish time is remembered: a worker that takes longer than this many pushes to
// catch up is timed for the latest ones only.
constexpr size_t kRememberedPushes = 4096;

}  // namespace

PushLatency::PushLatency(Reconciler* reconciler, std::function<absl::Time()> wall_clock)
    : wall_clock_(std::move(wall_clock)),
      publish_subscription_(
          reconciler->AddPublishListener([this](uint64_t seq) { OnPublished(seq); })),
      reconcile_subscription_(reconciler->AddReconcileListener(
          [this](const ReconcileEnd& end) { OnReconciled(end); })) {}

void PushLatency::OnPublished(uint64_t seq) {
  published_.emplace_back(seq, wall_clock_());
  while (published_.size() > kRememberedPushes) published_.pop_front();
}

void PushLatency::OnReconciled(const ReconcileEnd& end) {
  if (!end.ok) return;
  absl::Time now = end.finished_at;
  if (end.first_sync) seed_.Observe(absl::ToDoubleSeconds(now - end.listed_at));
  metrics::Histogram* applied = nullptr;
  if (end.role == model::WorkerRole::kCurrent) applied = &applied_current_;
  if (end.role == model::WorkerRole::kLeaving) applied = &applied_leaving_;
  if (applied == nullptr || published_.empty() || end.to_seq <= end.from_seq) return;
  // The pushes in (from_seq, to_seq] still remembered.
  uint64_t first = published_.front().first;
  for (uint64_t seq = std::max(end.from_seq + 1, first); seq <= end.to_seq; ++seq) {
    size_t index = seq - first;
    if (index >= published_.size()) break;
    absl::Time published = published_[index].second;
    if (published < end.listed_at) continue;  // before the worker existed: its seed's time
    applied->Observe(absl::ToDoubleSeconds(now - published));
  }
}

}  // namespace hawk::reconcile

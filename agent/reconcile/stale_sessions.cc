#include "agent/reconcile/stale_sessions.h"

#include <utility>

#include "absl/container/flat_hash_set.h"

namespace hawk::reconcile {

StaleSessions::StaleSessions(Reconciler* reconciler, registry::WorkerRegistry* registry,
                             StaleSessionsOptions options, std::function<absl::Time()> wall_clock)
    : reconciler_(reconciler),
      options_(options),
      wall_clock_(std::move(wall_clock)),
      reconcile_subscription_(
          reconciler->AddReconcileListener([this](const ReconcileEnd& end) { OnReconciled(end); })),
      workers_subscription_(
          registry->AddListener([this](const model::WorkersReport& report,
                                       const registry::WorkerChanges&) { OnWorkers(report); })) {}

void StaleSessions::OnReconciled(const ReconcileEnd& end) {
  if (!end.ok) return;
  absl::optional<WorkerView> worker = reconciler_->View(end.pid);
  if (!worker.has_value() || worker->epoch != end.epoch) return;
  Count& count = counts_[end.pid];
  if (count.epoch != end.epoch) count = Count{end.epoch};
  if (!end.stale_servers) {
    Set(&count, 0);
    return;
  }
  // Independent of the reconcile that may have started since.
  Ask(end.pid, *worker);
}

void StaleSessions::OnWorkers(const model::WorkersReport& report) {
  absl::Time now = wall_clock_();
  absl::flat_hash_set<int> listed;
  for (const model::WorkerReport& w : report.workers) {
    absl::optional<WorkerView> worker = reconciler_->View(w.pid);
    if (!worker.has_value()) continue;
    listed.insert(w.pid);
    Count& count = counts_[w.pid];
    if (count.epoch != worker->epoch) count = Count{worker->epoch};
    // A reconcile in progress asks when it ends.
    if (!worker->reconciling && worker->stale->HasServers() && now - count.at >= options_.refresh) {
      Ask(w.pid, *worker);
    }
  }
  absl::erase_if(counts_, [&](const auto& entry) { return !listed.contains(entry.first); });
}

void StaleSessions::Ask(int pid, const WorkerView& worker) {
  Count& count = counts_[pid];
  if (count.asking || !worker.relayed) return;
  count.asking = true;
  uint64_t epoch = worker.epoch;
  auto done = lifetime_.Guard([this, pid, epoch](std::vector<cli::CommandResult> results) {
    OnReply(pid, epoch, std::move(results));
  });
  reconciler_->route()
      .For(pid, worker.role)
      ->Submit({cli::Command::ForWorker(pid, "show sess")}, std::move(done),
               options_.batch_timeout);
}

void StaleSessions::OnReply(int pid, uint64_t epoch, std::vector<cli::CommandResult> results) {
  auto it = counts_.find(pid);
  if (it == counts_.end() || it->second.epoch != epoch) return;
  Count& count = it->second;
  count.asking = false;
  count.at = wall_clock_();
  absl::optional<WorkerView> worker = reconciler_->View(pid);
  if (!results[0].ok() || !worker.has_value() || worker->epoch != epoch) return;
  absl::StatusOr<int64_t> sessions = CountSessionsOnStaleServers(*results[0], *worker->stale);
  if (sessions.ok()) Set(&count, *sessions);
}

void StaleSessions::Set(Count* count, int64_t sessions) {
  if (count->sessions == sessions) return;
  count->sessions = sessions;
  listeners_.Notify();
}

void StaleSessions::Annotate(model::WorkersReport* report) const {
  for (model::WorkerReport& w : report->workers) {
    auto it = counts_.find(w.pid);
    if (it != counts_.end()) w.sync.sessions_on_stale_servers = it->second.sessions;
  }
}

}  // namespace hawk::reconcile

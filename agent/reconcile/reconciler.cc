#include "agent/reconcile/reconciler.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"

namespace hawk::reconcile {

Reconciler::Reconciler(uv_loop_t* loop, cli::MasterClient* client,
                       registry::WorkerRegistry* registry, const model::DesiredState* desired,
                       ReconcilerOptions options, std::function<absl::Time()> wall_clock)
    : waiters_(
          loop, [this](uint64_t seq, int only_pid) { return PushComplete(seq, only_pid); },
          [this](uint64_t seq) { return OutcomeFor(seq); }),
      resync_timer_(loop) {
  shared_.loop = loop;
  shared_.registry = registry;
  shared_.desired = desired;
  shared_.options = options;
  shared_.wall_clock = std::move(wall_clock);
  shared_.route = WorkerRoute(client);
  shared_.ended = [this] {
    listeners_.Notify();
    waiters_.Check();
  };
  shared_.subscribers = [this](const ReconcileEnd& end) { reconcile_listeners_.Notify(end); };
}

// The workers go first: their callbacks and timers die with them.
Reconciler::~Reconciler() { workers_.clear(); }

void Reconciler::Start() {
  workers_subscription_ = shared_.registry->AddListener(
      [this](const model::WorkersReport& report, const registry::WorkerChanges& changes) {
        OnWorkers(report, changes);
      });
  resync_timer_.StartRepeating(shared_.options.resync_interval, shared_.options.resync_interval,
                               [this] {
                                 // Drift repair: someone may have changed a worker behind hawk's
                                 // back.
                                 for (auto& [pid, worker] : workers_) worker->RequireObservation();
                                 KickAll();
                               });
}

Worker* Reconciler::FindPid(int pid) {
  auto it = workers_.find(pid);
  return it == workers_.end() ? nullptr : it->second.get();
}

absl::optional<WorkerView> Reconciler::View(int pid) const {
  auto it = workers_.find(pid);
  if (it == workers_.end()) return absl::nullopt;
  return it->second->View();
}

void Reconciler::KickAll() {
  // A kick may end a reconcile at once and run subscribers: walk a snapshot of the pids.
  std::vector<int> pids;
  pids.reserve(workers_.size());
  for (const auto& [pid, worker] : workers_) pids.push_back(pid);
  for (int pid : pids) {
    if (Worker* worker = FindPid(pid)) worker->Kick();
  }
}

uint64_t Reconciler::Publish(const model::ChangeSummary& summary) {
  if (!shared_.active) {
    // The first state: every server hawk wrote into the configuration that it leaves out goes.
    shared_.active = true;
    for (auto& [pid, worker] : workers_) worker->DesiredReplaced();
  }
  uint64_t seq = ++shared_.desired_seq;
  if (!summary.servers.empty() || !summary.backends_created.empty() ||
      !summary.backends_dropped.empty()) {
    server_seq_ = seq;
  }
  publish_listeners_.Notify(seq);
  for (auto& [pid, worker] : workers_) worker->Publish(summary);
  KickAll();
  listeners_.Notify();
  return seq;
}

uint64_t Reconciler::PublishWhole() {
  shared_.active = true;
  uint64_t seq = ++shared_.desired_seq;
  server_seq_ = seq;
  publish_listeners_.Notify(seq);
  for (auto& [pid, worker] : workers_) {
    worker->RequireObservation();
    worker->ForgetPending();
    worker->DesiredReplaced();
  }
  KickAll();
  listeners_.Notify();
  return seq;
}

void Reconciler::OnWorkers(const model::WorkersReport& report,
                           const registry::WorkerChanges& changes) {
  bool first = !seen_first_report_;
  seen_first_report_ = true;
  auto in = [](const std::vector<int>& pids, int pid) {
    return std::find(pids.begin(), pids.end(), pid) != pids.end();
  };
  absl::flat_hash_set<int> listed;
  for (const model::WorkerReport& w : report.workers) {
    listed.insert(w.pid);
    Worker* worker = FindPid(w.pid);
    if (worker != nullptr && in(changes.gone, w.pid)) {
      // Listed again, but by another process (registry::SameProcess): a new worker, a new epoch.
      workers_.erase(w.pid);  // its callbacks in flight find it gone
      worker = nullptr;
    }
    if (worker == nullptr) {
      // Workers present when hawk starts hold unknown state: observe them. A worker that
      // appears later was just started from the config file: seed it without observing.
      bool born = !first && in(changes.appeared, w.pid);
      auto fresh = std::make_unique<Worker>(&shared_, w.pid, next_epoch_++, born);
      worker = fresh.get();
      workers_.emplace(w.pid, std::move(fresh));
    } else {
      worker->RegistryLooked(shared_.registry->report_refresh());
    }
    // A soft-stopped worker with only the master's socketpair left has closed its listeners: its
    // grace is over, and its proxies stop (`Proxy is disabled.`) if they have not yet.
    bool grace_over = w.role == model::WorkerRole::kLeaving && w.listeners >= 0 && w.listeners <= 1;
    worker->Listed(w.role, w.not_relayed.empty(), grace_over);
  }
  absl::erase_if(workers_, [&](const auto& entry) { return !listed.contains(entry.first); });
  std::vector<int> behind;
  for (const auto& [pid, worker] : workers_) {
    if (worker->idle() && worker->synced_seq() < shared_.desired_seq) behind.push_back(pid);
  }
  for (int pid : behind) {
    if (Worker* worker = FindPid(pid)) worker->Kick();
  }
  waiters_.Check();
}

void Reconciler::WaitForPush(uint64_t seq, absl::Duration timeout,
                             std::function<void(PushOutcome)> done) {
  waiters_.Add(seq, /*only_pid=*/0, timeout, std::move(done));
}

void Reconciler::WaitForWorker(int pid, absl::Duration timeout,
                               std::function<void(bool synced)> done) {
  waiters_.Add(shared_.desired_seq, pid, timeout,
               [pid, done = std::move(done)](PushOutcome outcome) {
                 for (const WorkerOutcome& worker : outcome.workers) {
                   if (worker.pid == pid) {
                     done(worker.result != PushResult::kPending);
                     return;
                   }
                 }
                 done(true);  // not a target: nothing to wait for
               });
}

bool Reconciler::HoldsLatest(int pid) const {
  auto it = workers_.find(pid);
  if (it == workers_.end() || !it->second->IsTarget()) return true;
  return it->second->synced_seq() >= shared_.desired_seq;
}

bool Reconciler::PushComplete(uint64_t seq, int only_pid) const {
  return std::all_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
    const Worker& w = *entry.second;
    if (only_pid != 0 && w.pid() != only_pid) return true;
    return !w.IsTarget() || w.synced_seq() >= seq;
  });
}

PushOutcome Reconciler::OutcomeFor(uint64_t seq) const {
  PushOutcome outcome;
  if (shared_.active) {
    outcome.version = shared_.desired->version;
    outcome.generation = shared_.desired->generation;
  }
  for (const model::WorkerReport& w : shared_.registry->report().workers) {
    auto it = workers_.find(w.pid);
    if (it == workers_.end() || !it->second->IsTarget()) continue;
    outcome.workers.push_back(it->second->OutcomeFor(seq));
  }
  return outcome;
}

void Reconciler::Annotate(model::WorkersReport* report) const {
  for (model::WorkerReport& w : report->workers) {
    auto it = workers_.find(w.pid);
    if (it != workers_.end()) it->second->Annotate(&w);
  }
}

std::vector<WorkerPreview> Reconciler::Preview(const model::ChangeSummary& summary) const {
  std::vector<WorkerPreview> out;
  for (const auto& [pid, worker] : workers_) {
    if (worker->IsTarget()) out.push_back(worker->Preview(summary));
  }
  std::sort(out.begin(), out.end(),
            [](const WorkerPreview& a, const WorkerPreview& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace hawk::reconcile

#include "agent/registry/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/base/log.h"
#include "agent/registry/classify.h"

namespace hawk::registry {
namespace {
uint64_t ToMs(absl::Duration d) { return static_cast<uint64_t>(absl::ToInt64Milliseconds(d)); }

WorkerChanges Diff(const model::WorkersReport& before, const model::WorkersReport& after) {
  WorkerChanges changes;
  for (const model::WorkerReport& w : after.workers) {
    const model::WorkerReport* old = before.Find(w.pid);
    if (old == nullptr) {
      changes.appeared.push_back(w.pid);
    } else if (!SameProcess(before.master.pid, *old, after.master.pid, w.reloads,
                            w.uptime_seconds)) {
      // The pid belongs to another process now: the old worker is gone, a new one appeared.
      changes.gone.push_back(w.pid);
      changes.appeared.push_back(w.pid);
    } else if (old->role != w.role) {
      changes.role_changed.push_back(w.pid);
    }
  }
  for (const model::WorkerReport& w : before.workers) {
    if (after.Find(w.pid) == nullptr) changes.gone.push_back(w.pid);
  }
  changes.master_changed = before.master.pid != after.master.pid ||
                           before.master.reloads != after.master.reloads ||
                           before.master.failed_reloads != after.master.failed_reloads;
  return changes;
}
}  // namespace

WorkerRegistry::WorkerRegistry(uv_loop_t* loop, cli::MasterClient* client, RegistryOptions options,
                               std::function<absl::Time()> wall_clock)
    : loop_(loop),
      client_(client),
      options_(options),
      wall_clock_(std::move(wall_clock)),
      poll_timer_(loop) {
  report_.master_error = "master CLI not polled yet";
}

void WorkerRegistry::Start() {
  connection_lost_ = client_->AddConnectionLostListener([this] {
    // A reload closes every master connection: look again as soon as the master is back.
    RefreshNow();
  });
  reachable_ = client_->AddReachableListener([this] { RefreshNow(); });
  RefreshNow();
}

void WorkerRegistry::RefreshNow() {
  if (refreshing_) {
    again_ = true;
    return;
  }
  BeginRefresh();
}

model::WorkersReport WorkerRegistry::Snapshot() const {
  model::WorkersReport snapshot = report_;
  snapshot.master_reachable = client_->reachable();
  if (!snapshot.master_reachable) {
    snapshot.master_error = std::string(client_->last_error().message());
  } else if (last_refresh_ok_) {
    snapshot.master_error.clear();
  }
  return snapshot;
}

bool WorkerRegistry::Ready(std::string* reason) const {
  if (!client_->reachable()) {
    *reason = absl::StrCat("master CLI unreachable: ", client_->last_error().message());
    return false;
  }
  if (!last_refresh_ok_) {
    *reason = absl::StrCat("last worker poll failed: ", report_.master_error);
    return false;
  }
  if (report_.Current() == nullptr) {
    *reason = "no CURRENT worker known (every listed worker is leaving, starting or unknown)";
    return false;
  }
  return true;
}

void WorkerRegistry::BeginRefresh() {
  ++refreshes_begun_;
  refreshing_ = true;
  again_ = false;
  poll_timer_.Stop();
  // Guarded, as every batch here: it may still be queued in the client when the registry is gone.
  client_->Submit({cli::Command::Master("show proc")},
                  lifetime_.Guard([this](std::vector<cli::CommandResult> results) {
                    OnShowProc(std::move(results));
                  }),
                  options_.query_timeout);
}

void WorkerRegistry::OnShowProc(std::vector<cli::CommandResult> results) {
  if (!results[0].ok()) {
    FailRefresh(std::string(results[0].status().message()));
    return;
  }
  absl::StatusOr<parse::ShowProc> proc = parse::ParseShowProc(*results[0]);
  if (!proc.ok()) {
    FailRefresh(std::string(proc.status().message()));
    return;
  }
  std::vector<int> pids;
  std::vector<cli::Command> commands;
  // Current-section workers first: a leaving worker is the one likely to exit between the two
  // queries, and the master drops what follows an unknown pid.
  std::vector<parse::ProcessEntry> ordered = proc->workers;
  std::stable_partition(ordered.begin(), ordered.end(),
                        [](const parse::ProcessEntry& e) { return !e.listed_as_old; });
  for (const parse::ProcessEntry& entry : ordered) {
    pids.push_back(entry.pid);
    commands.push_back(cli::ForWorker(entry.pid, "show info"));
  }
  if (commands.empty()) {
    OnShowInfo(*std::move(proc), {}, {});
    return;
  }
  client_->Submit(std::move(commands),
                  lifetime_.Guard([this, proc = *std::move(proc),
                                   pids](std::vector<cli::CommandResult> r) mutable {
                    OnShowInfo(std::move(proc), std::move(pids), std::move(r));
                  }),
                  options_.query_timeout);
}

void WorkerRegistry::OnShowInfo(parse::ShowProc proc, std::vector<int> pids,
                                std::vector<cli::CommandResult> results) {
  absl::flat_hash_map<int, absl::StatusOr<parse::ShowInfo>> infos;
  bool retry = false;
  // `Can't find the target PID` for a listed worker: one that is still parsing its configuration
  // (3.1+) or has just exited. The master then drops what was queued behind it, and asking again
  // at once would fail the same way until the worker is ready: ask again soon, not at once.
  bool target_missing = std::any_of(results.begin(), results.end(),
                                    [](const auto& r) { return absl::IsNotFound(r.status()); });
  for (size_t i = 0; i < pids.size(); ++i) {
    if (!results[i].ok()) {
      infos.emplace(pids[i], results[i].status());
      // Dropped behind another worker's error, or cut by a reload: ask again.
      if (absl::IsUnavailable(results[i].status())) retry = true;
      continue;
    }
    absl::StatusOr<parse::ShowInfo> info = parse::ParseShowInfo(*results[i]);
    if (info.ok() && info->pid != 0 && info->pid != pids[i]) {
      info = absl::DataLossError(
          absl::StrCat("@!", pids[i], " show info answered for pid ", info->pid));
    }
    infos.emplace(pids[i], std::move(info));
  }
  model::WorkersReport next;
  next.master_reachable = true;
  next.master = MasterFromShowProc(proc);
  next.workers = ClassifyWorkers(proc, infos, report_);
  next.observed_at = wall_clock_();
  last_refresh_ok_ = true;
  if (retry && !target_missing) again_ = true;
  retry_soon_ = retry && target_missing;
  Publish(std::move(next));
  EndRefresh();
}

void WorkerRegistry::FailRefresh(std::string error) {
  last_refresh_ok_ = false;
  model::WorkersReport next = report_;
  next.master_reachable = client_->reachable();
  next.master_error = std::move(error);
  // Keep the last known workers: an unreachable master does not mean the workers are gone,
  // and the report says how old the view is (observedAt).
  report_ = std::move(next);
  EndRefresh();
}

void WorkerRegistry::Publish(model::WorkersReport next) {
  WorkerChanges changes = have_report_ ? Diff(report_, next) : Diff(model::WorkersReport{}, next);
  if (!changes.appeared.empty() || !changes.gone.empty()) {
    base::LogInfo("workers: ", next.workers.size(), " listed; appeared ", changes.appeared.size(),
                  ", gone ", changes.gone.size(), "; master reloads ", next.master.reloads,
                  " (failed ", next.master.failed_reloads, ")");
  }
  report_ = std::move(next);
  have_report_ = true;
  report_refresh_ = refreshes_begun_;  // one refresh at a time: the one that began last
  ++refreshes_;
  listeners_.Notify(report_, changes);
}

void WorkerRegistry::EndRefresh() {
  refreshing_ = false;
  if (again_) {
    BeginRefresh();
    return;
  }
  SchedulePoll();
}

void WorkerRegistry::SchedulePoll() {
  bool transition = std::any_of(
      report_.workers.begin(), report_.workers.end(),
      [](const model::WorkerReport& w) { return w.role != model::WorkerRole::kCurrent; });
  bool starting = std::any_of(
      report_.workers.begin(), report_.workers.end(),
      [](const model::WorkerReport& w) { return w.role == model::WorkerRole::kStarting; });
  absl::Duration delay = options_.poll_interval;
  if (transition || !last_refresh_ok_) delay = std::min(delay, options_.transition_poll_interval);
  if (starting || retry_soon_) delay = std::min(delay, options_.starting_poll_interval);
  poll_timer_.Start(ToMs(delay), 0, [this] { RefreshNow(); });
}

}  // namespace hawk::registry

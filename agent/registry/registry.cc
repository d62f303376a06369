#include "agent/registry/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/base/log.h"
#include "agent/cli/wire.h"
#include "agent/registry/classify.h"
#include "agent/registry/relay_policy.h"

namespace hawk::registry {
namespace {
// Closes and refusals remembered between two listings (a master refused for seconds is retried
// every 5 ms at first).
constexpr size_t kMaxEvents = 64;
// How long before a worker's relay window closes it stops being asked and targeted: more than
// the client's own lead for a batch (100 ms + 0.5 ms a command) up to 300 commands.
constexpr absl::Duration kTargetMargin = absl::Milliseconds(250);

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
    if (closes_.size() < kMaxEvents) closes_.push_back(wall_clock_());
    RefreshNow();
  });
  refused_ = client_->AddConnectRefusedListener([this] {
    // The last refusal of a reload came before it signalled the old workers: keep the latest.
    if (refusals_.size() == kMaxEvents) refusals_.erase(refusals_.begin());
    refusals_.push_back(wall_clock_());
  });
  reachable_ = client_->AddReachableListener([this] { RefreshNow(); });
  relay_closed_ = client_->AddRelayClosedListener([this](int pid) { OnRelayClosed(pid); });
  RefreshNow();
}

void WorkerRegistry::OnRelayClosed(int pid) {
  // Decided by the next listing asked from now on (RefreshNow: a refresh under way began before).
  suspects_[pid] = Suspect{refreshes_begun_, report_.master.pid, report_.master.reloads};
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
  cli::MasterClientStats stats = client_->stats();
  snapshot.master_cli.connections = stats.open_connections;
  snapshot.master_cli.max_connections = client_->max_connections();
  snapshot.master_cli.slots_lost = slots_lost_;
  for (const cli::HeldConnection& held : client_->held()) {
    snapshot.master_cli.held.push_back(
        model::HeldConnectionReport{held.pid, held.command, held.since});
  }
  return snapshot;
}

bool WorkerRegistry::Ready(std::string* code, std::string* detail) const {
  if (!client_->reachable()) {
    *code = "MASTER_UNREACHABLE";
    *detail = absl::StrCat("master CLI unreachable: ", client_->last_error().message());
    return false;
  }
  if (!last_refresh_ok_) {
    *code = "WORKER_POLL_FAILED";
    *detail = absl::StrCat("last worker poll failed: ", report_.master_error);
    return false;
  }
  if (report_.Current() == nullptr) {
    *code = "NO_CURRENT_WORKER";
    *detail = "no CURRENT worker known (every listed worker is leaving, starting or unknown)";
    return false;
  }
  if (int held = client_->stats().held_connections; held >= client_->ConnectionBudget()) {
    *code = "MASTER_CONNECTIONS_HELD";
    *detail = absl::StrCat(
        "every master CLI connection hawk may open (", held,
        ") is held waiting for a worker's reply past its deadline; hawk keeps them rather than "
        "close them (closing would not free the master's slots)");
    return false;
  }
  if (slots_lost_ > 0) {
    *detail = absl::StrCat(
        "ready, but the master CLI keeps ", slots_lost_,
        " slot(s) of hawk's sessions that it gives back only when it re-executes (a reload): "
        "HAProxy before 3.0 does so when it relays a command to a worker that is exiting; hawk "
        "opens that many connections fewer (",
        client_->ConnectionBudget(), " now)");
  }
  return true;
}

std::vector<int> WorkerRegistry::ApplyRelayWindows(const parse::ShowProc& proc) {
  absl::Time now = wall_clock_();
  bool leaks = RelayToExitingWorkerLeaksSlot(proc.master.version);
  absl::flat_hash_set<int> listed;
  for (const parse::ProcessEntry& entry : proc.workers) listed.insert(entry.pid);
  client_->SetListedWorkers(listed);
  if (worker_client_ != nullptr) worker_client_->SetListedWorkers(listed);

  bool same_master = proc.master.pid == report_.master.pid;
  if (!same_master) {  // HAProxy started again: pids may be reused, nothing known holds
    grace_of_.clear();
    exiting_.clear();
    signalled_after_.clear();
  }
  // Workers new since the last listing: the reload that started them closed hawk's connections,
  // and refused its connects, before it signalled the workers before them. The first close seen
  // since that listing was asked came from the first reload since; the last refusal, from the
  // last one: it dates the signal only when one reload alone lies between the two listings.
  if (proc.master.pid == listing_master_pid_ && listing_asked_at_ != absl::InfinitePast()) {
    absl::Time after = absl::InfinitePast();
    for (absl::Time close : closes_) {
      if (close > listing_asked_at_) {
        after = close;
        break;
      }
    }
    if (proc.master.reloads == listing_master_reloads_ + 1) {
      for (absl::Time refusal : refusals_) {
        if (refusal > listing_asked_at_) after = std::max(after, refusal);
      }
    }
    for (const parse::ProcessEntry& entry : proc.workers) {
      if (after != absl::InfinitePast() && !grace_of_.contains(entry.pid)) {
        signalled_after_.try_emplace(entry.pid, after);
      }
    }
  }
  listing_asked_at_ = refresh_asked_at_;
  listing_master_pid_ = proc.master.pid;
  listing_master_reloads_ = proc.master.reloads;
  auto asked_before = [this](absl::Time t) { return t <= listing_asked_at_; };
  closes_.erase(std::remove_if(closes_.begin(), closes_.end(), asked_before), closes_.end());
  refusals_.erase(std::remove_if(refusals_.begin(), refusals_.end(), asked_before),
                  refusals_.end());
  // A re-execution closes every session, the lost ones too.
  if (proc.master.pid != lost_master_pid_ || proc.master.reloads != lost_master_reloads_) {
    if (slots_lost_ > 0) {
      base::LogInfo("master CLI: the master re-executed; the ", slots_lost_,
                    " slot(s) it kept are free again");
    }
    slots_lost_ = 0;
    client_->ForgetCloseStreak();  // the closes since were the re-execution's
    lost_master_pid_ = proc.master.pid;
    lost_master_reloads_ = proc.master.reloads;
  }
  for (auto it = suspects_.begin(); it != suspects_.end();) {
    const Suspect& suspect = it->second;
    if (suspect.refresh >= refreshes_begun_) {  // this listing was asked before the close
      ++it;
      continue;
    }
    int pid = it->first;
    bool reload =
        suspect.master_pid != proc.master.pid || suspect.master_reloads != proc.master.reloads;
    if (!reload && listed.contains(pid)) {
      const model::WorkerReport* last = report_.Find(pid);
      bool leaving = (last != nullptr && last->role == model::WorkerRole::kLeaving) ||
                     std::any_of(proc.workers.begin(), proc.workers.end(),
                                 [pid](const auto& e) { return e.pid == pid && e.listed_as_old; });
      if (leaks) ++slots_lost_;
      base::LogWarn(
          "master CLI: the master closed hawk's connection right after relaying a "
          "command to worker ",
          pid, " and still lists it",
          leaks ? "; HAProxy before 3.0 keeps that session's slot until it re-executes" : "",
          leaving ? ": it is exiting, and is sent nothing more" : "");
      // A serving worker is tried again (a lost connection is no reason to drop it for good);
      // a leaving one is exiting.
      if (leaving) {
        exiting_[pid] = absl::StrCat(
            "the master closed hawk's connection right after relaying a command to it, and "
            "still lists it: it is exiting",
            leaks ? "; HAProxy before 3.0 keeps a master CLI slot for good when it relays a "
                    "command to a worker that is exiting, so hawk sends it nothing more"
                  : "");
      }
    }
    suspects_.erase(it++);
  }
  client_->SetSlotsLost(slots_lost_);

  // The grace of the configuration new workers started from.
  bool new_worker = std::any_of(proc.workers.begin(), proc.workers.end(),
                                [this](const auto& e) { return !grace_of_.contains(e.pid); });
  absl::optional<absl::Duration> grace_now;
  if (new_worker && grace_source_) grace_now = grace_source_();
  not_relayed_.clear();
  next_window_close_ = absl::InfiniteFuture();
  std::vector<int> ask;
  for (const parse::ProcessEntry& entry : proc.workers) {
    auto [grace, inserted] = grace_of_.try_emplace(entry.pid, grace_now);
    const model::WorkerReport* last = report_.Find(entry.pid);
    if (last != nullptr && !SameProcess(report_.master.pid, *last, proc.master.pid, entry.reloads,
                                        entry.uptime_seconds)) {
      last = nullptr;
    }
    RelayWindow window;
    if (auto it = exiting_.find(entry.pid); it != exiting_.end()) {
      window = RelayWindow{absl::InfinitePast(), it->second};
    } else {
      window = RelayWindowFor(proc, entry, leaks, grace->second, now, last, signalled_after_);
    }
    absl::Duration remaining =
        window.until == absl::InfiniteFuture() ? absl::InfiniteDuration() : window.until - now;
    client_->SetRelayWindow(entry.pid, remaining, window.why);
    // A worker stops being a target a little before the client stops writing for it, so that
    // nothing keeps submitting batches it would hold back.
    if (remaining > kTargetMargin) {
      ask.push_back(entry.pid);
      if (window.until != absl::InfiniteFuture()) {
        next_window_close_ = std::min(next_window_close_, window.until - kTargetMargin);
      }
    } else {
      not_relayed_[entry.pid] = window.why;
    }
  }
  for (auto it = grace_of_.begin(); it != grace_of_.end();) {
    if (!listed.contains(it->first)) {
      grace_of_.erase(it++);
    } else {
      ++it;
    }
  }
  for (auto it = exiting_.begin(); it != exiting_.end();) {
    if (!listed.contains(it->first)) {
      exiting_.erase(it++);
    } else {
      ++it;
    }
  }
  for (auto it = signalled_after_.begin(); it != signalled_after_.end();) {
    if (!listed.contains(it->first)) {
      signalled_after_.erase(it++);
    } else {
      ++it;
    }
  }
  return ask;
}

void WorkerRegistry::BeginRefresh() {
  ++refreshes_begun_;
  refresh_asked_at_ = wall_clock_();
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
  std::vector<int> allowed = ApplyRelayWindows(*proc);
  // Current-section workers first: a leaving worker is the one likely to exit between the two
  // queries, and the master drops what follows an unknown pid.
  std::vector<parse::ProcessEntry> ordered = proc->workers;
  std::stable_partition(ordered.begin(), ordered.end(),
                        [](const parse::ProcessEntry& e) { return !e.listed_as_old; });
  // --worker-socket: the worker it reaches answers there, without the master relaying.
  int direct = worker_client_ != nullptr ? worker_client_->worker_pid() : 0;
  struct Gather {
    parse::ShowProc proc;
    std::vector<int> pids;
    std::vector<cli::CommandResult> results;
    int outstanding = 0;
  };
  auto gather = std::make_shared<Gather>();
  std::vector<cli::Command> via_master;
  std::vector<size_t> master_slots;
  std::vector<cli::Command> via_worker;
  std::vector<size_t> worker_slots;
  for (const parse::ProcessEntry& entry : ordered) {
    if (std::find(allowed.begin(), allowed.end(), entry.pid) == allowed.end()) continue;
    size_t slot = gather->pids.size();
    gather->pids.push_back(entry.pid);
    if (entry.pid == direct && !entry.listed_as_old) {
      via_worker.push_back(cli::Command::ForWorker(entry.pid, "show info"));
      worker_slots.push_back(slot);
    } else {
      via_master.push_back(cli::Command::ForWorker(entry.pid, "show info"));
      master_slots.push_back(slot);
    }
  }
  gather->proc = *std::move(proc);
  gather->results.assign(gather->pids.size(), absl::UnknownError("not asked"));
  if (gather->pids.empty()) {
    OnShowInfo(std::move(gather->proc), {}, {});
    return;
  }
  auto submit = [&](cli::MasterClient* via, std::vector<cli::Command> commands,
                    std::vector<size_t> slots) {
    if (commands.empty()) return;
    ++gather->outstanding;
    via->Submit(
        std::move(commands),
        lifetime_.Guard([this, gather,
                         slots = std::move(slots)](std::vector<cli::CommandResult> answers) {
          for (size_t i = 0; i < slots.size() && i < answers.size(); ++i) {
            gather->results[slots[i]] = std::move(answers[i]);
          }
          if (--gather->outstanding > 0) return;
          OnShowInfo(std::move(gather->proc), std::move(gather->pids), std::move(gather->results));
        }),
        options_.query_timeout);
  };
  submit(client_, std::move(via_master), std::move(master_slots));
  submit(worker_client_, std::move(via_worker), std::move(worker_slots));
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
          absl::StrCat(cli::MasterLine(cli::Command::ForWorker(pids[i], "show info")),
                       " answered for pid ", info->pid));
    }
    infos.emplace(pids[i], std::move(info));
  }
  model::WorkersReport next;
  next.master_reachable = true;
  next.master = MasterFromShowProc(proc);
  next.workers = ClassifyWorkers(proc, infos, report_);
  for (model::WorkerReport& worker : next.workers) {
    auto it = not_relayed_.find(worker.pid);
    if (it == not_relayed_.end()) continue;
    // Not asked: only a leaving worker is held back (2.6 lists the workers a reload told to
    // stop under "# old workers"); the rest is as last seen.
    worker.not_relayed = it->second;
    worker.role = model::WorkerRole::kLeaving;
    worker.stopping = true;
    worker.error.clear();
  }
  model::SortWorkers(&next.workers);
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
  // When a relay window closes, the report says so (pushes stop waiting for that worker).
  if (next_window_close_ != absl::InfiniteFuture()) {
    delay = std::min(delay, std::max(next_window_close_ - wall_clock_(), absl::ZeroDuration()) +
                                absl::Milliseconds(1));
  }
  poll_timer_.Start(delay, [this] { RefreshNow(); });
}

}  // namespace hawk::registry

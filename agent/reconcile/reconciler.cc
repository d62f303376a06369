#include "agent/reconcile/reconciler.h"

#include <malloc.h>

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "agent/base/log.h"
#include "agent/parse/reply.h"
#include "agent/parse/show_version.h"
#include "agent/plan/commands.h"
#include "agent/plan/observed.h"

namespace hawk::reconcile {
namespace {

// A reconcile cut short (a reload closed the connection, the worker was not reachable yet) is
// retried after 5 ms, then 10, 20, … up to 1 s while it keeps failing: a reload is usually over
// within milliseconds, and the new worker must be seeded at once.
constexpr absl::Duration kFirstRetry = absl::Milliseconds(5);
constexpr absl::Duration kMaxRetry = absl::Seconds(1);
// Quiet time after the last full reconcile before its memory is given back (ScheduleTrim).
constexpr absl::Duration kTrimAfterFullRun = absl::Seconds(1);
// Pushes whose publish time is remembered for the push latency histograms.
constexpr size_t kRememberedPushes = 4096;
// Added to a batch's deadline per command it carries.
constexpr absl::Duration kPerCommandBudget = absl::Milliseconds(2);

// Withheld from a frozen worker (already stale as such): reported refused with the reply that
// froze it, not sent again.
void AppendWithheld(int pid, const plan::Plan& plan, const std::string& freeze_reply,
                    std::vector<model::Refusal>* refusals) {
  for (const plan::Action& action : plan.withheld) {
    for (cli::Command& command : plan::ServerCommands(pid, action)) {
      refusals->push_back(model::Refusal{action.object(), std::move(command.text), freeze_reply});
    }
  }
}

}  // namespace

// One reconcile in flight: the plan, the commands sent for it and what each one was for.
struct Reconciler::Run {
  bool full = false;  // a seed or an observation: the whole state was planned
  plan::Plan plan;
  plan::PendingChanges taken;  // incremental: the changes this run applies
  std::vector<cli::Command> sent;
  std::vector<size_t> action_of;  // sent[i] is for plan.actions[action_of[i]]
};

struct Reconciler::WorkerState {
  int pid = 0;
  uint64_t epoch = 0;  // unique per WorkerState: a reused pid is another worker
  model::WorkerRole role = model::WorkerRole::kUnknown;
  bool relayed = true;     // the registry lets hawk send it commands (WorkerReport::not_relayed)
  bool busy = false;       // a reconcile is in progress
  bool dirty = false;      // run again when the current reconcile ends
  bool seed = false;       // born from the config file: plan everything without observing
  bool observe = false;    // what it holds is unknown: observe in full before planning
  bool uncertain = false;  // the last apply was cut short: map keys may differ from the summaries
  bool retry = false;      // the last reconcile failed: retry_timer will run it again
  // After a failure, run again only once the registry has reported from a refresh with this
  // number or later (0: not waiting). A failure is often a reload closing the connection, and
  // the pid may then belong to another process: a retry sent before the registry looked would
  // put the old worker's changes on a new worker and count them as its own.
  uint64_t await_refresh = 0;
  int failures = 0;  // consecutive failed reconciles (the retry backs off)
  std::unique_ptr<uv::Timer> retry_timer;
  plan::PendingChanges pending;  // changes since the last reconcile started
  uint64_t pending_seq = 0;      // the last push merged into `pending`
  uint64_t running_seq = 0;      // the push the reconcile in progress brings it to
  std::string running_version;
  absl::optional<int64_t> running_generation;
  uint64_t synced_seq = 0;  // the push the last completed reconcile brought it to
  std::unique_ptr<Run> run;
  StaleSet stale;
  model::WorkerSync sync;                // stale is filled from `stale` when read
  std::vector<model::Refusal> refusals;  // gathered by the reconcile in progress
  bool refused_unexpectedly = false;     // … of which one HAProxy refused for no known reason
  std::string freeze_reply;              // the reply that froze this worker
  bool sessions_busy = false;
  absl::Time sessions_at = absl::InfinitePast();
  absl::Time listed_at = absl::InfinitePast();  // when the registry first listed it
  bool seed_timed = false;                      // its seed time is in stats_.seed_seconds
};

Reconciler::Reconciler(uv_loop_t* loop, cli::MasterClient* client,
                       registry::WorkerRegistry* registry, const model::DesiredState* desired,
                       ReconcilerOptions options, std::function<absl::Time()> wall_clock)
    : loop_(loop),
      client_(client),
      registry_(registry),
      desired_(desired),
      options_(options),
      wall_clock_(std::move(wall_clock)),
      waiters_(
          loop, [this](uint64_t seq, int only_pid) { return PushComplete(seq, only_pid); },
          [this](uint64_t seq) { return OutcomeFor(seq); }),
      resync_timer_(loop),
      trim_timer_(loop) {}

Reconciler::~Reconciler() = default;

void Reconciler::Start() {
  workers_subscription_ = registry_->AddListener(
      [this](const model::WorkersReport& report, const registry::WorkerChanges& changes) {
        OnWorkers(report, changes);
      });
  resync_timer_.StartRepeating(options_.resync_interval, options_.resync_interval, [this] {
    // Drift repair: someone may have changed a worker behind hawk's back.
    for (auto& [pid, worker] : workers_) {
      if (!worker->seed) worker->observe = true;
      Kick(worker.get());
    }
  });
}

bool Reconciler::IsTarget(const WorkerState& worker) const {
  // A worker hawk sends nothing more through the master (its exit may be near: see
  // registry/relay_policy.h) is no target: pushes do not wait for it.
  if (!worker.relayed) return false;
  if (worker.role == model::WorkerRole::kCurrent) return true;
  return worker.role == model::WorkerRole::kLeaving && options_.leaving_workers;
}

Reconciler::WorkerState* Reconciler::FindPid(int pid) {
  auto it = workers_.find(pid);
  return it == workers_.end() ? nullptr : it->second.get();
}

Reconciler::WorkerState* Reconciler::Find(int pid, uint64_t epoch) {
  WorkerState* worker = FindPid(pid);
  return worker != nullptr && worker->epoch == epoch ? worker : nullptr;
}

void Reconciler::RememberPublish() {
  publish_times_.emplace_back(desired_seq_, wall_clock_());
  while (publish_times_.size() > kRememberedPushes) publish_times_.pop_front();
}

uint64_t Reconciler::Publish(const model::ChangeSummary& summary) {
  active_ = true;
  ++desired_seq_;
  if (!summary.servers.empty() || !summary.backends_created.empty() ||
      !summary.backends_dropped.empty()) {
    server_seq_ = desired_seq_;
  }
  RememberPublish();
  if (written_.has_value()) {
    written_->since.Merge(summary, *desired_);
    if (written_->since.size() > options_.max_pending_objects) written_.reset();
  }
  for (auto& [pid, worker] : workers_) {
    WorkerState& w = *worker;
    for (const std::string& backend : summary.backends_dropped) {
      w.stale.ForgetObject(absl::StrCat("backend/", backend));
    }
    if (!IsTarget(w)) {
      // It misses this change: if it becomes a target, observe it.
      if (!w.seed) w.observe = true;
      continue;
    }
    w.pending_seq = desired_seq_;
    if (w.seed || w.observe) continue;  // a full reconcile is due anyway
    w.pending.Merge(summary, *desired_);
    if (w.pending.size() > options_.max_pending_objects) {
      w.pending.Clear();
      w.observe = true;
    }
  }
  for (auto& [pid, worker] : workers_) Kick(worker.get());
  Notify();
  return desired_seq_;
}

uint64_t Reconciler::PublishWhole() {
  active_ = true;
  ++desired_seq_;
  server_seq_ = desired_seq_;
  RememberPublish();
  written_.reset();  // no summary says what changed since the files were written
  for (auto& [pid, worker] : workers_) {
    if (!worker->seed) worker->observe = true;
    worker->pending.Clear();
    worker->pending_seq = desired_seq_;
    Kick(worker.get());
  }
  Notify();
  return desired_seq_;
}

void Reconciler::OnWorkers(const model::WorkersReport& report,
                           const registry::WorkerChanges& changes) {
  bool first = !seen_first_report_;
  seen_first_report_ = true;
  absl::flat_hash_set<int> listed;
  for (const model::WorkerReport& w : report.workers) {
    listed.insert(w.pid);
    WorkerState* state = FindPid(w.pid);
    if (state != nullptr &&
        std::find(changes.gone.begin(), changes.gone.end(), w.pid) != changes.gone.end()) {
      // Listed again, but by another process (registry::SameProcess): a new worker, a new epoch.
      workers_.erase(w.pid);  // callbacks in flight find it gone by pid and epoch
      state = nullptr;
    }
    if (state != nullptr && state->await_refresh != 0 &&
        registry_->report_refresh() >= state->await_refresh) {
      state->await_refresh = 0;  // the registry looked after the failure: this is the same worker
    }
    if (state == nullptr) {
      auto fresh = std::make_unique<WorkerState>();
      fresh->pid = w.pid;
      fresh->epoch = next_epoch_++;
      // Workers present when hawk starts hold unknown state: observe them. A worker that
      // appears later was just started from the config file: seed it without observing.
      fresh->seed = !first && std::find(changes.appeared.begin(), changes.appeared.end(), w.pid) !=
                                  changes.appeared.end();
      fresh->observe = !fresh->seed;
      fresh->listed_at = wall_clock_();
      fresh->seed_timed = !fresh->seed;  // only workers born while hawk runs are timed
      state = fresh.get();
      workers_.emplace(w.pid, std::move(fresh));
    }
    state->role = w.role;
    state->relayed = w.not_relayed.empty();
  }
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!listed.contains(it->first)) {
      workers_.erase(it++);  // callbacks in flight find it gone by pid and epoch
    } else {
      ++it;
    }
  }
  absl::Time now = wall_clock_();
  for (auto& [pid, worker] : workers_) {
    if (!worker->busy && !worker->retry && worker->synced_seq < desired_seq_) Kick(worker.get());
    if (!worker->busy && worker->stale.HasServers() &&
        now - worker->sessions_at >= options_.stale_sessions_refresh) {
      RefreshSessions(worker.get());
    }
  }
  waiters_.Check();
}

void Reconciler::Kick(WorkerState* worker) {
  if (!active_ || !IsTarget(*worker) || worker->await_refresh != 0) return;
  if (worker->busy) {
    worker->dirty = true;  // coalesced: the next run takes whatever is pending then
    return;
  }
  bool work = worker->seed || worker->observe || !worker->pending.empty() ||
              worker->synced_seq < desired_seq_;
  if (!work) return;
  worker->busy = true;
  worker->dirty = false;
  worker->retry = false;
  worker->refusals.clear();
  worker->refused_unexpectedly = false;
  worker->running_seq = desired_seq_;
  worker->running_version = desired_->version;
  worker->running_generation = desired_->generation;
  if (worker->seed) {
    worker->seed = false;
    worker->observe = false;
    worker->pending.Clear();
    worker->stale.Clear();
    ++stats_.seeds;
    auto run = std::make_unique<Run>();
    run->full = true;
    worker->run = std::move(run);
    if (written_.has_value() && (!written_->maps.empty() || !written_->acls.empty())) {
      ListTables(worker);
      return;
    }
    Apply(worker, plan::PlanFullSeed(*desired_, nullptr, PlanOptionsFor(*worker)));
    return;
  }
  if (worker->observe) {
    Observe(worker);
    return;
  }
  ++stats_.incremental_reconciles;
  auto run = std::make_unique<Run>();
  run->taken = std::move(worker->pending);
  worker->pending = plan::PendingChanges();
  plan::PlanOptions options = PlanOptionsFor(*worker);
  options.uncertain = worker->uncertain;
  absl::flat_hash_set<std::string> stale_servers = worker->stale.Servers();
  options.stale_servers = &stale_servers;
  plan::Plan plan = plan::PlanChanges(*desired_, run->taken, options);
  worker->stale.ForgetChanged(run->taken);
  worker->run = std::move(run);
  Apply(worker, std::move(plan));
}

plan::PlanOptions Reconciler::PlanOptionsFor(const WorkerState& worker) const {
  plan::PlanOptions options;
  options.servers_frozen = worker.sync.frozen;
  // The master's version stands for its workers' (one binary); unknown counts as indexed.
  absl::StatusOr<parse::VersionNumbers> version =
      parse::ParseVersionNumbers(registry_->report().master.version);
  if (version.ok() && parse::VersionLess(*version, parse::VersionNumbers{2, 9, 0})) {
    options.entry_lookup = model::EntryLookup::kWalksTable;
  }
  return options;
}

void Reconciler::TablesWritten(absl::flat_hash_map<std::string, int64_t> maps,
                               absl::flat_hash_map<std::string, int64_t> acls) {
  written_.emplace();
  written_->maps = std::move(maps);
  written_->acls = std::move(acls);
}

bool Reconciler::TableUnchangedSinceWritten(bool acl, const std::string& name) const {
  if (!written_.has_value()) return false;
  const auto& written = acl ? written_->acls : written_->maps;
  const auto& changed = acl ? written_->since.acls() : written_->since.maps();
  return written.contains(name) && !changed.contains(name);
}

void Reconciler::ListTables(WorkerState* worker) {
  Submit(worker, TableListingCommands(worker->pid), &Reconciler::OnTablesListed);
}

void Reconciler::OnTablesListed(int pid, uint64_t epoch, std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid, epoch);
  if (worker == nullptr) return;
  if (absl::optional<std::string> error = TransportFailure(TableListingCommands(pid), results)) {
    // Nothing was sent yet: the retry is this seed again, not an observation.
    Fail(worker, *std::move(error));
    worker->seed = true;
    worker->observe = false;
    worker->uncertain = false;
    return;
  }
  // Planned against the state as it is now: pushes that came while listing are in it.
  worker->running_seq = desired_seq_;
  worker->running_version = desired_->version;
  worker->running_generation = desired_->generation;
  worker->pending.Clear();
  if (!written_.has_value()) {  // forgotten meanwhile
    Apply(worker, plan::PlanFullSeed(*desired_, nullptr, PlanOptionsFor(*worker)));
    return;
  }
  // The tables the worker read from their files get only the changes since; the others, whole.
  plan::TablesAtBirth born;
  born.since = &written_->since;
  born.maps = TablesReadFromFiles(results[0], /*acl=*/false, written_->maps);
  born.acls = TablesReadFromFiles(results[1], /*acl=*/true, written_->acls);
  stats_.tables_from_files += born.maps.size() + born.acls.size();
  base::LogDebug("reconcile worker ", pid, ": seeded with ", born.maps.size(), " of ",
                 written_->maps.size(), " written maps and ", born.acls.size(), " of ",
                 written_->acls.size(), " written ACLs read from their files");
  Apply(worker, plan::PlanFullSeed(*desired_, &born, PlanOptionsFor(*worker)));
}

void Reconciler::Observe(WorkerState* worker) {
  ++stats_.observes;
  worker->observe = false;
  worker->pending.Clear();  // the diff covers every change up to when the replies are planned
  int pid = worker->pid;
  std::vector<cli::Command> commands = ObservationCommands(*desired_, pid);
  auto run = std::make_unique<Run>();
  run->full = true;
  worker->run = std::move(run);
  if (commands.empty()) {
    OnObserved(pid, worker->epoch, {});
    return;
  }
  Submit(worker, std::move(commands), &Reconciler::OnObserved);
}

void Reconciler::OnObserved(int pid, uint64_t epoch, std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid, epoch);
  if (worker == nullptr) return;
  // Planned against the state as it is now: pushes that came while observing are in it.
  worker->running_seq = desired_seq_;
  worker->running_version = desired_->version;
  worker->running_generation = desired_->generation;
  worker->pending.Clear();
  absl::StatusOr<plan::ObservedWorker> observed = ObservedFromReplies(*desired_, results);
  if (!observed.ok()) {
    worker->observe = true;
    Fail(worker, std::string(observed.status().message()));
    return;
  }
  worker->uncertain = false;
  worker->stale.Clear();
  Apply(worker, plan::PlanWorker(*desired_, *observed, PlanOptionsFor(*worker)));
}

void Reconciler::Submit(WorkerState* worker, std::vector<cli::Command> commands,
                        void (Reconciler::*then)(int, uint64_t, std::vector<cli::CommandResult>)) {
  stats_.commands_sent += commands.size();
  absl::Duration timeout =
      options_.batch_timeout + kPerCommandBudget * static_cast<int64_t>(commands.size());
  int pid = worker->pid;
  uint64_t epoch = worker->epoch;
  cli::MasterClient* via = client_;
  if (worker_client_ != nullptr && worker->role == model::WorkerRole::kCurrent &&
      worker_client_->worker_pid() == pid) {
    via = worker_client_;
    ++stats_.batches_via_worker_socket;
  }
  // A seed or an observation is whole-state work: never in the way of a push (BatchPriority).
  cli::BatchPriority priority = worker->run != nullptr && worker->run->full
                                    ? cli::BatchPriority::kBulk
                                    : cli::BatchPriority::kInteractive;
  // Guarded: the batch may still be queued in the client when the reconciler is gone.
  auto done = lifetime_.Guard([this, pid, epoch, then](std::vector<cli::CommandResult> results) {
    // `Can't find the target PID`: the worker exited (or is still starting). The registry looks
    // now rather than at its next poll, so that pushes stop waiting for a worker that is gone.
    if (std::any_of(results.begin(), results.end(),
                    [](const auto& r) { return absl::IsNotFound(r.status()); })) {
      registry_->RefreshNow();
    }
    (this->*then)(pid, epoch, std::move(results));
  });
  via->Submit(std::move(commands), std::move(done), timeout, priority);
}

void Reconciler::Apply(WorkerState* worker, plan::Plan plan) {
  Run& run = *worker->run;
  run.plan = std::move(plan);
  worker->stale.AddAll(run.plan.stale);
  int pid = worker->pid;
  AppendWithheld(pid, run.plan, worker->freeze_reply, &worker->refusals);
  plan::PlannedCommands batch = plan::FirstBatch(pid, run.plan);
  for (const auto& [a, reason] : batch.unsendable) {
    RecordRefusal(worker, run.plan.actions[a], "", reason);
  }
  run.sent = std::move(batch.commands);
  run.action_of = std::move(batch.action_of);
  if (run.sent.empty()) {
    Finish(worker);
    return;
  }
  std::vector<cli::Command> copy = run.sent;
  Submit(worker, std::move(copy), &Reconciler::OnFirstPhase);
}

void Reconciler::OnFirstPhase(int pid, uint64_t epoch, std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid, epoch);
  if (worker == nullptr) return;
  Run& run = *worker->run;
  if (absl::optional<std::string> error = TransportFailure(run.sent, results)) {
    Fail(worker, *std::move(error));
    return;
  }
  std::vector<cli::Command> second;
  std::vector<size_t> second_action_of;
  for (size_t i = 0; i < run.sent.size(); ++i) {
    const plan::Action& action = run.plan.actions[run.action_of[i]];
    if (plan::IsReplaceAction(action.kind)) {
      absl::StatusOr<int64_t> version =
          results[i].ok() ? parse::ParseNewVersion(*results[i]) : results[i].status();
      if (!version.ok()) {
        Record(worker, action, run.sent[i], results[i], /*as_add=*/false);
        continue;
      }
      absl::StatusOr<std::vector<cli::Command>> transaction =
          plan::TransactionCommands(pid, action, *version);
      if (!transaction.ok()) {
        RecordRefusal(worker, action, run.sent[i].text,
                      std::string(transaction.status().message()));
        continue;
      }
      for (cli::Command& command : *transaction) {
        second.push_back(std::move(command));
        second_action_of.push_back(run.action_of[i]);
      }
      continue;
    }
    ReplyVerdict verdict = Record(worker, action, run.sent[i], results[i], /*as_add=*/false);
    if (verdict == ReplyVerdict::kNeedsAdd) {
      absl::StatusOr<cli::Command> add =
          plan::AddMapEntryCommand(pid, action.map_or_acl, action.key, action.value);
      if (!add.ok()) {
        RecordRefusal(worker, action, "", std::string(add.status().message()));
        continue;
      }
      second.push_back(*std::move(add));
      second_action_of.push_back(run.action_of[i]);
    }
  }
  if (second.empty()) {
    Finish(worker);
    return;
  }
  run.sent = second;
  run.action_of = std::move(second_action_of);
  Submit(worker, std::move(second), &Reconciler::OnSecondPhase);
}

void Reconciler::OnSecondPhase(int pid, uint64_t epoch, std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid, epoch);
  if (worker == nullptr) return;
  Run& run = *worker->run;
  if (absl::optional<std::string> error = TransportFailure(run.sent, results)) {
    Fail(worker, *std::move(error));
    return;
  }
  for (size_t i = 0; i < run.sent.size(); ++i) {
    const plan::Action& action = run.plan.actions[run.action_of[i]];
    // A transaction's `add map @N` lines and the follow-up `add map` after "entry not found."
    // are judged as adds; the commit as the transaction's outcome.
    Record(worker, action, run.sent[i], results[i], /*as_add=*/true);
  }
  Finish(worker);
}

ReplyVerdict Reconciler::Record(WorkerState* worker, const plan::Action& action,
                                const cli::Command& command, const cli::CommandResult& result,
                                bool as_add) {
  ActionReply reply =
      ClassifyActionReply(action, result, as_add, worker->role == model::WorkerRole::kLeaving);
  switch (reply.verdict) {
    case ReplyVerdict::kOk:
    case ReplyVerdict::kNeedsAdd:
      return reply.verdict;
    case ReplyVerdict::kFrozen:
      if (!worker->sync.frozen) {
        worker->sync.frozen = true;
        worker->sync.frozen_since = wall_clock_();
        worker->freeze_reply = reply.text;
        base::LogInfo("worker ", worker->pid, " is frozen: \"", reply.text,
                      "\"; its servers stay as they are, maps and ACLs are still updated");
      }
      break;
    case ReplyVerdict::kMissing:
      break;
    case ReplyVerdict::kRefused:
      if (reply.unexpected) worker->refused_unexpectedly = true;
      break;
  }
  worker->refusals.push_back(model::Refusal{action.object(), command.text, reply.text});
  if (reply.stale) worker->stale.Add(*std::move(reply.stale));
  return reply.verdict;
}

void Reconciler::RecordRefusal(WorkerState* worker, const plan::Action& action, std::string command,
                               std::string reply) {
  worker->stale.Add(model::StaleObject{action.object(), action.field(), "", "",
                                       absl::StrCat("cannot be sent: ", reply)});
  worker->refusals.push_back(model::Refusal{action.object(), std::move(command), std::move(reply)});
}

void Reconciler::Finish(WorkerState* worker) {
  model::WorkerSync& sync = worker->sync;
  worker->failures = 0;
  worker->uncertain = false;
  sync.managed = true;
  sync.error.clear();
  sync.refused = worker->refusals;
  sync.in_sync = worker->stale.empty();
  if (sync.in_sync) {
    sync.applied_version = worker->running_version;
    sync.applied_generation = worker->running_generation;
  }
  RecordLatencies(*worker, worker->synced_seq, worker->running_seq);
  worker->synced_seq = worker->running_seq;
  // A refusal HAProxy gave for no reason hawk knows: what the worker holds may differ from what
  // hawk believes. Look at everything once (not after a full reconcile: that would loop).
  if (worker->refused_unexpectedly && worker->run != nullptr && !worker->run->full) {
    worker->observe = true;
    worker->dirty = true;
  }
  if (worker->run != nullptr && worker->run->full) ScheduleTrim();
  worker->run.reset();
  bool stale_servers = worker->stale.HasServers();
  if (!stale_servers) sync.sessions_on_stale_servers = 0;
  int pid = worker->pid;
  uint64_t epoch = worker->epoch;
  EndReconcile(worker);
  // EndReconcile may have started another reconcile; the session count is independent of it.
  if (WorkerState* again = Find(pid, epoch); again != nullptr && stale_servers) {
    RefreshSessions(again);
  }
}

void Reconciler::RecordLatencies(WorkerState& worker, uint64_t from_seq, uint64_t to_seq) {
  absl::Time now = wall_clock_();
  if (!worker.seed_timed && worker.sync.in_sync) {
    worker.seed_timed = true;
    stats_.seed_seconds.Observe(absl::ToDoubleSeconds(now - worker.listed_at));
  }
  metrics::Histogram* push = nullptr;
  if (worker.role == model::WorkerRole::kCurrent) push = &stats_.push_applied_current_seconds;
  if (worker.role == model::WorkerRole::kLeaving) push = &stats_.push_applied_leaving_seconds;
  if (push == nullptr || publish_times_.empty() || to_seq <= from_seq) return;
  // The pushes in (from_seq, to_seq] still remembered; publish_times_ holds consecutive seqs.
  uint64_t first = publish_times_.front().first;
  for (uint64_t seq = std::max(from_seq + 1, first); seq <= to_seq; ++seq) {
    size_t index = seq - first;
    if (index >= publish_times_.size()) break;
    absl::Time published = publish_times_[index].second;
    if (published < worker.listed_at) continue;  // before the worker existed: its seed's time
    push->Observe(absl::ToDoubleSeconds(now - published));
  }
}

void Reconciler::ScheduleTrim() {
  // A full reconcile at ingress scale allocates tens of megabytes (a `show map` reply of 100,000
  // entries, the table parsed from it, the seed's commands) and frees them when it ends; main.cc
  // keeps freed heap memory for speed, so without this a hawk that only seeded and observed
  // (no PUT, whose service trims on its own) would hold it for good. Restarted by every full
  // reconcile that ends, so a burst (a reload's seed, then a resync) trims once.
  trim_timer_.Start(kTrimAfterFullRun, [] { ::malloc_trim(0); });
}

void Reconciler::Fail(WorkerState* worker, std::string error) {
  base::LogDebug("reconcile worker ", worker->pid, ": ", error);
  worker->sync.error = std::move(error);
  worker->retry = true;
  if (worker->run != nullptr) {
    if (worker->run->full) {
      // Redo the whole reconcile (seed or observe): part of it may have run.
      worker->observe = true;
      ScheduleTrim();
    } else {
      // Put back what this run carried, before what arrived since.
      plan::PendingChanges later = std::move(worker->pending);
      worker->pending = std::move(worker->run->taken);
      worker->pending.MergeLater(later, *desired_);
    }
    worker->uncertain = true;
    worker->run.reset();
  }
  absl::Duration delay = std::min(kMaxRetry, kFirstRetry * (1 << std::min(worker->failures, 8)));
  ++worker->failures;
  if (!worker->retry_timer) worker->retry_timer = std::make_unique<uv::Timer>(loop_);
  int pid = worker->pid;
  uint64_t epoch = worker->epoch;
  worker->await_refresh = registry_->refreshes_begun() + 1;
  worker->retry_timer->Start(delay, [this, pid, epoch] {
    WorkerState* w = Find(pid, epoch);
    if (w != nullptr && w->retry && !w->busy) {
      w->retry = false;
      if (w->await_refresh != 0) {
        registry_->RefreshNow();  // OnWorkers runs it once the registry has looked
        return;
      }
      Kick(w);
    }
  });
  EndReconcile(worker);
}

void Reconciler::EndReconcile(WorkerState* worker) {
  worker->busy = false;
  Notify();
  waiters_.Check();
  if (worker->dirty && !worker->retry) Kick(worker);
}

void Reconciler::RefreshSessions(WorkerState* worker) {
  if (worker->sessions_busy || !worker->relayed) return;
  worker->sessions_busy = true;
  int pid = worker->pid;
  uint64_t epoch = worker->epoch;
  auto done = lifetime_.Guard([this, pid, epoch](std::vector<cli::CommandResult> results) {
    OnSessions(pid, epoch, std::move(results));
  });
  cli::MasterClient* via = client_;
  if (worker_client_ != nullptr && worker->role == model::WorkerRole::kCurrent &&
      worker_client_->worker_pid() == pid) {
    via = worker_client_;  // not through the master
  }
  via->Submit({cli::Command::ForWorker(pid, "show sess")}, std::move(done), options_.batch_timeout);
}

void Reconciler::OnSessions(int pid, uint64_t epoch, std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid, epoch);
  if (worker == nullptr) return;
  worker->sessions_busy = false;
  worker->sessions_at = wall_clock_();
  if (!results[0].ok()) return;
  absl::StatusOr<int64_t> count = CountSessionsOnStaleServers(*results[0], worker->stale);
  if (count.ok() && *count != worker->sync.sessions_on_stale_servers) {
    worker->sync.sessions_on_stale_servers = *count;
    Notify();
  }
}

void Reconciler::WaitForPush(uint64_t seq, absl::Duration timeout,
                             std::function<void(PushOutcome)> done) {
  waiters_.Add(seq, /*only_pid=*/0, timeout, std::move(done));
}

void Reconciler::WaitForWorker(int pid, absl::Duration timeout,
                               std::function<void(bool synced)> done) {
  waiters_.Add(desired_seq_, pid, timeout, [pid, done = std::move(done)](PushOutcome outcome) {
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
  if (it == workers_.end() || !IsTarget(*it->second)) return true;
  return it->second->synced_seq >= desired_seq_;
}

bool Reconciler::PushComplete(uint64_t seq, int only_pid) const {
  return std::all_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
    const WorkerState& w = *entry.second;
    if (only_pid != 0 && w.pid != only_pid) return true;
    return !IsTarget(w) || w.synced_seq >= seq;
  });
}

PushOutcome Reconciler::OutcomeFor(uint64_t seq) const {
  PushOutcome outcome;
  if (active_) {
    outcome.version = desired_->version;
    outcome.generation = desired_->generation;
  }
  for (const model::WorkerReport& w : registry_->report().workers) {
    auto it = workers_.find(w.pid);
    if (it == workers_.end() || !IsTarget(*it->second)) continue;
    const WorkerState& state = *it->second;
    outcome.workers.push_back(OutcomeOnWorker(w.pid, state.role, state.synced_seq >= seq,
                                              state.busy, state.sync, state.stale));
  }
  return outcome;
}

void Reconciler::Annotate(model::WorkersReport* report) const {
  for (model::WorkerReport& w : report->workers) {
    auto it = workers_.find(w.pid);
    if (it == workers_.end()) continue;
    w.sync = it->second->sync;
    w.sync.stale = it->second->stale.Sorted();
    w.sync.managed = active_ && IsTarget(*it->second);
  }
}

std::vector<WorkerPreview> Reconciler::Preview(const model::ChangeSummary& summary) const {
  std::vector<WorkerPreview> out;
  for (const auto& [pid, worker] : workers_) {
    const WorkerState& w = *worker;
    if (!IsTarget(w)) continue;
    WorkerPreview& preview = out.emplace_back();
    preview.pid = w.pid;
    preview.role = w.role;
    plan::PlanOptions options = PlanOptionsFor(w);
    plan::Plan plan;
    if (w.seed) {
      // Tables read from files hawk wrote get only the changes since; the seed confirms which
      // ones the worker read when it runs, so the preview shows them in full.
      preview.basis = PreviewBasis::kSeed;
      plan = plan::PlanFullSeed(*desired_, nullptr, options);
    } else if (w.observe) {
      preview.basis = PreviewBasis::kObserve;
      continue;
    } else {
      // The next incremental run takes what is pending now and this change (a run in flight
      // finishes first with what it took), as Publish merges it.
      plan::PendingChanges pending = w.pending;
      pending.Merge(summary, *desired_);
      if (pending.size() > options_.max_pending_objects) {
        preview.basis = PreviewBasis::kObserve;
        continue;
      }
      options.uncertain = w.uncertain;
      absl::flat_hash_set<std::string> stale_servers = w.stale.Servers();
      options.stale_servers = &stale_servers;
      plan = plan::PlanChanges(*desired_, pending, options);
    }
    AppendWithheld(pid, plan, w.freeze_reply, &preview.refused);
    plan::PlannedCommands batch = plan::FirstBatch(pid, plan);
    for (const auto& [a, reason] : batch.unsendable) {
      preview.refused.push_back(model::Refusal{plan.actions[a].object(), "", reason});
    }
    for (const cli::Command& command : batch.commands) {
      std::string text = command.text;
      if (!command.payload.empty()) absl::StrAppend(&text, " <<\n", command.payload);
      preview.commands.push_back(std::move(text));
    }
    for (const plan::Action& action : plan.actions) {
      if (plan::IsReplaceAction(action.kind) && action.content != nullptr) {
        preview.replaces.push_back(
            PreviewReplace{action.object(), static_cast<int64_t>(action.content->size())});
      }
    }
    preview.stale = std::move(plan.stale);
  }
  std::sort(out.begin(), out.end(),
            [](const WorkerPreview& a, const WorkerPreview& b) { return a.pid < b.pid; });
  return out;
}

void Reconciler::Notify() { listeners_.Notify(); }

}  // namespace hawk::reconcile

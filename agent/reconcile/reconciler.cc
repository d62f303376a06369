#include "agent/reconcile/reconciler.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "agent/base/check.h"
#include "agent/base/log.h"
#include "agent/parse/reply.h"
#include "agent/parse/show_version.h"
#include "agent/plan/commands.h"

namespace hawk::reconcile {
namespace {

// A reconcile cut short (a reload closed the connection, the worker was not reachable yet) is
// retried after 5 ms, then 10, 20, … up to 1 s while it keeps failing: a reload is usually over
// within milliseconds, and the new worker must be seeded at once.
constexpr absl::Duration kFirstRetry = absl::Milliseconds(5);
constexpr absl::Duration kMaxRetry = absl::Seconds(1);
// Added to a batch's deadline per command it carries.
constexpr absl::Duration kPerCommandBudget = absl::Milliseconds(2);

}  // namespace

// What a worker's reconciles are doing: one phase at a time, the transitions checked
// (HAWK_CHECK), as Node's handle_wrap keeps its handle states.
enum class Reconciler::Phase {
  kIdle,     // nothing runs; Kick starts a reconcile when there is work
  kRunning,  // a reconcile is in flight: `run` holds it
  kBackoff,  // the last one failed: the retry timer runs it again (Kick may, once the registry
             // has looked: await_refresh == 0)
  kAwaitingRefresh,  // the retry is due, but the registry has not looked since the failure
};

// What the next reconcile of a worker does.
enum class Reconciler::NextRun {
  kIncremental,  // what `pending` holds, and no more: the worker held the state before
  kObserve,      // what it holds is unknown: look at everything, then plan the difference
  kSeed,         // born from the configuration file: plan the whole state without looking
};

// One reconcile in flight: the plan, the commands sent for it and what each one was for, and
// what the replies said.
struct Reconciler::Run {
  bool full = false;  // a seed or an observation: the whole state was planned
  plan::Plan plan;
  plan::PendingChanges taken;  // incremental: the changes this run applies
  std::vector<cli::Command> sent;
  std::vector<size_t> action_of;  // sent[i] is for plan.actions[action_of[i]]
  // The push it brings the worker to, and that push's version and generation.
  uint64_t target_seq = 0;
  std::string target_version;
  absl::optional<int64_t> target_generation;
  std::vector<model::Refusal> refusals;
  bool refused_unexpectedly = false;  // … of which one HAProxy refused for no reason hawk knows
};

struct Reconciler::WorkerState {
  int pid = 0;
  uint64_t epoch = 0;  // unique per WorkerState: a reused pid is another worker
  model::WorkerRole role = model::WorkerRole::kUnknown;
  bool relayed = true;  // the registry lets hawk send it commands (WorkerReport::not_relayed)
  Phase phase = Phase::kIdle;
  NextRun next = NextRun::kIncremental;
  bool run_again = false;  // kRunning: run again when this reconcile ends (a push came)
  bool uncertain = false;  // the last apply was cut short: map keys may differ from the summaries
  // After a failure, run again only once the registry has reported from a refresh with this
  // number or later (0: not waiting). A failure is often a reload closing the connection, and
  // the pid may then belong to another process: a retry sent before the registry looked would
  // put the old worker's changes on a new worker and count them as its own.
  uint64_t await_refresh = 0;
  int failures = 0;  // consecutive failed reconciles (the retry backs off)
  std::unique_ptr<uv::Timer> retry_timer;
  plan::PendingChanges pending;  // changes since the last reconcile started
  uint64_t synced_seq = 0;       // the push the last completed reconcile brought it to
  std::unique_ptr<Run> run;      // kRunning only
  StaleSet stale;
  model::WorkerSync sync;                       // stale is filled from `stale` when read
  std::string freeze_reply;                     // the reply that froze this worker
  absl::Time listed_at = absl::InfinitePast();  // when the registry first listed it
  bool awaiting_first_sync = false;             // born while hawk runs, and never in sync yet
};

Reconciler::Reconciler(uv_loop_t* loop, cli::MasterClient* client,
                       registry::WorkerRegistry* registry, const model::DesiredState* desired,
                       ReconcilerOptions options, std::function<absl::Time()> wall_clock)
    : loop_(loop),
      route_(client),
      registry_(registry),
      desired_(desired),
      options_(options),
      wall_clock_(std::move(wall_clock)),
      waiters_(
          loop, [this](uint64_t seq, int only_pid) { return PushComplete(seq, only_pid); },
          [this](uint64_t seq) { return OutcomeFor(seq); }),
      resync_timer_(loop) {}

Reconciler::~Reconciler() = default;

void Reconciler::Start() {
  workers_subscription_ = registry_->AddListener(
      [this](const model::WorkersReport& report, const registry::WorkerChanges& changes) {
        OnWorkers(report, changes);
      });
  resync_timer_.StartRepeating(options_.resync_interval, options_.resync_interval, [this] {
    // Drift repair: someone may have changed a worker behind hawk's back.
    for (auto& [pid, worker] : workers_) {
      RequireObservation(worker.get());
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

void Reconciler::RequireObservation(WorkerState* worker) {
  if (worker->next != NextRun::kSeed) worker->next = NextRun::kObserve;
}

Reconciler::WorkerState* Reconciler::FindPid(int pid) {
  auto it = workers_.find(pid);
  return it == workers_.end() ? nullptr : it->second.get();
}

Reconciler::WorkerState* Reconciler::Find(int pid, uint64_t epoch) {
  WorkerState* worker = FindPid(pid);
  return worker != nullptr && worker->epoch == epoch ? worker : nullptr;
}

absl::optional<WorkerView> Reconciler::View(int pid) const {
  auto it = workers_.find(pid);
  if (it == workers_.end()) return absl::nullopt;
  const WorkerState& w = *it->second;
  return WorkerView{w.epoch, w.role, w.relayed, w.phase == Phase::kRunning, &w.stale};
}

uint64_t Reconciler::Publish(const model::ChangeSummary& summary) {
  active_ = true;
  ++desired_seq_;
  if (!summary.servers.empty() || !summary.backends_created.empty() ||
      !summary.backends_dropped.empty()) {
    server_seq_ = desired_seq_;
  }
  publish_listeners_.Notify(desired_seq_);
  if (written_.has_value() && !written_->Merge(summary, *desired_, options_.max_pending_objects)) {
    written_.reset();
  }
  for (auto& [pid, worker] : workers_) {
    WorkerState& w = *worker;
    for (const std::string& backend : summary.backends_dropped) {
      w.stale.ForgetObject(absl::StrCat("backend/", backend));
    }
    if (!IsTarget(w)) {
      RequireObservation(&w);  // it misses this change: if it becomes a target, look at it
      continue;
    }
    if (w.next != NextRun::kIncremental) continue;  // a full reconcile is due anyway
    w.pending.Merge(summary, *desired_);
    if (w.pending.size() > options_.max_pending_objects) {
      w.pending.Clear();
      w.next = NextRun::kObserve;
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
  publish_listeners_.Notify(desired_seq_);
  written_.reset();  // no summary says what changed since the files were written
  for (auto& [pid, worker] : workers_) {
    RequireObservation(worker.get());
    worker->pending.Clear();
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
      // The registry looked after the failure: this is the same worker.
      state->await_refresh = 0;
      if (state->phase == Phase::kAwaitingRefresh) state->phase = Phase::kIdle;
    }
    if (state == nullptr) {
      auto fresh = std::make_unique<WorkerState>();
      fresh->pid = w.pid;
      fresh->epoch = next_epoch_++;
      // Workers present when hawk starts hold unknown state: observe them. A worker that
      // appears later was just started from the config file: seed it without observing.
      bool born = !first && std::find(changes.appeared.begin(), changes.appeared.end(), w.pid) !=
                                changes.appeared.end();
      fresh->next = born ? NextRun::kSeed : NextRun::kObserve;
      fresh->listed_at = wall_clock_();
      fresh->awaiting_first_sync = born;  // only workers born while hawk runs are timed
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
  for (auto& [pid, worker] : workers_) {
    if (worker->phase == Phase::kIdle && worker->synced_seq < desired_seq_) Kick(worker.get());
  }
  waiters_.Check();
}

void Reconciler::Kick(WorkerState* worker) {
  if (!active_ || !IsTarget(*worker)) return;
  switch (worker->phase) {
    case Phase::kRunning:
      worker->run_again = true;  // coalesced: the next run takes whatever is pending then
      return;
    case Phase::kAwaitingRefresh:
      return;
    case Phase::kBackoff:
      // Before the registry looked again the pid may be another process's: wait. After, a push
      // need not wait for the retry timer.
      if (worker->await_refresh != 0) return;
      worker->retry_timer->Stop();
      worker->phase = Phase::kIdle;
      break;
    case Phase::kIdle:
      HAWK_CHECK(worker->await_refresh == 0 && worker->run == nullptr);
      break;
  }
  bool work = worker->next != NextRun::kIncremental || !worker->pending.empty() ||
              worker->synced_seq < desired_seq_;
  if (!work) return;
  worker->phase = Phase::kRunning;
  worker->run_again = false;
  switch (worker->next) {
    case NextRun::kSeed:
      Seed(worker);
      return;
    case NextRun::kObserve:
      Observe(worker);
      return;
    case NextRun::kIncremental:
      break;
  }
  ++stats_.incremental_reconciles;
  worker->run = NewRun(/*full=*/false);
  Run& run = *worker->run;
  run.taken = std::move(worker->pending);
  worker->pending = plan::PendingChanges();
  plan::PlanOptions options = PlanOptionsFor(*worker);
  options.uncertain = worker->uncertain;
  absl::flat_hash_set<std::string> stale_servers = worker->stale.Servers();
  options.stale_servers = &stale_servers;
  plan::Plan plan = plan::PlanChanges(*desired_, run.taken, options);
  worker->stale.ForgetChanged(run.taken);
  Apply(worker, std::move(plan));
}

std::unique_ptr<Reconciler::Run> Reconciler::NewRun(bool full) const {
  auto run = std::make_unique<Run>();
  run->full = full;
  run->target_seq = desired_seq_;
  run->target_version = desired_->version;
  run->target_generation = desired_->generation;
  return run;
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
  written_.emplace(std::move(maps), std::move(acls));
}

bool Reconciler::TableUnchangedSinceWritten(bool acl, const std::string& name) const {
  return written_.has_value() && written_->Unchanged(acl, name);
}

void Reconciler::Seed(WorkerState* worker) {
  worker->next = NextRun::kIncremental;
  worker->pending.Clear();
  worker->stale.Clear();
  ++stats_.seeds;
  worker->run = NewRun(/*full=*/true);
  if (written_.has_value() && !written_->empty()) {
    // With written tables, first list the worker's maps and ACLs: confirm what it read.
    Submit(worker, TableListingCommands(worker->pid), &Reconciler::OnTablesListed);
    return;
  }
  Apply(worker, plan::PlanFullSeed(*desired_, nullptr, PlanOptionsFor(*worker)));
}

void Reconciler::OnTablesListed(int pid, uint64_t epoch, std::vector<cli::CommandResult> results) {
  WorkerState* worker = Find(pid, epoch);
  if (worker == nullptr) return;
  if (absl::optional<std::string> error = TransportFailure(TableListingCommands(pid), results)) {
    // Nothing was sent yet: the retry is this seed again, not an observation.
    Fail(worker, *std::move(error));
    worker->next = NextRun::kSeed;
    worker->uncertain = false;
    return;
  }
  // Planned against the state as it is now: pushes that came while listing are in it.
  worker->run = NewRun(/*full=*/true);
  worker->pending.Clear();
  if (!written_.has_value()) {  // forgotten meanwhile
    Apply(worker, plan::PlanFullSeed(*desired_, nullptr, PlanOptionsFor(*worker)));
    return;
  }
  // The tables the worker read from their files get only the changes since; the others, whole.
  plan::TablesAtBirth born;
  born.since = &written_->since();
  born.maps = TablesReadFromFiles(results[0], /*acl=*/false, written_->maps());
  born.acls = TablesReadFromFiles(results[1], /*acl=*/true, written_->acls());
  stats_.tables_from_files += born.maps.size() + born.acls.size();
  base::LogDebug("reconcile worker ", pid, ": seeded with ", born.maps.size(), " of ",
                 written_->maps().size(), " written maps and ", born.acls.size(), " of ",
                 written_->acls().size(), " written ACLs read from their files");
  Apply(worker, plan::PlanFullSeed(*desired_, &born, PlanOptionsFor(*worker)));
}

void Reconciler::Observe(WorkerState* worker) {
  ++stats_.observes;
  worker->next = NextRun::kIncremental;
  worker->pending.Clear();  // the diff covers every change up to when the replies are planned
  int pid = worker->pid;
  std::vector<cli::Command> commands = ObservationCommands(*desired_, pid);
  worker->run = NewRun(/*full=*/true);
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
  worker->run = NewRun(/*full=*/true);
  worker->pending.Clear();
  absl::StatusOr<plan::ObservedWorker> observed = ObservedFromReplies(*desired_, results);
  if (!observed.ok()) {
    Fail(worker, std::string(observed.status().message()));
    worker->next = NextRun::kObserve;
    return;
  }
  worker->uncertain = false;
  worker->stale.Clear();
  Apply(worker, plan::PlanWorker(*desired_, *observed, PlanOptionsFor(*worker)));
}

void Reconciler::Submit(WorkerState* worker, std::vector<cli::Command> commands,
                        void (Reconciler::*then)(int, uint64_t, std::vector<cli::CommandResult>)) {
  HAWK_CHECK(worker->phase == Phase::kRunning && worker->run != nullptr);
  stats_.commands_sent += commands.size();
  absl::Duration timeout =
      options_.batch_timeout + kPerCommandBudget * static_cast<int64_t>(commands.size());
  int pid = worker->pid;
  uint64_t epoch = worker->epoch;
  if (route_.Direct(pid, worker->role)) ++stats_.batches_via_worker_socket;
  // A seed or an observation is whole-state work: never in the way of a push (BatchPriority).
  cli::BatchPriority priority =
      worker->run->full ? cli::BatchPriority::kBulk : cli::BatchPriority::kInteractive;
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
  route_.For(pid, worker->role)->Submit(std::move(commands), std::move(done), timeout, priority);
}

void Reconciler::Apply(WorkerState* worker, plan::Plan plan) {
  Run& run = *worker->run;
  run.plan = std::move(plan);
  worker->stale.AddAll(run.plan.stale);
  int pid = worker->pid;
  plan::AppendWithheld(pid, run.plan, worker->freeze_reply, &run.refusals);
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
      if (reply.unexpected) worker->run->refused_unexpectedly = true;
      break;
  }
  worker->run->refusals.push_back(model::Refusal{action.object(), command.text, reply.text});
  if (reply.stale) worker->stale.Add(*std::move(reply.stale));
  return reply.verdict;
}

void Reconciler::RecordRefusal(WorkerState* worker, const plan::Action& action, std::string command,
                               std::string reply) {
  worker->stale.Add(model::StaleObject{action.object(), action.field(), "", "",
                                       absl::StrCat("cannot be sent: ", reply)});
  worker->run->refusals.push_back(
      model::Refusal{action.object(), std::move(command), std::move(reply)});
}

void Reconciler::Finish(WorkerState* worker) {
  HAWK_CHECK(worker->phase == Phase::kRunning && worker->run != nullptr);
  std::unique_ptr<Run> run = std::move(worker->run);
  model::WorkerSync& sync = worker->sync;
  worker->failures = 0;
  worker->uncertain = false;
  sync.managed = true;
  sync.error.clear();
  sync.refused = std::move(run->refusals);
  sync.in_sync = worker->stale.empty();
  if (sync.in_sync) {
    sync.applied_version = run->target_version;
    sync.applied_generation = run->target_generation;
  }
  ReconcileEnd end{worker->pid, worker->epoch,     worker->role,       /*ok=*/true,
                   run->full,   worker->listed_at, worker->synced_seq, run->target_seq};
  end.first_sync = worker->awaiting_first_sync && sync.in_sync;
  if (end.first_sync) worker->awaiting_first_sync = false;
  end.stale_servers = worker->stale.HasServers();
  end.finished_at = wall_clock_();
  worker->synced_seq = run->target_seq;
  // A refusal HAProxy gave for no reason hawk knows: what the worker holds may differ from what
  // hawk believes. Look at everything once (not after a full reconcile: that would loop).
  if (run->refused_unexpectedly && !run->full) {
    worker->next = NextRun::kObserve;
    worker->run_again = true;
  }
  run.reset();  // a full reconcile's replies and commands go before its subscribers run
  worker->phase = Phase::kIdle;
  EndReconcile(worker, end);
}

void Reconciler::Fail(WorkerState* worker, std::string error) {
  HAWK_CHECK(worker->phase == Phase::kRunning && worker->run != nullptr);
  base::LogDebug("reconcile worker ", worker->pid, ": ", error);
  std::unique_ptr<Run> run = std::move(worker->run);
  worker->sync.error = std::move(error);
  if (run->full) {
    worker->next = NextRun::kObserve;  // redo the whole reconcile: part of it may have run
  } else {
    // Put back what this run carried, before what arrived since.
    plan::PendingChanges later = std::move(worker->pending);
    worker->pending = std::move(run->taken);
    worker->pending.MergeLater(later, *desired_);
  }
  worker->uncertain = true;
  ReconcileEnd end{worker->pid, worker->epoch, worker->role, /*ok=*/false, run->full};
  run.reset();
  absl::Duration delay = std::min(kMaxRetry, kFirstRetry * (1 << std::min(worker->failures, 8)));
  ++worker->failures;
  if (!worker->retry_timer) worker->retry_timer = std::make_unique<uv::Timer>(loop_);
  worker->phase = Phase::kBackoff;
  worker->await_refresh = registry_->refreshes_begun() + 1;
  worker->retry_timer->Start(
      delay, [this, pid = worker->pid, epoch = worker->epoch] { OnRetryDue(pid, epoch); });
  EndReconcile(worker, end);
}

void Reconciler::OnRetryDue(int pid, uint64_t epoch) {
  WorkerState* worker = Find(pid, epoch);
  if (worker == nullptr || worker->phase != Phase::kBackoff) return;
  if (worker->await_refresh != 0) {
    worker->phase = Phase::kAwaitingRefresh;
    registry_->RefreshNow();  // OnWorkers runs it once the registry has looked
    return;
  }
  worker->phase = Phase::kIdle;
  Kick(worker);
}

void Reconciler::EndReconcile(WorkerState* worker, ReconcileEnd end) {
  int pid = worker->pid;
  uint64_t epoch = worker->epoch;
  Notify();
  waiters_.Check();
  if (WorkerState* again = Find(pid, epoch);
      again != nullptr && again->phase == Phase::kIdle && again->run_again) {
    Kick(again);
  }
  // After the next reconcile started: the subscribers' own batches (a `show sess`) queue
  // behind it rather than before it.
  reconcile_listeners_.Notify(end);
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
                                              state.phase == Phase::kRunning, state.sync,
                                              state.stale));
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
    if (w.next == NextRun::kSeed) {
      // Tables read from files hawk wrote get only the changes since; the seed confirms which
      // ones the worker read when it runs, so the preview shows them in full.
      preview.basis = PreviewBasis::kSeed;
      plan = plan::PlanFullSeed(*desired_, nullptr, options);
    } else if (w.next == NextRun::kObserve) {
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
    plan::AppendWithheld(pid, plan, w.freeze_reply, &preview.refused);
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

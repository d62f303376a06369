#include "agent/reconcile/worker.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "agent/base/check.h"
#include "agent/base/log.h"
#include "agent/parse/show_version.h"
#include "agent/plan/commands.h"
#include "agent/reconcile/observation.h"
#include "agent/reconcile/reply_verdict.h"

namespace hawk::reconcile {
namespace {

// A reconcile cut short (a reload closed the connection, the worker was not reachable yet) is
// retried after 5 ms, then 10, 20, … up to 1 s while it keeps failing: a reload is usually over
// within milliseconds, and the new worker must be seeded at once.
constexpr absl::Duration kFirstRetry = absl::Milliseconds(5);
constexpr absl::Duration kMaxRetry = absl::Seconds(1);
// Added to a batch's deadline per command it carries.
constexpr absl::Duration kPerCommandBudget = absl::Milliseconds(2);
// How often hawk tries again to delete a server that still has connections (`del server` refuses
// it until the last one ends; `wait srv-removable` would hold a master CLI slot meanwhile).
constexpr absl::Duration kDrainPoll = absl::Seconds(1);

}  // namespace

// What the worker's reconciles are doing: one phase at a time, the transitions checked
// (HAWK_CHECK), as Node's handle_wrap keeps its handle states.
enum class Worker::Phase {
  kIdle,     // nothing runs; Kick starts a reconcile when there is work
  kRunning,  // a reconcile is in flight: `run_` holds it
  kBackoff,  // the last one failed: the retry timer runs it again (Kick may, once the registry
             // has looked: await_refresh_ == 0)
  kAwaitingRefresh,  // the retry is due, but the registry has not looked since the failure
};

// What the next reconcile does.
enum class Worker::NextRun {
  kIncremental,  // what `pending_` holds, and no more: the worker held the state before
  kObserve,      // what it holds is unknown: look at everything, then plan the difference
  kSeed,         // born from the configuration file: plan the whole state without looking
};

// One reconcile in flight: the plan, the commands sent for it and what each one was for, and
// what the replies said.
struct Worker::Run {
  bool full = false;  // a seed or an observation: the whole state was planned
  plan::Plan plan;
  plan::PendingChanges taken;  // incremental: the changes this run applies
  SentCommands sent;
  // The push it brings the worker to, and that push's version and generation.
  uint64_t target_seq = 0;
  std::string target_version;
  absl::optional<int64_t> target_generation;
  std::vector<model::Refusal> refusals;
  bool refused_unexpectedly = false;  // … of which one HAProxy refused for no reason hawk knows
};

Worker::Worker(WorkerShared* shared, int pid, uint64_t epoch, bool born)
    : shared_(shared),
      pid_(pid),
      epoch_(epoch),
      phase_(Phase::kIdle),
      next_(born ? NextRun::kSeed : NextRun::kObserve),
      retry_timer_(shared->loop),
      drain_timer_(shared->loop),
      listed_at_(shared->wall_clock()),
      awaiting_first_sync_(born) {  // only workers born while hawk runs are timed
  // The servers hawk wrote into the configuration: this worker holds them if it started from the
  // file since, and they are hawk's to delete either way (`del server` of a server it lacks
  // answers "No such server.": gone, as wanted).
  if (shared_->servers_in_config != nullptr) {
    servers_ = CreatedServers(shared_->servers_in_config->servers());
  }
  if (shared_->active) DesiredReplaced();
}

void Worker::DesiredReplaced() { servers_.Replaced(*shared_->desired); }

Worker::~Worker() = default;

bool Worker::idle() const { return phase_ == Phase::kIdle; }

void Worker::Listed(model::WorkerRole role, bool relayed, bool grace_over) {
  role_ = role;
  relayed_ = relayed;
  grace_over_ = grace_over;
}

void Worker::RegistryLooked(uint64_t refresh) {
  if (await_refresh_ == 0 || refresh < await_refresh_) return;
  // The registry looked after the failure: this is the same worker.
  await_refresh_ = 0;
  if (phase_ == Phase::kAwaitingRefresh) phase_ = Phase::kIdle;
}

bool Worker::IsTarget() const {
  // A worker hawk sends nothing more through the master (its exit may be near: see
  // registry/relay_policy.h) is no target: pushes do not wait for it.
  if (!relayed_) return false;
  if (role_ == model::WorkerRole::kCurrent) return true;
  return role_ == model::WorkerRole::kLeaving && shared_->options.leaving_workers;
}

void Worker::RequireObservation() {
  if (next_ != NextRun::kSeed) next_ = NextRun::kObserve;
}

void Worker::Publish(const model::ChangeSummary& summary) {
  for (const std::string& backend : summary.backends_dropped) {
    stale_.ForgetObject(absl::StrCat("backend/", backend));
  }
  servers_.Changed(summary);
  if (!IsTarget()) {
    RequireObservation();  // it misses this change: if it becomes a target, look at it
    return;
  }
  if (next_ != NextRun::kIncremental) return;  // a full reconcile is due anyway
  pending_.Merge(summary, *shared_->desired);
  if (pending_.size() > shared_->options.max_pending_objects) {
    pending_.Clear();
    next_ = NextRun::kObserve;
  }
}

void Worker::Kick() {
  if (!shared_->active || !IsTarget()) return;
  switch (phase_) {
    case Phase::kRunning:
      run_again_ = true;  // coalesced: the next run takes whatever is pending then
      return;
    case Phase::kAwaitingRefresh:
      return;
    case Phase::kBackoff:
      // Before the registry looked again the pid may be another process's: wait. After, a push
      // need not wait for the retry timer.
      if (await_refresh_ != 0) return;
      retry_timer_.Stop();
      phase_ = Phase::kIdle;
      break;
    case Phase::kIdle:
      HAWK_CHECK(await_refresh_ == 0 && run_ == nullptr);
      break;
  }
  if (next_ == NextRun::kIncremental && pending_.empty() && synced_seq_ >= shared_->desired_seq &&
      !drain_poll_due_) {
    return;  // nothing to do
  }
  phase_ = Phase::kRunning;
  run_again_ = false;
  drain_poll_due_ = false;  // every run plans the deletes (PlanOptions)
  switch (next_) {
    case NextRun::kSeed:
      Seed();
      return;
    case NextRun::kObserve:
      Observe();
      return;
    case NextRun::kIncremental:
      break;
  }
  ++shared_->stats.incremental_reconciles;
  run_ = NewRun(/*full=*/false);
  run_->taken = std::move(pending_);
  pending_ = plan::PendingChanges();
  plan::PlanOptions options = PlanOptions();
  options.uncertain = uncertain_;
  absl::flat_hash_set<std::string> stale_servers = stale_.Servers();
  options.stale_servers = &stale_servers;
  plan::Plan plan = plan::PlanChanges(*shared_->desired, run_->taken, options);
  stale_.ForgetChanged(run_->taken);
  Apply(std::move(plan));
}

std::unique_ptr<Worker::Run> Worker::NewRun(bool full) const {
  auto run = std::make_unique<Run>();
  run->full = full;
  run->target_seq = shared_->desired_seq;
  run->target_version = shared_->desired->version;
  run->target_generation = shared_->desired->generation;
  return run;
}

plan::PlanOptions Worker::PlanOptions() const {
  plan::PlanOptions options;
  options.servers_frozen = sync_.frozen;
  options.delete_servers = &servers_.to_delete();
  options.create_servers = !grace_over_;
  // The master's version stands for its workers' (one binary); unknown counts as indexed.
  absl::StatusOr<parse::VersionNumbers> version =
      parse::ParseVersionNumbers(shared_->registry->report().master.version);
  if (version.ok() && parse::VersionLess(*version, parse::VersionNumbers{2, 9, 0})) {
    options.entry_lookup = model::EntryLookup::kWalksTable;
  }
  return options;
}

void Worker::Seed() {
  next_ = NextRun::kIncremental;
  pending_.Clear();
  stale_.Clear();
  ++shared_->stats.seeds;
  run_ = NewRun(/*full=*/true);
  if (const plan::WrittenTables* written = BornWith(); written != nullptr && !written->empty()) {
    // With written tables, first list the worker's maps and ACLs: confirm what it read.
    Submit(TableListingCommands(pid_), &Worker::OnTablesListed);
    return;
  }
  Apply(plan::PlanFullSeed(*shared_->desired, nullptr, PlanOptions()));
}

void Worker::OnTablesListed(std::vector<cli::CommandResult> results) {
  if (absl::optional<std::string> error = TransportFailure(TableListingCommands(pid_), results)) {
    // Nothing was sent yet: the retry is this seed again, not an observation.
    Fail(*std::move(error));
    next_ = NextRun::kSeed;
    uncertain_ = false;
    return;
  }
  // Planned against the state as it is now: pushes that came while listing are in it.
  run_ = NewRun(/*full=*/true);
  pending_.Clear();
  const plan::WrittenTables* written = BornWith();
  if (written == nullptr) {  // forgotten meanwhile
    Apply(plan::PlanFullSeed(*shared_->desired, nullptr, PlanOptions()));
    return;
  }
  // The tables the worker read from their files get only the changes since; the others, whole.
  plan::TablesAtBirth born;
  born.since = &written->since();
  born.maps = TablesReadFromFiles(results[0], /*acl=*/false, written->maps());
  born.acls = TablesReadFromFiles(results[1], /*acl=*/true, written->acls());
  shared_->stats.tables_from_files += born.maps.size() + born.acls.size();
  base::LogDebug("reconcile worker ", pid_, ": seeded with ", born.maps.size(), " of ",
                 written->maps().size(), " written maps and ", born.acls.size(), " of ",
                 written->acls().size(), " written ACLs read from their files");
  Apply(plan::PlanFullSeed(*shared_->desired, &born, PlanOptions()));
}

void Worker::Observe() {
  ++shared_->stats.observes;
  next_ = NextRun::kIncremental;
  pending_.Clear();  // the diff covers every change up to when the replies are planned
  std::vector<cli::Command> commands = ObservationCommands(*shared_->desired, pid_);
  run_ = NewRun(/*full=*/true);
  if (commands.empty()) {
    OnObserved({});
    return;
  }
  Submit(std::move(commands), &Worker::OnObserved);
}

void Worker::OnObserved(std::vector<cli::CommandResult> results) {
  // Planned against the state as it is now: pushes that came while observing are in it.
  run_ = NewRun(/*full=*/true);
  pending_.Clear();
  absl::StatusOr<plan::ObservedWorker> observed = ObservedFromReplies(*shared_->desired, results);
  if (!observed.ok()) {
    Fail(std::string(observed.status().message()));
    return;
  }
  uncertain_ = false;
  stale_.Clear();
  Apply(plan::PlanWorker(*shared_->desired, *observed, PlanOptions()));
}

void Worker::Submit(std::vector<cli::Command> commands,
                    void (Worker::*then)(std::vector<cli::CommandResult>)) {
  HAWK_CHECK(phase_ == Phase::kRunning && run_ != nullptr);
  shared_->stats.commands_sent += commands.size();
  absl::Duration timeout =
      shared_->options.batch_timeout + kPerCommandBudget * static_cast<int64_t>(commands.size());
  if (shared_->route.Direct(pid_, role_)) ++shared_->stats.batches_via_worker_socket;
  // A seed or an observation is whole-state work: never in the way of a push (BatchPriority).
  cli::BatchPriority priority =
      run_->full ? cli::BatchPriority::kBulk : cli::BatchPriority::kInteractive;
  // Guarded: the batch may still be queued in the client when the worker is gone.
  auto done = lifetime_.Guard([this, then](std::vector<cli::CommandResult> results) {
    // `Can't find the target PID`: the worker exited (or is still starting). The registry looks
    // now rather than at its next poll, so that pushes stop waiting for a worker that is gone.
    if (std::any_of(results.begin(), results.end(),
                    [](const auto& r) { return absl::IsNotFound(r.status()); })) {
      shared_->registry->RefreshNow();
    }
    (this->*then)(std::move(results));
  });
  shared_->route.For(pid_, role_)->Submit(std::move(commands), std::move(done), timeout, priority);
}

void Worker::Apply(plan::Plan plan) {
  Run& run = *run_;
  run.plan = std::move(plan);
  stale_.AddAll(run.plan.stale);
  plan::AppendWithheld(pid_, run.plan, freeze_reply_, &run.refusals);
  plan::PlannedCommands batch = plan::FirstBatch(pid_, run.plan);
  Judged unsendable;
  for (const auto& [a, reason] : batch.unsendable) {
    JudgeUnsendable(run.plan.actions[a], "", reason, &unsendable);
  }
  Take(std::move(unsendable));
  run.sent = SentCommands{std::move(batch.commands), std::move(batch.action_of)};
  if (run.sent.commands.empty()) {
    Finish();
    return;
  }
  Submit(run.sent.commands, &Worker::OnFirstPhase);
}

void Worker::OnFirstPhase(std::vector<cli::CommandResult> results) {
  if (absl::optional<std::string> error = TransportFailure(run_->sent.commands, results)) {
    Fail(*std::move(error));
    return;
  }
  Judged judged =
      JudgeFirstPhase(pid_, run_->plan, run_->sent, results, role_ == model::WorkerRole::kLeaving,
                      *shared_->desired, !grace_over_);
  run_->sent = std::move(judged.next);
  for (plan::Action& action : judged.next_actions) run_->plan.actions.push_back(std::move(action));
  Take(std::move(judged));
  if (run_->sent.commands.empty()) {
    Finish();
    return;
  }
  Submit(run_->sent.commands, &Worker::OnSecondPhase);
}

void Worker::OnSecondPhase(std::vector<cli::CommandResult> results) {
  if (absl::optional<std::string> error = TransportFailure(run_->sent.commands, results)) {
    Fail(*std::move(error));
    return;
  }
  Take(JudgeSecondPhase(run_->plan, run_->sent, results, role_ == model::WorkerRole::kLeaving));
  Finish();
}

void Worker::Take(Judged judged) {
  if (judged.frozen_by.has_value() && !sync_.frozen) {
    sync_.frozen = true;
    sync_.frozen_since = shared_->wall_clock();
    freeze_reply_ = *judged.frozen_by;
    base::LogInfo("worker ", pid_, " is frozen: \"", freeze_reply_,
                  "\"; its servers stay as they are, maps and ACLs are still updated");
  }
  if (judged.refused_unexpectedly) run_->refused_unexpectedly = true;
  for (model::Refusal& refusal : judged.refusals) run_->refusals.push_back(std::move(refusal));
  for (model::StaleObject& item : judged.stale) stale_.Add(std::move(item));
  if (servers_.Take(judged)) {
    drain_poll_due_ = true;  // a delete is due at once
    run_again_ = true;
  }
}

void Worker::Finish() {
  HAWK_CHECK(phase_ == Phase::kRunning && run_ != nullptr);
  std::unique_ptr<Run> run = std::move(run_);
  failures_ = 0;
  uncertain_ = false;
  sync_.managed = true;
  sync_.error.clear();
  sync_.refused = std::move(run->refusals);
  sync_.in_sync = stale_.empty();
  if (sync_.in_sync) {
    sync_.applied_version = run->target_version;
    sync_.applied_generation = run->target_generation;
  }
  ReconcileEnd end{pid_,      epoch_,     role_,       /*ok=*/true,
                   run->full, listed_at_, synced_seq_, run->target_seq};
  end.first_sync = awaiting_first_sync_ && sync_.in_sync;
  if (end.first_sync) awaiting_first_sync_ = false;
  end.stale_servers = stale_.HasServers();
  end.finished_at = shared_->wall_clock();
  synced_seq_ = run->target_seq;
  // A refusal HAProxy gave for no reason hawk knows: what the worker holds may differ from what
  // hawk believes. Look at everything once (not after a full reconcile: that would loop).
  if (run->refused_unexpectedly && !run->full) {
    next_ = NextRun::kObserve;
    run_again_ = true;
  }
  run.reset();  // a full reconcile's replies and commands go before anyone else runs
  phase_ = Phase::kIdle;
  if (servers_.draining() && !drain_timer_.active()) {
    drain_timer_.Start(kDrainPoll, [this] {
      drain_poll_due_ = true;
      Kick();
    });
  }
  End(end);
}

void Worker::Fail(std::string error) {
  HAWK_CHECK(phase_ == Phase::kRunning && run_ != nullptr);
  base::LogDebug("reconcile worker ", pid_, ": ", error);
  std::unique_ptr<Run> run = std::move(run_);
  sync_.error = std::move(error);
  if (run->full) {
    next_ = NextRun::kObserve;  // redo the whole reconcile: part of it may have run
  } else {
    // Put back what this run carried, before what arrived since.
    plan::PendingChanges later = std::move(pending_);
    pending_ = std::move(run->taken);
    pending_.MergeLater(later, *shared_->desired);
  }
  uncertain_ = true;
  ReconcileEnd end{pid_, epoch_, role_, /*ok=*/false, run->full};
  run.reset();
  absl::Duration delay = std::min(kMaxRetry, kFirstRetry * (1 << std::min(failures_, 8)));
  ++failures_;
  phase_ = Phase::kBackoff;
  await_refresh_ = shared_->registry->refreshes_begun() + 1;
  retry_timer_.Start(delay, [this] { OnRetryDue(); });
  End(end);
}

void Worker::OnRetryDue() {
  if (phase_ != Phase::kBackoff) return;
  if (await_refresh_ != 0) {
    phase_ = Phase::kAwaitingRefresh;
    shared_->registry->RefreshNow();  // the reconciler kicks it once the registry has looked
    return;
  }
  phase_ = Phase::kIdle;
  Kick();
}

void Worker::End(const ReconcileEnd& end) {
  base::AliveToken alive = lifetime_.token();
  shared_->ended();  // answers waiters: may remove this worker
  if (alive.alive() && phase_ == Phase::kIdle && run_again_) Kick();
  shared_->subscribers(end);
}

WorkerView Worker::View() const {
  return WorkerView{epoch_, role_, relayed_, phase_ == Phase::kRunning, &stale_};
}

WorkerOutcome Worker::OutcomeFor(uint64_t seq) const {
  return OutcomeOnWorker(pid_, role_, synced_seq_ >= seq, phase_ == Phase::kRunning, sync_, stale_);
}

void Worker::Annotate(model::WorkerReport* report) const {
  report->sync = sync_;
  report->sync.stale = stale_.Sorted();
  report->sync.created_servers = servers_.CreatedNames();
  report->sync.draining_servers = servers_.DrainingNames();
  report->sync.managed = shared_->active && IsTarget();
}

WorkerPreview Worker::Preview(const model::ChangeSummary& summary) const {
  WorkerPreview preview;
  preview.pid = pid_;
  preview.role = role_;
  plan::PlanOptions options = PlanOptions();
  plan::Plan plan;
  switch (next_) {
    case NextRun::kSeed:
      // Tables read from files hawk wrote get only the changes since; the seed confirms which
      // ones the worker read when it runs, so the preview shows them in full.
      preview.basis = PreviewBasis::kSeed;
      plan = plan::PlanFullSeed(*shared_->desired, nullptr, options);
      break;
    case NextRun::kObserve:
      preview.basis = PreviewBasis::kObserve;
      return preview;
    case NextRun::kIncremental: {
      // The next incremental run takes what is pending now and this change (a run in flight
      // finishes first with what it took), as Publish merges it.
      plan::PendingChanges pending = pending_;
      pending.Merge(summary, *shared_->desired);
      if (pending.size() > shared_->options.max_pending_objects) {
        preview.basis = PreviewBasis::kObserve;
        return preview;
      }
      options.uncertain = uncertain_;
      absl::flat_hash_set<std::string> stale_servers = stale_.Servers();
      options.stale_servers = &stale_servers;
      plan = plan::PlanChanges(*shared_->desired, pending, options);
      break;
    }
  }
  DescribePlan(pid_, std::move(plan), freeze_reply_, &preview);
  return preview;
}

}  // namespace hawk::reconcile

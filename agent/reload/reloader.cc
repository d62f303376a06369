#include "agent/reload/reloader.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/base/log.h"
#include "agent/parse/show_proc.h"

namespace hawk::reload {
namespace {

// While a verdict is pending, the worker list is polled this often.
constexpr absl::Duration kVerdictPoll = absl::Milliseconds(5);
// `Another reload is still in progress.` (3.1+): try again after this long.
constexpr absl::Duration kBusyRetry = absl::Milliseconds(100);
// While the master is briefly unreachable, the gate looks again this often.
constexpr absl::Duration kMasterPoll = absl::Milliseconds(20);

}  // namespace

struct Reloader::Round {
  uint64_t id = 0;
  std::vector<Pending> requests;
  absl::optional<std::string> config;  // the latest configuration the requests carried
  absl::Time started_at;
  absl::optional<absl::Time> reload_sent_at;  // nullopt until `reload` is sent
  std::string log;
  int presync_pid = 0;
  ReloadBaseline baseline;
  parse::ReloadReply reply;
  bool awaiting = false;       // `reload` sent: a verdict comes from the reports
  bool noted_waiting = false;  // the log says the round waited for the master
};

Reloader::Reloader(uv_loop_t* loop, cli::MasterClient* client, registry::WorkerRegistry* registry,
                   reconcile::Reconciler* reconciler, ReloaderOptions options,
                   std::function<absl::Time()> clock)
    : client_(client),
      registry_(registry),
      reconciler_(reconciler),
      options_(std::move(options)),
      clock_(std::move(clock)),
      config_(loop, ConfigStageOptions{options_.config_path, options_.haproxy_binary,
                                       options_.write_servers, options_.check_timeout,
                                       options_.servers_in_config}),
      worker_files_(client, registry, reconciler,
                    WorkerFilesOptions{options_.server_state_file, options_.table_files}, clock_),
      start_timer_(loop),
      step_timer_(loop),
      deadline_(loop),
      history_(options_.history_size) {}

// The round in progress goes with its candidate file (removed) and its `haproxy -c` (killed).
Reloader::~Reloader() = default;

void Reloader::Start() {
  workers_subscription_ =
      registry_->AddListener([this](const model::WorkersReport& report,
                                    const registry::WorkerChanges&) { OnWorkers(report); });
  // Unreachable since hawk started, until the first connection.
  master_unreachable_since_ = clock_();
  master_failures_base_ = client_->stats().connect_failures;
  reachable_subscription_ = client_->AddReachableListener([this] {
    master_ever_reached_ = true;
    master_unreachable_since_.reset();
  });
  lost_subscription_ = client_->AddConnectionLostListener([this] {
    if (client_->reachable() || master_unreachable_since_.has_value()) return;
    master_unreachable_since_ = clock_();
    master_failures_base_ = client_->stats().connect_failures;
  });
  config_.Start();
}

std::vector<std::string> Reloader::Warnings() const {
  return config_.Warnings(reconciler_->desired(), reconciler_->latest_server_seq());
}

void Reloader::Request(absl::optional<std::string> config, Done done) {
  pending_.push_back(Pending{std::move(config), std::move(done)});
  MaybeStartRound();
}

void Reloader::MaybeStartRound() {
  if (round_ || pending_.empty() || start_timer_.active()) return;
  // Even without a delay the round starts on the next loop turn, so that requests that arrived
  // together are covered by one reload.
  absl::Duration delay =
      std::max(last_round_start_ + options_.min_interval - clock_(), absl::ZeroDuration());
  start_timer_.Start(delay, [this] { StartRound(); });
}

void Reloader::Note(absl::string_view text) {
  if (!round_) return;
  absl::StrAppend(&round_->log, text, "\n");
}

std::function<void(absl::string_view)> Reloader::NoteFor(uint64_t id) {
  return [this, id](absl::string_view line) {
    if (round_ && round_->id == id) Note(line);
  };
}

void Reloader::StartRound() {
  round_ = std::make_unique<Round>();
  round_->id = next_id_++;
  round_->requests = std::move(pending_);
  pending_.clear();
  round_->started_at = clock_();
  last_round_start_ = round_->started_at;
  for (Pending& request : round_->requests) {
    if (request.config.has_value()) round_->config = std::move(request.config);
  }
  if (round_->config.has_value() && options_.config_path.empty()) {
    Finish(ReloadResult::kFailed,
           absl::InvalidArgumentError("config: hawk was started without --haproxy-config, so it "
                                      "cannot write a configuration"));
    return;
  }
  // Before anything is checked or written: a reload that cannot reach HAProxy changes nothing.
  AwaitMaster([this] { PrepareConfig(); });
}

MasterView Reloader::ViewOfMaster() {
  MasterView view;
  view.reachable = client_->reachable();
  absl::Time now = clock_();
  if (view.reachable) {
    master_ever_reached_ = true;
    master_unreachable_since_.reset();
  } else if (!master_unreachable_since_.has_value()) {
    // Unreachable without a lost connection (hawk gave one up): from now on.
    master_unreachable_since_ = now;
    master_failures_base_ = client_->stats().connect_failures;
  }
  view.ever_reached = master_ever_reached_;
  uint64_t failures = client_->stats().connect_failures;
  view.connect_failures = failures > master_failures_base_ ? failures - master_failures_base_ : 0;
  if (!view.reachable) {
    view.unreachable_for = std::max(now - *master_unreachable_since_, absl::ZeroDuration());
  }
  return view;
}

void Reloader::AwaitMaster(std::function<void()> then) {
  absl::Duration grace = std::min(options_.unreachable_grace, options_.reload_timeout);
  MasterView master = ViewOfMaster();
  switch (JudgeMaster(master, grace)) {
    case MasterVerdict::kGo:
      then();
      return;
    case MasterVerdict::kFail:
      Finish(ReloadResult::kUnreachable,
             absl::UnavailableError(absl::StrCat(
                 "reload not sent: ", client_->last_error().message(),
                 master.ever_reached
                     ? absl::StrCat(" (unreachable for ",
                                    absl::ToInt64Milliseconds(master.unreachable_for), " ms)")
                     : std::string(" (never reached since hawk started)"))));
      return;
    case MasterVerdict::kWait:
      break;
  }
  if (!round_->noted_waiting) {
    round_->noted_waiting = true;
    Note(absl::StrCat("master CLI unreachable (", client_->last_error().message(),
                      "): waiting up to ", absl::ToInt64Milliseconds(grace), " ms for it"));
  }
  uint64_t id = round_->id;
  step_timer_.Start(kMasterPoll, [this, id, then = std::move(then)]() mutable {
    if (!round_ || round_->id != id) return;
    AwaitMaster(std::move(then));
  });
}

void Reloader::PrepareConfig() {
  uint64_t id = round_->id;
  config_.Prepare(std::move(round_->config), reconciler_->desired(),
                  reconciler_->latest_server_seq(), NoteFor(id), [this, id](absl::Status status) {
                    if (!round_ || round_->id != id) return;
                    if (!status.ok()) {
                      Finish(ReloadResult::kFailed, std::move(status));
                      return;
                    }
                    Presync();
                  });
}

void Reloader::Presync() {
  const model::WorkerReport* current = registry_->report().Current();
  if (current == nullptr || reconciler_->desired() == nullptr) {
    WriteWorkerFiles();
    return;
  }
  round_->presync_pid = current->pid;
  uint64_t id = round_->id;
  reconciler_->WaitForWorker(
      current->pid, options_.presync_timeout, lifetime_.Guard([this, id](bool synced) {
        if (!round_ || round_->id != id) return;
        if (!synced) {
          Note(absl::StrCat("pre-sync: worker ", round_->presync_pid,
                            " did not finish applying the desired state within ",
                            absl::ToInt64Milliseconds(options_.presync_timeout),
                            " ms; reloading anyway"));
        }
        WriteWorkerFiles();
      }));
}

void Reloader::WriteWorkerFiles() {
  uint64_t id = round_->id;
  worker_files_.Write(NoteFor(id), [this, id] {
    if (!round_ || round_->id != id) return;
    SendReload();
  });
}

void Reloader::SendReload() {
  // A PUT that arrived after the pre-sync (or during the server-state write) may still be on its
  // way to the current worker: the reload would cut it, and without `grace` the worker about to
  // leave could no longer take it. Wait for it, within what is left of the pre-sync budget.
  const model::WorkerReport* current = registry_->report().Current();
  absl::Duration left = options_.presync_timeout - (clock_() - round_->started_at);
  if (current != nullptr && !reconciler_->HoldsLatest(current->pid) &&
      left > absl::ZeroDuration()) {
    uint64_t id = round_->id;
    reconciler_->WaitForWorker(current->pid, left, lifetime_.Guard([this, id](bool) {
      if (!round_ || round_->id != id) return;
      SendReloadNow();
    }));
    return;
  }
  SendReloadNow();
}

void Reloader::SendReloadNow() {
  // The master may have gone while the round checked and wrote files.
  AwaitMaster([this] { SendReloadBatch(); });
}

void Reloader::SendReloadBatch() {
  if (!round_->reload_sent_at.has_value()) {
    round_->reload_sent_at = clock_();
    deadline_.Start(options_.reload_timeout, [this] {
      if (round_->reply.status == parse::ReloadStatus::kFailure) {
        // HAProxy said so; only the report never caught up (the master unreachable since).
        Finish(ReloadResult::kFailed, absl::FailedPreconditionError(kSuccessZeroReason));
        return;
      }
      Finish(ReloadResult::kTimedOut,
             absl::DeadlineExceededError(absl::StrCat(
                 "no verdict within ", absl::ToInt64Milliseconds(options_.reload_timeout),
                 " ms of `reload`: HAProxy may still be loading the configuration")));
    });
  }
  cli::Command reload = cli::Command::Master("reload");
  reload.closes_connection = true;  // 2.6 answers nothing and closes; 2.7+ answers, then closes
  uint64_t id = round_->id;
  client_->Submit({cli::Command::Master("show proc"), std::move(reload)},
                  lifetime_.Guard([this, id](std::vector<cli::CommandResult> results) {
                    if (!round_ || round_->id != id) return;
                    OnReloadReply(std::move(results));
                  }),
                  options_.reload_timeout);
}
void Reloader::OnReloadReply(std::vector<cli::CommandResult> results) {
  if (!results[0].ok()) {
    // Nothing was sent after a failed `show proc` (or the connection never came up).
    Finish(ReloadResult::kUnreachable, absl::UnavailableError(absl::StrCat(
                                           "reload not sent: ", results[0].status().message())));
    return;
  }
  absl::StatusOr<parse::ShowProc> proc = parse::ParseShowProc(*results[0]);
  if (!proc.ok()) {
    Finish(ReloadResult::kUnreachable,
           absl::UnavailableError(absl::StrCat("reload not sent: `show proc` answered something "
                                               "hawk cannot read: ",
                                               proc.status().message())));
    return;
  }
  round_->baseline.master_pid = proc->master.pid;
  round_->baseline.master_reloads = proc->master.reloads;
  round_->baseline.worker_pids.clear();
  for (const parse::ProcessEntry& worker : proc->workers) {
    round_->baseline.worker_pids.insert(worker.pid);
  }
  // Every attempt moves the master's counter: this one is hawk's, not an external reload.
  external_.AccountOwnReload(proc->master.reloads);
  round_->reply = parse::ReloadReply{};
  if (results[1].ok()) {
    absl::StatusOr<parse::ReloadReply> reply = parse::ParseReloadReply(*results[1]);
    if (!reply.ok()) {
      Finish(ReloadResult::kFailed,
             absl::InternalError(
                 absl::StrCat("unexpected reply to `reload`: ", reply.status().message())));
      return;
    }
    round_->reply = *std::move(reply);
    if (!round_->reply.log.empty()) Note(absl::StrCat("HAProxy:\n", round_->reply.log));
    if (round_->reply.another_in_progress) {
      // 3.1+: a reload someone else started is still running; ours has not happened.
      Note("HAProxy: another reload is still in progress; retrying");
      step_timer_.Start(kBusyRetry, [this] { SendReloadNow(); });
      return;
    }
  }
  // 2.6 answers nothing, and a connection cut before the reply leaves it open whether the reload
  // ran: either way the reports decide.
  round_->awaiting = true;
  registry_->RefreshNow();
}

void Reloader::Judge(const model::WorkersReport& report) {
  ReloadJudgement judgement = JudgeReload(round_->baseline, round_->reply, report);
  switch (judgement.verdict) {
    case Verdict::kSucceeded:
      Finish(ReloadResult::kSucceeded, absl::OkStatus(), judgement.new_worker_pid);
      return;
    case Verdict::kFailed:
      Finish(ReloadResult::kFailed, absl::FailedPreconditionError(judgement.reason));
      return;
    case Verdict::kPending:
      if (!step_timer_.active()) {
        step_timer_.Start(kVerdictPoll, [this] { registry_->RefreshNow(); });
      }
      return;
  }
}

void Reloader::Finish(ReloadResult result, absl::Status status, int new_worker_pid) {
  if (!round_) return;
  deadline_.Stop();
  step_timer_.Stop();
  std::unique_ptr<Round> round = std::move(round_);
  // A configuration that did not load, or a reload that never reached HAProxy, must not stay
  // on disk: the next reload (or a restart) would load it. After a timeout HAProxy may still be
  // loading it, so it stays, and the error says so.
  ConfigStage::Ended config =
      config_.End(result == ReloadResult::kSucceeded,
                  result == ReloadResult::kFailed || result == ReloadResult::kUnreachable);
  if (!config.log.empty()) absl::StrAppend(&round->log, config.log, "\n");
  ReloadRecord record;
  record.config_written = config.written;
  record.config_restored = config.restored;
  record.id = round->id;
  record.trigger = ReloadTrigger::kApi;
  record.result = result;
  record.started_at = round->started_at;
  record.duration =
      std::max(clock_() - round->reload_sent_at.value_or(round->started_at), absl::ZeroDuration());
  record.new_worker_pid = new_worker_pid;
  record.requests = static_cast<int>(round->requests.size());
  record.log = LogExcerpt(round->log);
  if (!status.ok()) record.error = std::string(status.message());
  if (result == ReloadResult::kSucceeded) {
    base::LogInfo("reload ", record.id, " succeeded in ",
                  absl::ToInt64Milliseconds(record.duration), " ms: new worker ", new_worker_pid,
                  " (", record.requests, " request(s))");
  } else {
    base::LogWarn("reload ", record.id, " ", ReloadResultName(result), ": ", status.message());
  }
  history_.Add(record);
  ReloadOutcome outcome{std::move(status), std::move(record)};
  // The callbacks may queue more requests: the next round starts after them, from the loop.
  for (Pending& request : round->requests) {
    if (request.done) request.done(outcome);
  }
  MaybeStartRound();
}

void Reloader::OnWorkers(const model::WorkersReport& report) {
  if (round_ && round_->awaiting) Judge(report);
  // Once hawk has sent `reload`, the counter may move before the reply comes back: that is
  // hawk's reload, accounted for when the reply arrives, not an external one.
  bool own_reload_under_way = round_ && (round_->awaiting || round_->reload_sent_at.has_value());
  for (const ExternalReload& external : external_.Observe(report, own_reload_under_way, clock_())) {
    ReloadRecord record = ExternalRecord(next_id_++, external);
    base::LogInfo("external reload ", ReloadResultName(record.result),
                  record.new_worker_pid != 0 ? absl::StrCat(": new worker ", record.new_worker_pid)
                                             : std::string());
    history_.Add(std::move(record));
  }
}

}  // namespace hawk::reload

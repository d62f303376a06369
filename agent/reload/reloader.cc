#include "agent/reload/reloader.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/base/log.h"
#include "agent/parse/haproxy_config.h"
#include "agent/parse/maps.h"
#include "agent/parse/servers_state.h"
#include "agent/parse/show_proc.h"
#include "agent/plan/server_lines.h"
#include "agent/plan/server_state_file.h"
#include "agent/plan/table_file.h"
#include "agent/store/atomic_file.h"

namespace hawk::reload {
namespace {

constexpr size_t kMaxCheckOutputBytes = 64 * 1024;
// What a record keeps of the round's log.
constexpr size_t kMaxLogBytes = 16 * 1024;
// While a verdict is pending, the worker list is polled this often.
constexpr absl::Duration kVerdictPoll = absl::Milliseconds(5);
// `Another reload is still in progress.` (3.1+): try again after this long.
constexpr absl::Duration kBusyRetry = absl::Milliseconds(100);
// While the master is briefly unreachable, the gate looks again this often.
constexpr absl::Duration kMasterPoll = absl::Milliseconds(20);
// The server-state file, when hawk creates it: as a new configuration file.
constexpr mode_t kServerStateFileMode = kNewConfigMode;

std::string Excerpt(absl::string_view text) {
  text = absl::StripTrailingAsciiWhitespace(text);
  if (text.size() <= kMaxLogBytes) return std::string(text);
  return absl::StrCat("…", text.substr(text.size() - kMaxLogBytes));
}

// What `haproxy -c` said that matters, for an error message: its [ALERT] lines (the errors),
// else its first lines.
std::string Head(absl::string_view text, size_t max_lines = 5) {
  std::vector<absl::string_view> all, alerts;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    line = absl::StripAsciiWhitespace(line);
    all.push_back(line);
    if (absl::StartsWith(line, "[ALERT]")) alerts.push_back(line);
  }
  std::vector<absl::string_view>& lines = alerts.empty() ? all : alerts;
  if (lines.size() > max_lines) lines.resize(max_lines);
  return absl::StrJoin(lines, " | ");
}

}  // namespace

const char* ReloadTriggerName(ReloadTrigger trigger) {
  return trigger == ReloadTrigger::kApi ? "API" : "EXTERNAL";
}

const char* ReloadResultName(ReloadResult result) {
  switch (result) {
    case ReloadResult::kSucceeded:
      return "SUCCEEDED";
    case ReloadResult::kFailed:
      return "FAILED";
    case ReloadResult::kTimedOut:
      return "TIMED_OUT";
    case ReloadResult::kUnreachable:
      return "UNREACHABLE";
  }
  return "FAILED";
}

struct Reloader::Round {
  uint64_t id = 0;
  std::vector<Pending> requests;
  absl::optional<std::string> config;  // the latest configuration the requests carried
  // No request carried a configuration: `config` is the file with the desired servers written
  // in (--write-servers), which the round may drop to reload the file as it is.
  bool servers_only = false;
  bool servers_given_up = false;  // the servers could not go in: the file is reloaded as it is
  // The desired servers (as of this server sequence) are in the configuration this round
  // reloads; or why they are not.
  absl::optional<uint64_t> servers_seq;
  std::string servers_problem;
  absl::Time started_at;
  absl::optional<absl::Time> reload_sent_at;  // nullopt until `reload` is sent
  std::string log;
  PreviousConfig previous;  // what the configuration held before this round wrote it
  bool config_written = false;
  absl::optional<CandidateFile> candidate;  // the configuration under `haproxy -c`
  std::unique_ptr<uv::ChildProcess> check;
  int presync_pid = 0;
  ReloadBaseline baseline;
  parse::ReloadReply reply;
  bool awaiting = false;       // `reload` sent: a verdict comes from the reports
  bool noted_waiting = false;  // the log says the round waited for the master
};

Reloader::Reloader(uv_loop_t* loop, cli::MasterClient* client, registry::WorkerRegistry* registry,
                   reconcile::Reconciler* reconciler, ReloaderOptions options,
                   std::function<absl::Time()> wall_clock)
    : loop_(loop),
      client_(client),
      registry_(registry),
      reconciler_(reconciler),
      options_(std::move(options)),
      wall_clock_(std::move(wall_clock)),
      config_file_(options_.config_path),
      start_timer_(loop),
      step_timer_(loop),
      deadline_(loop),
      table_files_(options_.table_files_dir, options_.no_table_files_dir) {}

// The round in progress goes with its candidate file (removed) and its `haproxy -c` (killed).
Reloader::~Reloader() = default;

void Reloader::Start() {
  workers_subscription_ =
      registry_->AddListener([this](const model::WorkersReport& report,
                                    const registry::WorkerChanges&) { OnWorkers(report); });
  // Unreachable since hawk started, until the first connection.
  master_unreachable_since_ = wall_clock_();
  master_failures_base_ = client_->stats().connect_failures;
  reachable_subscription_ = client_->AddReachableListener([this] {
    master_ever_reached_ = true;
    master_unreachable_since_.reset();
  });
  lost_subscription_ = client_->AddConnectionLostListener([this] {
    if (client_->reachable() || master_unreachable_since_.has_value()) return;
    master_unreachable_since_ = wall_clock_();
    master_failures_base_ = client_->stats().connect_failures;
  });
  if (options_.config_path.empty()) return;
  absl::StatusOr<std::string> text = config_file_.Read("read --haproxy-config");
  if (!text.ok()) {
    base::LogWarn(text.status().message());
    return;
  }
  RefreshConfigWarnings(*text);
}

void Reloader::RefreshConfigWarnings(absl::string_view config_text) {
  config_warnings_ = parse::AdviseOnConfig(config_text);
  for (const std::string& warning : config_warnings_) {
    base::LogWarn(options_.config_path, ": ", warning);
  }
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
      std::max(last_round_start_ + options_.min_interval - wall_clock_(), absl::ZeroDuration());
  start_timer_.Start(delay, [this] { StartRound(); });
}

void Reloader::Note(absl::string_view text) {
  if (!round_) return;
  absl::StrAppend(&round_->log, text, "\n");
}

void Reloader::StartRound() {
  round_ = std::make_unique<Round>();
  round_->id = next_id_++;
  round_->requests = std::move(pending_);
  pending_.clear();
  round_->started_at = wall_clock_();
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
  AwaitMaster([this] { Check(); });
}

MasterView Reloader::ViewOfMaster() {
  MasterView view;
  view.reachable = client_->reachable();
  absl::Time now = wall_clock_();
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

void Reloader::WriteServersIntoConfig() {
  const model::DesiredState* desired = reconciler_->desired();
  if (!options_.write_servers || options_.config_path.empty() || desired == nullptr ||
      desired->server_count() == 0 || round_->servers_given_up) {
    return;
  }
  std::string read;
  const std::string* text = nullptr;
  if (round_->config.has_value()) {
    text = &*round_->config;
  } else if (config_file_.IsSymlink()) {
    // Written only when asked to: hawk never replaces a link it was not given a file for.
    round_->servers_problem =
        "it is a symbolic link (a mounted ConfigMap's?), which hawk does "
        "not replace";
    Note(absl::StrCat("servers not written into the configuration: ", options_.config_path, " ",
                      round_->servers_problem, "; the file is reloaded as it is"));
    return;
  } else {
    absl::StatusOr<std::string> file = config_file_.Read("read --haproxy-config");
    if (!file.ok()) {
      round_->servers_problem = std::string(file.status().message());
      Note(absl::StrCat("servers not written into the configuration: ", file.status().message()));
      return;
    }
    read = *std::move(file);
    text = &read;
  }
  plan::ServerLines lines = plan::WriteDesiredServers(*text, *desired);
  Note(absl::StrCat("servers: ", lines.servers_written, " of ", desired->server_count(),
                    " managed servers written into the configuration",
                    lines.templates_expanded > 0
                        ? absl::StrCat(" (", lines.templates_expanded, " server-template expanded)")
                        : std::string(),
                    lines.undeclared > 0
                        ? absl::StrCat("; ", lines.undeclared,
                                       " not declared there (the new worker gets them from hawk)")
                        : std::string(),
                    lines.changed ? "" : "; the configuration already held them"));
  for (const std::string& note : lines.notes) Note(absl::StrCat("servers: ", note));
  round_->servers_seq = reconciler_->latest_server_seq();
  if (!lines.changed) return;
  round_->servers_only = !round_->config.has_value();
  round_->config = std::move(lines.config);
}

std::vector<std::string> Reloader::Warnings() const {
  std::vector<std::string> warnings = config_warnings_;
  const model::DesiredState* desired = reconciler_->desired();
  if (desired == nullptr || desired->server_count() == 0) return warnings;
  constexpr absl::string_view kCost =
      "a worker started by a reload serves the configuration's servers until hawk seeds it, and "
      "requests to them can fail meanwhile";
  if (!options_.write_servers || options_.config_path.empty()) {
    warnings.push_back(
        absl::StrCat("servers: hawk does not write the desired servers into the configuration (",
                     options_.config_path.empty() ? "no --haproxy-config" : "--write-servers=false",
                     "): ", kCost));
  } else if (!servers_not_written_.empty()) {
    warnings.push_back(
        absl::StrCat("servers: the last reload through hawk could not write the "
                     "desired servers into ",
                     options_.config_path, " (", servers_not_written_, "): ", kCost));
  } else if (!servers_in_config_seq_.has_value() ||
             *servers_in_config_seq_ < reconciler_->latest_server_seq()) {
    warnings.push_back(absl::StrCat(
        "servers: ",
        servers_in_config_seq_.has_value() ? "changed since the last reload through hawk wrote "
                                             "them into "
                                           : "not written by hawk since it started into ",
        options_.config_path,
        ": a reload made elsewhere (SIGUSR2, another tool) would start them from the file, and "
        "requests to them can fail until hawk seeds the new worker; reload through POST "
        "/v1/reload, which writes them first"));
  }
  return warnings;
}

void Reloader::Check() {
  WriteServersIntoConfig();
  std::string path = options_.config_path;
  if (options_.haproxy_binary.empty() || path.empty()) {
    WriteConfig();
    return;
  }
  if (round_->config.has_value()) {
    // Checked under another name first: a rejected configuration never replaces the file.
    absl::StatusOr<CandidateFile> candidate = config_file_.WriteCandidate(*round_->config);
    if (!candidate.ok()) {
      Finish(ReloadResult::kFailed, absl::InternalError(candidate.status().message()));
      return;
    }
    path = candidate->path();
    round_->candidate = *std::move(candidate);
  }
  absl::StatusOr<std::unique_ptr<uv::ChildProcess>> check = uv::ChildProcess::Spawn(
      loop_, {options_.haproxy_binary, "-c", "-f", path}, options_.check_timeout,
      kMaxCheckOutputBytes,
      // Unguarded: the round owns the child, and destroying it drops `done` (uv/process.h).
      [this](uv::ProcessResult result) { OnChecked(std::move(result)); });
  if (!check.ok()) {
    Finish(ReloadResult::kFailed,
           absl::InternalError(absl::StrCat("--haproxy-binary: ", check.status().message())));
    return;
  }
  round_->check = *std::move(check);
}

void Reloader::OnChecked(uv::ProcessResult result) {
  if (!round_) return;
  round_->candidate.reset();
  std::string output(absl::StripTrailingAsciiWhitespace(result.output));
  if (!output.empty()) Note(absl::StrCat("haproxy -c:\n", output));
  if (!result.succeeded() && round_->servers_only) {
    // The servers made the difference, or the file was broken already: check it as it is.
    round_->servers_problem = absl::StrCat("`", options_.haproxy_binary,
                                           " -c` rejected the configuration with them written in");
    round_->servers_seq.reset();
    Note(absl::StrCat("servers not written: ", round_->servers_problem,
                      "; the file is reloaded as it is"));
    round_->config.reset();
    round_->servers_only = false;
    round_->servers_given_up = true;
    round_->check.reset();
    Check();  // the file as it is, checked as any other round's
    return;
  }
  if (!result.succeeded()) {
    std::string how =
        result.timed_out          ? absl::StrCat("timed out after ",
                                                 absl::ToInt64Milliseconds(options_.check_timeout), " ms")
        : result.term_signal != 0 ? absl::StrCat("killed by signal ", result.term_signal)
                                  : absl::StrCat("exit status ", result.exit_status);
    Finish(ReloadResult::kFailed,
           absl::FailedPreconditionError(absl::StrCat(
               "`", options_.haproxy_binary, " -c` rejected the configuration (", how,
               "): ", Head(output), "; nothing was written and HAProxy was not reloaded")));
    return;
  }
  round_->check.reset();  // allowed from its own callback (process.h)
  WriteConfig();
}

void Reloader::WriteConfig() {
  if (!round_->config.has_value()) {
    Presync();
    return;
  }
  absl::StatusOr<PreviousConfig> previous = config_file_.Replace(*round_->config);
  if (!previous.ok() && round_->servers_only) {
    round_->servers_problem = std::string(previous.status().message());
    round_->servers_seq.reset();
    Note(absl::StrCat("servers not written: ", previous.status().message(),
                      "; the file is reloaded as it is"));
    round_->config.reset();
    Presync();
    return;
  }
  if (!previous.ok()) {
    Finish(ReloadResult::kFailed, absl::InternalError(previous.status().message()));
    return;
  }
  round_->previous = *std::move(previous);
  round_->config_written = true;
  Presync();
}

void Reloader::Presync() {
  const model::WorkerReport* current = registry_->report().Current();
  if (current == nullptr || reconciler_->desired() == nullptr) {
    WriteServerState();
    return;
  }
  round_->presync_pid = current->pid;
  uint64_t id = round_->id;
  reconciler_->WaitForWorker(
      current->pid, options_.presync_timeout, lifetime_.Guard([this, id](bool synced) {
        if (!round_ || round_->id != id) return;
        if (!synced) {
          Note(absl::StrCat("pre-sync: worker ", round_->presync_pid,
                            " did not finish applying the desired state "
                            "within ",
                            absl::ToInt64Milliseconds(options_.presync_timeout),
                            " ms; reloading anyway"));
        }
        WriteServerState();
      }));
}

void Reloader::WriteServerState() {
  const model::WorkerReport* current = registry_->report().Current();
  if (options_.server_state_file.empty() || reconciler_->desired() == nullptr ||
      current == nullptr) {
    ListTables();
    return;
  }
  client_->Submit({cli::Command::ForWorker(current->pid, "show servers state")},
                  lifetime_.Guard([this](std::vector<cli::CommandResult> results) {
                    OnServerState(std::move(results));
                  }));
}

void Reloader::OnServerState(std::vector<cli::CommandResult> results) {
  if (!round_) return;
  absl::StatusOr<std::vector<parse::ServerStateRow>> rows =
      results[0].ok() ? parse::ParseServersState(*results[0]) : results[0].status();
  if (!rows.ok()) {
    Note(absl::StrCat("server-state file not written: ", rows.status().message()));
  } else if (const model::DesiredState* desired = reconciler_->desired(); desired != nullptr) {
    size_t servers = rows->size();
    absl::Status written = store::WriteFileAtomically(
        options_.server_state_file, plan::DesiredServersStateFile(*std::move(rows), *desired),
        kServerStateFileMode, "write the server-state file");
    Note(written.ok() ? absl::StrCat("server-state file: ", servers, " servers written to ",
                                     options_.server_state_file)
                      : absl::StrCat("server-state file not written: ", written.message()));
  }
  ListTables();
}

void Reloader::ListTables() {
  const model::DesiredState* desired = reconciler_->desired();
  if (!options_.write_table_files || desired == nullptr ||
      (desired->maps.empty() && desired->acls.empty())) {
    SendReload();
    return;
  }
  const model::WorkerReport* current = registry_->report().Current();
  if (!table_files_.has_dir() || current == nullptr) {
    LoadedTables loaded;
    loaded.error = table_files_.has_dir() ? "no current worker to tell which files HAProxy loaded"
                                          : table_files_.no_dir();
    WriteTableFiles(loaded);
    return;
  }
  uint64_t id = round_->id;
  int pid = current->pid;
  client_->Submit(
      {cli::Command::ForWorker(pid, "show map"), cli::Command::ForWorker(pid, "show acl")},
      lifetime_.Guard([this, id, pid](std::vector<cli::CommandResult> results) {
        if (!round_ || round_->id != id) return;
        WriteTableFiles(ParseLoadedTables(pid, results[0], results[1]));
      }));
}

void Reloader::WriteTableFiles(const LoadedTables& loaded) {
  const model::DesiredState* desired = reconciler_->desired();
  if (desired == nullptr) {
    SendReload();
    return;
  }
  absl::Time started = wall_clock_();
  WrittenTables written =
      table_files_.Write(*desired, loaded, [this](bool acl, const std::string& name) {
        return reconciler_->TableUnchangedSinceWritten(acl, name);
      });
  Note(absl::StrCat("map and ACL files: ", written.files_written, " written (",
                    written.entries_written, " entries) in ",
                    absl::ToInt64Milliseconds(wall_clock_() - started), " ms, ", written.unchanged,
                    " unchanged since hawk wrote them; the new worker reads ", written.maps.size(),
                    " maps and ", written.acls.size(), " ACLs from them"));
  for (const std::string& line : written.skipped) {
    Note(absl::StrCat("not written, the new worker gets it over the CLI: ", line));
  }
  reconciler_->TablesWritten(std::move(written.maps), std::move(written.acls));
  SendReload();
}

void Reloader::SendReload() {
  // A PUT that arrived after the pre-sync (or during the server-state write) may still be on its
  // way to the current worker: the reload would cut it, and without `grace` the worker about to
  // leave could no longer take it. Wait for it, within what is left of the pre-sync budget.
  const model::WorkerReport* current = registry_->report().Current();
  absl::Duration left = options_.presync_timeout - (wall_clock_() - round_->started_at);
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
    round_->reload_sent_at = wall_clock_();
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
  round->candidate.reset();
  ReloadRecord record;
  record.config_written = round->config_written;
  // A configuration that did not load, or a reload that never reached HAProxy, must not stay
  // on disk: the next reload (or a restart) would load it. After a timeout HAProxy may still be
  // loading it, so it stays, and the error says so.
  bool restore = round->config_written &&
                 (result == ReloadResult::kFailed || result == ReloadResult::kUnreachable);
  if (restore) {
    absl::Status restored = config_file_.Restore(round->previous);
    record.config_restored = restored.ok();
    absl::StrAppend(&round->log,
                    restored.ok() ? absl::StrCat("the previous configuration was restored in ",
                                                 options_.config_path)
                                  : absl::StrCat("the previous configuration could NOT be "
                                                 "restored: ",
                                                 restored.message()),
                    "\n");
  }
  if (result == ReloadResult::kSucceeded && round->config_written) {
    RefreshConfigWarnings(*round->config);
  }
  if (result == ReloadResult::kSucceeded && round->servers_seq.has_value()) {
    servers_in_config_seq_ = round->servers_seq;
    servers_not_written_.clear();
  } else if (result == ReloadResult::kSucceeded && !round->servers_problem.empty()) {
    servers_not_written_ = round->servers_problem;
  }
  record.id = round->id;
  record.trigger = ReloadTrigger::kApi;
  record.result = result;
  record.started_at = round->started_at;
  record.duration = std::max(wall_clock_() - round->reload_sent_at.value_or(round->started_at),
                             absl::ZeroDuration());
  record.new_worker_pid = new_worker_pid;
  record.requests = static_cast<int>(round->requests.size());
  record.log = Excerpt(round->log);
  if (!status.ok()) record.error = std::string(status.message());
  if (result == ReloadResult::kSucceeded) {
    base::LogInfo("reload ", record.id, " succeeded in ",
                  absl::ToInt64Milliseconds(record.duration), " ms: new worker ", new_worker_pid,
                  " (", record.requests, " request(s))");
  } else {
    base::LogWarn("reload ", record.id, " ", ReloadResultName(result), ": ", status.message());
  }
  Record(record);
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
  for (const ExternalReload& external :
       external_.Observe(report, own_reload_under_way, wall_clock_())) {
    RecordExternal(external);
  }
}

void Reloader::RecordExternal(const ExternalReload& external) {
  const ReloadJudgement& judgement = external.judgement;
  ReloadRecord record;
  record.id = next_id_++;
  record.trigger = ReloadTrigger::kExternal;
  record.result = judgement.verdict == Verdict::kSucceeded ? ReloadResult::kSucceeded
                  : judgement.verdict == Verdict::kFailed  ? ReloadResult::kFailed
                                                           : ReloadResult::kTimedOut;
  record.started_at = external.noticed_at;
  record.duration = external.duration;  // from when hawk noticed it
  record.new_worker_pid = judgement.new_worker_pid;
  record.error = judgement.reason;
  base::LogInfo("external reload ", ReloadResultName(record.result),
                record.new_worker_pid != 0 ? absl::StrCat(": new worker ", record.new_worker_pid)
                                           : std::string());
  Record(std::move(record));
}

void Reloader::Record(ReloadRecord record) {
  ++counters_.reloads[static_cast<int>(record.trigger)][static_cast<int>(record.result)];
  counters_.duration_seconds.Observe(absl::ToDoubleSeconds(record.duration));
  history_.push_front(std::move(record));
  while (history_.size() > options_.history_size) history_.pop_back();
}

std::vector<ReloadRecord> Reloader::History() const {
  return std::vector<ReloadRecord>(history_.begin(), history_.end());
}

}  // namespace hawk::reload

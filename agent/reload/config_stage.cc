#include "agent/reload/config_stage.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/base/log.h"
#include "agent/parse/haproxy_config.h"
#include "agent/plan/server_lines.h"

namespace hawk::reload {
namespace {

constexpr size_t kMaxCheckOutputBytes = 64 * 1024;

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

ConfigStage::ConfigStage(uv_loop_t* loop, ConfigStageOptions options)
    : loop_(loop), options_(std::move(options)), file_(options_.config_path) {}

ConfigStage::~ConfigStage() = default;

void ConfigStage::Start() {
  if (options_.config_path.empty()) return;
  absl::StatusOr<std::string> text = file_.Read("read --haproxy-config");
  if (!text.ok()) {
    base::LogWarn(text.status().message());
    return;
  }
  RefreshConfigWarnings(*text);
  if (options_.servers_in_config != nullptr) options_.servers_in_config->Read(*text);
}

void ConfigStage::RefreshConfigWarnings(absl::string_view config_text) {
  config_warnings_ = parse::AdviseOnConfig(config_text);
  for (const std::string& warning : config_warnings_) {
    base::LogWarn(options_.config_path, ": ", warning);
  }
}

void ConfigStage::Prepare(absl::optional<std::string> config, const model::DesiredState* desired,
                          uint64_t server_seq, Note note, Done done) {
  round_ = std::make_unique<Round>();
  round_->config = std::move(config);
  round_->note = std::move(note);
  round_->done = std::move(done);
  WriteServers(desired, server_seq);
  Check();
}

void ConfigStage::Complete(absl::Status status) {
  Done done = std::move(round_->done);
  done(std::move(status));  // may End() the round
}

void ConfigStage::WriteServers(const model::DesiredState* desired, uint64_t server_seq) {
  if (!options_.write_servers || options_.config_path.empty() || desired == nullptr ||
      desired->server_count() == 0) {
    return;
  }
  const Note& note = round_->note;
  std::string read;
  const std::string* text = nullptr;
  if (round_->config.has_value()) {
    text = &*round_->config;
  } else if (file_.IsSymlink()) {
    // Written only when asked to: hawk never replaces a link it was not given a file for.
    round_->servers_problem =
        "it is a symbolic link (a mounted ConfigMap's?), which hawk does "
        "not replace";
    note(absl::StrCat("servers not written into the configuration: ", options_.config_path, " ",
                      round_->servers_problem, "; the file is reloaded as it is"));
    return;
  } else {
    absl::StatusOr<std::string> file = file_.Read("read --haproxy-config");
    if (!file.ok()) {
      round_->servers_problem = std::string(file.status().message());
      note(absl::StrCat("servers not written into the configuration: ", file.status().message()));
      return;
    }
    read = *std::move(file);
    text = &read;
  }
  plan::ServerLines lines = plan::WriteDesiredServers(*text, *desired);
  note(absl::StrCat(
      "servers: ", lines.servers_written, " of ", desired->server_count(),
      " managed servers written into the configuration",
      lines.templates_expanded > 0
          ? absl::StrCat(" (", lines.templates_expanded, " server-template expanded)")
          : std::string(),
      lines.runtime_written > 0 ? absl::StrCat(", and ", lines.runtime_written,
                                               " its sections do not declare in hawk's blocks")
                                : std::string(),
      lines.undeclared > 0
          ? absl::StrCat("; ", lines.undeclared, " neither declared there nor creatable at runtime")
          : std::string(),
      lines.changed ? "" : "; the configuration already held them"));
  for (const std::string& line : lines.notes) note(absl::StrCat("servers: ", line));
  round_->servers_seq = server_seq;
  if (!lines.changed) return;
  round_->servers_only = !round_->config.has_value();
  round_->config = std::move(lines.config);
}

void ConfigStage::Check() {
  std::string path = options_.config_path;
  if (options_.haproxy_binary.empty() || path.empty()) {
    Write();
    return;
  }
  if (round_->config.has_value()) {
    // Checked under another name first: a rejected configuration never replaces the file.
    absl::StatusOr<CandidateFile> candidate = file_.WriteCandidate(*round_->config);
    if (!candidate.ok()) {
      Complete(absl::InternalError(candidate.status().message()));
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
    Complete(absl::InternalError(absl::StrCat("--haproxy-binary: ", check.status().message())));
    return;
  }
  round_->check = *std::move(check);
}

void ConfigStage::OnChecked(uv::ProcessResult result) {
  if (!round_) return;
  round_->candidate.reset();
  const Note& note = round_->note;
  std::string output(absl::StripTrailingAsciiWhitespace(result.output));
  if (!output.empty()) note(absl::StrCat("haproxy -c:\n", output));
  if (!result.succeeded() && round_->servers_only) {
    // The servers made the difference, or the file was broken already: check it as it is.
    round_->servers_problem = absl::StrCat("`", options_.haproxy_binary,
                                           " -c` rejected the configuration with them written in");
    round_->servers_seq.reset();
    note(absl::StrCat("servers not written: ", round_->servers_problem,
                      "; the file is reloaded as it is"));
    round_->config.reset();
    round_->servers_only = false;
    round_->check.reset();  // allowed from its own callback (process.h)
    Check();                // the file as it is, checked as any other round's
    return;
  }
  if (!result.succeeded()) {
    std::string how =
        result.timed_out          ? absl::StrCat("timed out after ",
                                                 absl::ToInt64Milliseconds(options_.check_timeout), " ms")
        : result.term_signal != 0 ? absl::StrCat("killed by signal ", result.term_signal)
                                  : absl::StrCat("exit status ", result.exit_status);
    Complete(absl::FailedPreconditionError(
        absl::StrCat("`", options_.haproxy_binary, " -c` rejected the configuration (", how,
                     "): ", Head(output), "; nothing was written and HAProxy was not reloaded")));
    return;
  }
  round_->check.reset();  // allowed from its own callback (process.h)
  Write();
}

void ConfigStage::Write() {
  if (!round_->config.has_value()) {
    Complete(absl::OkStatus());
    return;
  }
  absl::StatusOr<PreviousConfig> previous = file_.Replace(*round_->config);
  if (!previous.ok() && round_->servers_only) {
    round_->servers_problem = std::string(previous.status().message());
    round_->servers_seq.reset();
    round_->note(absl::StrCat("servers not written: ", previous.status().message(),
                              "; the file is reloaded as it is"));
    round_->config.reset();
    Complete(absl::OkStatus());
    return;
  }
  if (!previous.ok()) {
    Complete(absl::InternalError(previous.status().message()));
    return;
  }
  round_->previous = *std::move(previous);
  round_->written = true;
  // Before the reload: the worker it starts is born from this file.
  if (options_.servers_in_config != nullptr) options_.servers_in_config->Read(*round_->config);
  Complete(absl::OkStatus());
}

ConfigStage::Ended ConfigStage::End(bool succeeded, bool restore) {
  Ended ended;
  if (!round_) return ended;
  std::unique_ptr<Round> round = std::move(round_);
  round->candidate.reset();
  ended.written = round->written;
  // A configuration that did not load, or a reload that never reached HAProxy, must not stay on
  // disk: the next reload (or a restart) would load it.
  if (restore && round->written) {
    absl::Status restored = file_.Restore(round->previous);
    ended.restored = restored.ok();
    absl::StatusOr<std::string> text = file_.Read("read --haproxy-config");
    if (text.ok() && options_.servers_in_config != nullptr) {
      options_.servers_in_config->Read(*text);
    }
    ended.log = restored.ok() ? absl::StrCat("the previous configuration was restored in ",
                                             options_.config_path)
                              : absl::StrCat("the previous configuration could NOT be restored: ",
                                             restored.message());
  }
  if (succeeded && round->written) RefreshConfigWarnings(*round->config);
  if (succeeded && round->servers_seq.has_value()) {
    servers_in_config_seq_ = round->servers_seq;
    servers_not_written_.clear();
  } else if (succeeded && !round->servers_problem.empty()) {
    servers_not_written_ = round->servers_problem;
  }
  return ended;
}

std::vector<std::string> ConfigStage::Warnings(const model::DesiredState* desired,
                                               uint64_t latest_server_seq) const {
  std::vector<std::string> warnings = config_warnings_;
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
  } else if (!servers_in_config_seq_.has_value() || *servers_in_config_seq_ < latest_server_seq) {
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

}  // namespace hawk::reload

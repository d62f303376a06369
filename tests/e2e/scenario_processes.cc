#include "tests/e2e/scenario_processes.h"

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>

#include "simdjson.h"
#include "tests/support/wait_until.h"

namespace hawk::e2e {
namespace {

using hawk::testing::ReadFile;
using hawk::testing::Subprocess;
using hawk::testing::SubprocessOptions;
using hawk::testing::TempDir;
using hawk::testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;

size_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
}

}  // namespace

Origin StartOrigin(const TempDir& dir, const std::string& binary, const std::string& name,
                   int lame_duck_ms, std::string* error) {
  Origin origin;
  SubprocessOptions options;
  options.argv = {binary,
                  "--listen",
                  "127.0.0.1:0",
                  "--name",
                  name,
                  "--lame-duck-ms",
                  std::to_string(lame_duck_ms)};
  options.stdout_path = dir.File("origin-" + name + ".log");
  options.stderr_path = options.stdout_path;
  origin.process = Subprocess::Spawn(options, error);
  if (!origin.process) return origin;
  constexpr const char* kReady = "listening on 127.0.0.1:";
  bool up =
      WaitUntil([&] { return ReadFile(options.stdout_path).find(kReady) != std::string::npos; },
                seconds(5), milliseconds(1));
  std::string text = ReadFile(options.stdout_path);
  size_t at = text.find(kReady);
  if (!up || at == std::string::npos) {
    *error = "origin " + name + " did not start: " + text;
    origin.process.reset();
    return origin;
  }
  origin.port = std::atoi(text.c_str() + at + std::string(kReady).size());
  return origin;
}

LoadSummary ParseLoadSummary(const std::string& line) {
  LoadSummary s;
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  if (parser.parse(line).get(o) != simdjson::SUCCESS) return s;
  int64_t n = 0;
  double d = 0;
  if (o["requests"].get(n) == simdjson::SUCCESS) s.requests = n;
  if (o["failures"].get(n) == simdjson::SUCCESS) s.failures = n;
  if (o["retries"].get(n) == simdjson::SUCCESS) s.retries = n;
  if (o["rps"].get(d) == simdjson::SUCCESS) s.rps = d;
  if (o.at_pointer("/latency_ms/p99").get(d) == simdjson::SUCCESS) s.p99_ms = d;
  simdjson::dom::object kinds;
  if (o["failures_by_kind"].get(kinds) == simdjson::SUCCESS) {
    for (auto [kind, value] : kinds) {
      if (value.get(n) == simdjson::SUCCESS && n > 0) s.failures_by_kind[std::string(kind)] = n;
    }
  }
  s.ok = true;
  return s;
}

bool LoadProcess::Start(const TempDir& dir, const LoadOptions& options, std::string* error) {
  stdout_path_ = dir.File("load.out");
  events_path_ = dir.File("load.events");
  SubprocessOptions sub;
  sub.argv = {options.binary,
              "--target",
              "127.0.0.1:" + std::to_string(options.port),
              "--connections",
              std::to_string(options.connections),
              "--one-shot-connections",
              std::to_string(options.one_shot_connections),
              "--prober-interval-ms",
              std::to_string(options.prober_interval_ms),
              "--events",
              events_path_};
  sub.stdout_path = stdout_path_;
  sub.stderr_path = dir.File("load.err");
  process_ = Subprocess::Spawn(sub, error);
  if (!process_) return false;
  // SIGUSR1 kills the client until its handler is in place (SigCgt bit 10).
  std::string status_path = "/proc/" + std::to_string(process_->pid()) + "/status";
  bool ready = WaitUntil(
      [&] {
        std::string status = ReadFile(status_path);
        size_t at = status.find("SigCgt:");
        if (at == std::string::npos) return false;
        uint64_t mask = std::strtoull(status.c_str() + at + 7, nullptr, 16);
        return (mask & (1ull << (SIGUSR1 - 1))) != 0;
      },
      seconds(5), milliseconds(1));
  if (!ready) *error = "the load client did not start: " + ReadFile(sub.stderr_path);
  return ready;
}

LoadSummary LoadProcess::Snapshot() {
  size_t before = FileSize(stdout_path_);
  if (!process_->Signal(SIGUSR1)) return {};
  std::string line;
  WaitUntil(
      [&] {
        std::string text = ReadFile(stdout_path_);
        if (text.size() <= before || text.back() != '\n') return false;
        line = text.substr(before);
        return true;
      },
      seconds(5), milliseconds(1));
  return ParseLoadSummary(line);
}

LoadSummary LoadProcess::Finish() {
  size_t before = FileSize(stdout_path_);
  process_->Signal(SIGTERM);
  process_->WaitExit(seconds(10));
  std::string text = ReadFile(stdout_path_);
  return text.size() > before ? ParseLoadSummary(text.substr(before)) : LoadSummary{};
}

int64_t LoadProcess::FailuresNotOn(int current_pid, std::vector<std::string>* events) {
  std::string text = ReadFile(events_path_);
  int64_t count = 0;
  size_t pos = events_offset_;
  simdjson::dom::parser parser;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;  // a line still being written
    std::string line = text.substr(pos, end - pos);
    simdjson::dom::object o;
    std::string_view kind;
    int64_t pid = 0;
    if (parser.parse(line).get(o) == simdjson::SUCCESS &&
        o["kind"].get(kind) == simdjson::SUCCESS && kind == "failure") {
      if (events != nullptr && events->size() < kMaxFailureEvents) {
        events->push_back(std::move(line));
      }
      if (o["pid"].get(pid) == simdjson::SUCCESS && pid != 0 && pid != current_pid) ++count;
    }
    pos = end + 1;
  }
  events_offset_ = pos;
  return count;
}

std::vector<double> LoadProcess::FailureTimesMs() const {
  std::vector<double> times;
  std::string text = ReadFile(events_path_);
  simdjson::dom::parser parser;
  for (size_t pos = 0, end; (end = text.find('\n', pos)) != std::string::npos; pos = end + 1) {
    simdjson::dom::object o;
    std::string_view kind;
    double t = 0;
    if (parser.parse(text.data() + pos, end - pos).get(o) == simdjson::SUCCESS &&
        o["kind"].get(kind) == simdjson::SUCCESS && kind == "failure" &&
        o["t_ms"].get(t) == simdjson::SUCCESS) {
      times.push_back(t);
    }
  }
  return times;
}

int64_t MonotonicMs(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string ProgramFromEnv(const char* variable, const std::string& fallback) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

int NewWorkerPid(const std::string& reload_body) {
  simdjson::dom::parser parser;
  int64_t pid = 0;
  if (parser.parse(reload_body)["newWorkerPid"].get(pid) != simdjson::SUCCESS) return 0;
  return static_cast<int>(pid);
}

std::string ReloadLog(const std::string& reload_body) {
  simdjson::dom::parser parser;
  std::string_view log;
  if (parser.parse(reload_body)["log"].get(log) != simdjson::SUCCESS) return "";
  return std::string(log);
}

}  // namespace hawk::e2e

#include "tests/e2e/born_with.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/e2e/scenario_processes.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/http_client.h"
#include "tests/support/master_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_until.h"

namespace hawk::e2e {
namespace {

using hawk::testing::HaproxyProcess;
using hawk::testing::HawkProcess;
using hawk::testing::HttpResult;
using hawk::testing::MasterCli;
using hawk::testing::ProcList;
using hawk::testing::TempDir;
using hawk::testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kVersion = "v1";

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string HaproxyConfig(int frontend_port, int slots) {
  std::ostringstream c;
  c << "global\n"
    << "defaults\n"
    << "    mode http\n"
    << "    timeout connect 1s\n"
    << "    timeout client 30s\n"
    << "    timeout server 30s\n"
    << "frontend fe\n"
    << "    bind 127.0.0.1:" << frontend_port << "\n"
    << "    http-after-response set-header X-Pid %pid\n"
    << "    default_backend be\n"
    << "backend be\n"
    << "    balance roundrobin\n"
    // The slots as controllers declare them. 192.0.2.1 (TEST-NET-1) is never connected to: a
    // disabled server takes no traffic and has no check, so a worker that holds only
    // placeholders answers 503 at once ("no server available") instead of waiting on a connect.
    << "    server-template s 1-" << slots << " 192.0.2.1:80 disabled\n";
  return c.str();
}

std::string DesiredState(int slots, int origin_port) {
  std::string json =
      absl::StrCat(R"({"version":")", kVersion, R"(","backends":[{"name":"be","servers":[)");
  for (int i = 1; i <= slots; ++i) {
    absl::StrAppend(&json, i > 1 ? "," : "", R"({"name":"s)", i,
                    R"(","address":"127.0.0.1","port":)", origin_port, R"(,"state":"READY"})");
  }
  absl::StrAppend(&json, "]}]}");
  return json;
}

std::vector<std::string> ModeFlags(BornWithMode mode) {
  if (mode == BornWithMode::kBaseline) return {"--write-servers=false"};
  return {"--write-servers=true"};
}

// srv_admin_state's maintenance bits, HAProxy's SRV_ADMF_MAINT (FMAINT, IMAINT, RMAINT). Not
// CMAINT (0x04): it stays on a slot declared `disabled` after `set server state ready` and only
// says how it was declared.
constexpr int kMaintenance = 0x01 | 0x02 | 0x20;

// How many slots worker `pid` serves at the origin, by HAProxy's own `show servers state be`
// (address 127.0.0.1:origin_port, no maintenance bit): what its clients meet, whatever hawk's
// report says. -1 if the worker does not answer.
int SlotsServing(const std::string& master_socket, int pid, int origin_port) {
  std::string text = MasterCli::Command(
      master_socket, absl::StrCat("@!", pid, " show servers state be"), seconds(5));
  if (text.empty()) return -1;
  int serving = 0;
  for (const hawk::testing::ServerRow& row : hawk::testing::ServerRowsFromText(text, "be")) {
    if (row.address == "127.0.0.1" && row.port == origin_port && (row.admin & kMaintenance) == 0) {
      ++serving;
    }
  }
  return serving;
}

// The workers `show proc` lists, in either section; empty if the master does not answer.
std::set<int> ListedWorkers(const std::string& master_socket, int* reloads) {
  std::optional<ProcList> list = MasterCli::ShowProc(master_socket, milliseconds(500));
  if (!list) return {};
  if (reloads != nullptr) *reloads = list->master_reloads;
  std::set<int> pids(list->workers.begin(), list->workers.end());
  pids.insert(list->old_workers.begin(), list->old_workers.end());
  return pids;
}

class BornWithCase {
 public:
  explicit BornWithCase(const BornWithOptions& options) : options_(options) {}

  void Run(BornWithResult* result) {
    result_ = result;
    if (!Setup() || !Seed() || !StartLoad()) return;
    LoadSummary last = load_.Snapshot();
    const LoadSummary warm = last;
    int worker = current_worker_;
    std::vector<double> starts_ms;  // each reload's start, on the load events' clock
    for (int k = 1; k <= options_.reloads; ++k) {
      BornWithReload r;
      r.old_worker = worker;
      Clock::time_point start = Clock::now();
      starts_ms.push_back(static_cast<double>(MonotonicMs(start)));
      if (!Reload(&r)) return;
      r.duration_ms = MsSince(start);
      worker = r.new_worker;
      std::this_thread::sleep_until(start + options_.reload_interval);
      LoadSummary now = load_.Snapshot();
      r.requests = now.requests - last.requests;
      r.failures = now.failures - last.failures;
      last = now;
      Log("reload %d: worker %d -> %d in %.0f ms; %lld requests, %lld failed", k, r.old_worker,
          r.new_worker, r.duration_ms, static_cast<long long>(r.requests),
          static_cast<long long>(r.failures));
      result_->reloads.push_back(r);
    }
    // The last reload's losses run until its worker serves every slot (hawk seeded it, or it
    // was born with them).
    Clock::time_point end = Clock::now();
    if (!ServesEverySlot(worker, seconds(60))) return;
    result_->last_served_ms = MsSince(end);
    LoadSummary total = load_.Finish();
    if (!total.ok) {
      Fail("the load client's final summary is missing");
      return;
    }
    if (!result_->reloads.empty()) {
      result_->reloads.back().requests += total.requests - last.requests;
      result_->reloads.back().failures += total.failures - last.failures;
    }
    result_->requests = total.requests - warm.requests;
    result_->failures = total.failures - warm.failures;
    result_->failures_by_kind = total.failures_by_kind;
    load_.FailuresNotOn(0, &result_->failure_events);
    Gaps(starts_ms, load_.FailureTimesMs());
    result_->ok = true;
  }

 private:
  void Log(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    if (!options_.verbose) return;
    std::fprintf(stderr, "born-with %s N=%d: ", BornWithModeName(options_.mode), options_.slots);
    va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
    std::fputc('\n', stderr);
  }

  bool Fail(std::string error) {
    result_->error = std::move(error);
    return false;
  }

  // Each reload's gap: its window runs from its start to the next reload's (the last one's to
  // the end).
  void Gaps(const std::vector<double>& starts_ms, const std::vector<double>& failures_ms) {
    for (size_t k = 0; k < result_->reloads.size() && k < starts_ms.size(); ++k) {
      double from = starts_ms[k];
      double to = k + 1 < starts_ms.size() ? starts_ms[k + 1] : 1e300;
      double first = -1, last = -1;
      for (double t : failures_ms) {
        if (t < from || t >= to) continue;
        if (first < 0) first = t;
        last = t;
      }
      double gap = first < 0 ? 0 : last - first;
      result_->reloads[k].gap_ms = gap;
      result_->max_gap_ms = std::max(result_->max_gap_ms, gap);
      if (gap > 0) Log("reload %zu: failures over %.0f ms", k + 1, gap);
    }
  }

  // Polls until worker `pid` serves every slot at the origin; false (and the error) at the
  // deadline.
  bool ServesEverySlot(int pid, milliseconds deadline) {
    int serving = -1;
    if (WaitUntil(
            [&] {
              serving = SlotsServing(haproxy_->master_socket(), pid, origin_.port);
              return serving == options_.slots;
            },
            deadline, milliseconds(20))) {
      return true;
    }
    return Fail(absl::StrCat("worker ", pid, " serves ", serving, " of ", options_.slots,
                             " slots after ", deadline.count(),
                             " ms; hawk: ", hawk_->Workers().raw.substr(0, 2000)));
  }

  bool Setup() {
    std::string error;
    origin_ = StartOrigin(dir_, options_.backend_binary, "live", 0, &error);
    if (!origin_.process) return Fail(error);
    frontend_port_ = hawk::testing::FreeTcpPort();
    haproxy_ = std::make_unique<HaproxyProcess>(dir_, HaproxyConfig(frontend_port_, options_.slots),
                                                options_.haproxy_binary);
    if (hawk::testing::Result started = haproxy_->Start(seconds(30)); !started) {
      return Fail("haproxy: " + started.error);
    }
    current_worker_ = haproxy_->CurrentWorkerPid();
    // HawkProcess finds the binary in HAWK_BINARY.
    ::setenv("HAWK_BINARY", options_.hawk_binary.c_str(), 1);
    std::vector<std::string> args = {"--haproxy-config", haproxy_->config_path(), "--state-dir",
                                     dir_.File("state"), "--log-level",           "warn"};
    for (std::string& flag : ModeFlags(options_.mode)) args.push_back(std::move(flag));
    hawk_ = std::make_unique<HawkProcess>(dir_, haproxy_->master_socket(), args);
    if (!hawk_->ok() || !hawk_->WaitServing() ||
        !WaitUntil([&] { return hawk::testing::ReadyWithACurrentWorker(*hawk_); }, seconds(10))) {
      return Fail("hawk did not become ready: " + hawk_->error() + hawk_->LogTail());
    }
    return true;
  }

  // Every slot -> the origin, READY, on every worker.
  bool Seed() {
    Clock::time_point start = Clock::now();
    // HawkProcess::Put gives up after 10 s; 10,000 slots on 2.6 take 5-8 s, longer under ASan.
    HttpResult put = hawk::testing::Fetch(hawk_->api_address(), "PUT", "/v1/state?timeoutMs=60000",
                                          DesiredState(options_.slots, origin_.port), seconds(90));
    if (put.status != 200) {
      return Fail(absl::StrCat("PUT /v1/state: ", put.status, " ", put.body, put.error));
    }
    if (!ServesEverySlot(current_worker_, seconds(60))) return false;
    result_->seed_ms = MsSince(start);
    Log("%d slots seeded in %.0f ms", options_.slots, result_->seed_ms);
    return true;
  }

  // The load, warmed up: every client has been served, none failed.
  bool StartLoad() {
    LoadOptions load;
    load.binary = options_.load_client_binary;
    load.port = frontend_port_;
    load.connections = 0;
    load.one_shot_connections = options_.clients;
    load.prober_interval_ms = 0;
    std::string error;
    if (!load_.Start(dir_, load, &error)) return Fail(error);
    LoadSummary warm;
    WaitUntil(
        [&] {
          warm = load_.Snapshot();
          return warm.requests >= 20 * options_.clients;
        },
        seconds(10), milliseconds(20));
    if (warm.requests < 20 * options_.clients || warm.failures > 0) {
      std::vector<std::string> events;
      load_.FailuresNotOn(0, &events);
      return Fail(absl::StrCat("before any reload the load got ", warm.failures, " failures in ",
                               warm.requests, " requests: ", events.empty() ? "" : events[0]));
    }
    load_.FailuresNotOn(0, nullptr);  // skip warm-up events (none failed)
    return true;
  }

  bool Reload(BornWithReload* r) {
    if (options_.mode != BornWithMode::kExternal) {
      HttpResult reload = hawk_->Post("/v1/reload", "", seconds(60));
      r->new_worker = NewWorkerPid(reload.body);
      // hawk's own notes (a pre-sync that ran out of time, a master briefly away), not
      // HAProxy's startup output that follows them.
      std::string log = ReloadLog(reload.body);
      log = log.substr(0, log.find("HAProxy:"));
      while (!log.empty() && log.back() == '\n') log.pop_back();
      if (!log.empty()) Log("hawk's reload log: %s", log.c_str());
      if (reload.status != 200 || r->new_worker == 0) {
        return Fail(
            absl::StrCat("POST /v1/reload: ", reload.status, " ", reload.body, reload.error));
      }
      return true;
    }
    // Past hawk: the master's own `reload`. On 2.6 it answers nothing and re-executes; a new
    // worker in `show proc` is the reload's end. On 3.x it answers once the new worker is up.
    int reloads_before = 0;
    std::set<int> before = ListedWorkers(haproxy_->master_socket(), &reloads_before);
    if (before.empty()) return Fail("show proc on the master failed before a reload");
    if (hawk::testing::Result sent = haproxy_->ReloadViaCli(seconds(30)); !sent) {
      return Fail(sent.error);
    }
    bool listed = WaitUntil(
        [&] {
          int reloads = 0;
          for (int pid : ListedWorkers(haproxy_->master_socket(), &reloads)) {
            if (before.count(pid) == 0 && reloads > reloads_before) {
              r->new_worker = pid;
              return true;
            }
          }
          return false;
        },
        seconds(30), milliseconds(10));
    if (!listed) return Fail("no new worker within 30 s of the master's `reload`");
    return true;
  }

  const BornWithOptions& options_;
  BornWithResult* result_ = nullptr;
  // Declared in the order they start: destroyed (stopped) in reverse.
  TempDir dir_;
  Origin origin_;
  int frontend_port_ = -1;
  std::unique_ptr<HaproxyProcess> haproxy_;
  int current_worker_ = 0;
  std::unique_ptr<HawkProcess> hawk_;
  LoadProcess load_;
};

}  // namespace

const char* BornWithModeName(BornWithMode mode) {
  switch (mode) {
    case BornWithMode::kBaseline:
      return "baseline";
    case BornWithMode::kHawk:
      return "hawk";
    case BornWithMode::kExternal:
      return "external";
  }
  return "?";
}

BornWithResult RunBornWith(const BornWithOptions& options) {
  BornWithResult result;
  Clock::time_point start = Clock::now();
  {
    BornWithCase run(options);
    run.Run(&result);
  }  // every process stopped
  result.case_seconds = MsSince(start) / 1000;
  return result;
}

void FillBinaries(BornWithOptions* options, const std::string& default_hawk,
                  const std::string& default_backend, const std::string& default_load_client) {
  options->hawk_binary = ProgramFromEnv("HAWK_BINARY", default_hawk);
  options->backend_binary = ProgramFromEnv("HAWK_E2E_BACKEND", default_backend);
  options->load_client_binary = ProgramFromEnv("HAWK_LOAD_CLIENT", default_load_client);
}

std::string FailureFigure(const BornWithResult& result) {
  std::string text = absl::StrCat(result.failures, "/", result.requests);
  if (result.failures_by_kind.empty()) return text;
  text += " (";
  bool first = true;
  for (const auto& [kind, count] : result.failures_by_kind) {
    absl::StrAppend(&text, first ? "" : ", ", kind, " ", count);
    first = false;
  }
  return text + ")";
}

}  // namespace hawk::e2e

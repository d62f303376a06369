#include "tests/e2e/scenario.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include "simdjson.h"
#include "tests/e2e/scenario_processes.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/master_cli.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_until.h"

namespace hawk::e2e {
namespace {

using hawk::testing::HaproxyProcess;
using hawk::testing::HawkProcess;
using hawk::testing::HttpResult;
using hawk::testing::MasterCli;
using hawk::testing::TempDir;
using hawk::testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// How long an origin keeps the connections it already has after SIGTERM (hawk_e2e_backend's
// --lame-duck-ms): every request on them gets `Connection: close`, so each worker moves off A one
// response at a time. Without it A's idle close races a request a worker has just sent on a kept
// connection to A; in a CI run on 3.4 one such request came back as a 502 after `retries 3`
// (`SH--`, the server closed before its headers, four times), which is the origin's shutdown race,
// not stale state. New connects to A still fail at once, and they are what stale state sends.
// The flip comes after the reload, so A's lame duck outlasts a leaving worker's `grace 1s`.
constexpr int kOriginLameDuckMs = 1000;

std::string HaproxyConfig(const HaproxyVariant& variant, int frontend_port, int origin_port,
                          int cycle) {
  std::ostringstream c;
  c << "global\n"
    << variant.global_lines << "defaults\n"
    << "    mode http\n"
    << "    timeout connect 100ms\n"
    << "    timeout client 30s\n"
    << "    timeout server 30s\n"
    << "    timeout http-keep-alive 60s\n"
    << "    retries 3\n"
    // What operators set for origins that close idle keep-alive connections. A retry goes to
    // SRV_1's address as the worker holds it, so a stale worker still fails (503 after the
    // connect retries) and a current one succeeds.
    << "    retry-on conn-failure empty-response\n"
    << "    option redispatch\n"
    << variant.defaults_lines << "frontend fe\n"
    << "    bind 127.0.0.1:" << frontend_port << "\n"
    << "    http-after-response set-header X-Pid %pid\n"
    << "    default_backend be\n"
    << "backend be\n";
  if (variant.slots) {
    c << "    server-template SRV_ 1-2 192.0.2.1:80 disabled\n";
  } else {
    c << "    server SRV_1 127.0.0.1:" << origin_port << "\n"
      << "    server SRV_2 192.0.2.1:80 disabled\n";
  }
  // The structural change of this cycle: something only a reload can bring.
  c << "backend be_cycle_" << cycle << "\n"
    << "    server s1 127.0.0.1:" << origin_port << " disabled\n";
  return c.str();
}

std::string DesiredState(int cycle, int origin_port) {
  return "{\"version\":\"c" + std::to_string(cycle) +
         "\",\"backends\":[{\"name\":\"be\",\"servers\":[{\"name\":\"SRV_1\","
         "\"address\":\"127.0.0.1\",\"port\":" +
         std::to_string(origin_port) + ",\"state\":\"READY\"}]}]}";
}

// How much stale state a /v1/workers report shows: stale objects, streams on stale servers and
// connections still on leaving workers. The report with the highest score is kept per cycle.
int ReportScore(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::array workers;
  if (parser.parse(json)["workers"].get(workers) != simdjson::SUCCESS) return -1;
  int score = 0;
  for (simdjson::dom::element w : workers) {
    simdjson::dom::array stale;
    if (w["stale"].get(stale) == simdjson::SUCCESS) score += static_cast<int>(stale.size());
    int64_t n = 0;
    if (w["sessionsOnStaleServers"].get(n) == simdjson::SUCCESS) score += static_cast<int>(n);
    std::string_view role;
    if (w["role"].get(role) == simdjson::SUCCESS && role == "LEAVING" &&
        w["connections"].get(n) == simdjson::SUCCESS) {
      score += static_cast<int>(n);
    }
  }
  return score;
}

}  // namespace

const char* ModeName(Mode mode) { return mode == Mode::kHawk ? "hawk" : "baseline"; }

std::vector<HaproxyVariant> StandardVariants() {
  return {
      {"default", "", ""},
      {"grace 1s", "    grace 1s\n", ""},
      {"idle-close-on-response", "", "    option idle-close-on-response\n"},
      {"close-spread-time 1s", "    close-spread-time 1s\n", ""},
      {"recommended", "    grace 1s\n    hard-stop-after 30s\n",
       "    option idle-close-on-response\n"},
      {"grace 1s + slots", "    grace 1s\n", "", /*slots=*/true},
  };
}

HaproxyVariant VariantNamed(const std::string& name) {
  std::vector<HaproxyVariant> all = StandardVariants();
  for (const HaproxyVariant& v : all) {
    if (v.name == name) return v;
  }
  return all.front();
}

void FillBinaries(ScenarioOptions* options, const std::string& default_hawk,
                  const std::string& default_backend, const std::string& default_load_client) {
  options->hawk_binary = ProgramFromEnv("HAWK_BINARY", default_hawk);
  options->backend_binary = ProgramFromEnv("HAWK_E2E_BACKEND", default_backend);
  options->load_client_binary = ProgramFromEnv("HAWK_LOAD_CLIENT", default_load_client);
}

ScenarioResult RunScenario(const ScenarioOptions& options) {
  ScenarioResult result;
  TempDir dir;
  std::string error;
  Origin a = StartOrigin(dir, options.backend_binary, "origin-0", kOriginLameDuckMs, &error);
  if (!a.process) {
    result.error = error;
    return result;
  }
  int frontend_port = hawk::testing::FreeTcpPort();
  HaproxyProcess haproxy(dir, HaproxyConfig(options.variant, frontend_port, a.port, 0),
                         options.haproxy_binary);
  if (hawk::testing::Result started = haproxy.Start(); !started) {
    result.error = "haproxy: " + started.error;
    return result;
  }
  // HawkProcess finds the binary in HAWK_BINARY.
  ::setenv("HAWK_BINARY", options.hawk_binary.c_str(), 1);
  HawkProcess hawk(dir, haproxy.master_socket(),
                   {"--haproxy-config", haproxy.config_path(), "--workers",
                    options.mode == Mode::kHawk ? "all" : "current", "--state-dir",
                    dir.File("state"), "--log-level", "info"});
  if (!hawk.ok() || !hawk.WaitServing() ||
      !WaitUntil([&] { return hawk.Get("/readyz").status == 200; }, seconds(5))) {
    result.error = "hawk did not become ready: " + hawk.error() + hawk.LogTail();
    return result;
  }
  if (HttpResult put = hawk.Put("/v1/state", DesiredState(0, a.port)); put.status != 200) {
    result.error = "initial PUT: " + std::to_string(put.status) + " " + put.body;
    return result;
  }
  LoadProcess load;
  LoadOptions load_options;
  load_options.binary = options.load_client_binary;
  load_options.port = frontend_port;
  load_options.connections = options.connections;
  load_options.one_shot_connections = options.one_shot_connections;
  load_options.prober_interval_ms = options.prober_interval_ms;
  if (!load.Start(dir, load_options, &error)) {
    result.error = error;
    return result;
  }
  // Warm up: every connection has been served once.
  WaitUntil([&] { return load.Snapshot().requests > 100; }, seconds(5), milliseconds(20));
  LoadSummary last = load.Snapshot();
  load.FailuresNotOn(0, nullptr);  // skip warm-up events

  std::mt19937 rng(options.seed);
  std::uniform_int_distribution<int> flip_delay(options.min_flip_delay_ms,
                                                options.max_flip_delay_ms);
  for (int cycle = 1; cycle <= options.cycles; ++cycle) {
    CycleResult c;
    c.flip_delay_ms = flip_delay(rng);
    c.old_worker = haproxy.CurrentWorkerPid();
    std::string config = HaproxyConfig(options.variant, frontend_port, a.port, cycle);
    HttpResult reload;
    Clock::time_point start = Clock::now();
    std::thread reloader([&] {
      reload = hawk.Post("/v1/reload", "{\"config\":" + hawk::testing::JsonQuote(config) + "}",
                         seconds(30));
    });
    // The flip, inside the reload window: B up, SRV_1 -> B everywhere hawk reaches, A gone.
    std::this_thread::sleep_until(start + milliseconds(c.flip_delay_ms));
    Origin b = StartOrigin(dir, options.backend_binary, "origin-" + std::to_string(cycle),
                           kOriginLameDuckMs, &error);
    if (!b.process) {
      reloader.join();
      result.error = error;
      return result;
    }
    HttpResult put = hawk.Put("/v1/state?timeoutMs=2000", DesiredState(cycle, b.port));
    a.process->Signal(SIGTERM);
    Clock::time_point flipped = Clock::now();
    c.reload_sent_ms = MonotonicMs(start);
    c.put_answered_ms = MonotonicMs(flipped);
    for (int after_ms : {0, 100, 300}) {
      std::this_thread::sleep_until(flipped + milliseconds(after_ms));
      std::string report = hawk.Get("/v1/workers").body;
      if (int score = ReportScore(report); score > c.report_score) {
        c.report_score = score;
        c.report = report;
      }
    }
    reloader.join();
    c.reload_ok = reload.status == 200;
    c.new_worker = NewWorkerPid(reload.body);
    if (!c.reload_ok || put.status != 200) {
      result.error = "cycle " + std::to_string(cycle) + ": reload " +
                     std::to_string(reload.status) + " " + reload.body + "; PUT " +
                     std::to_string(put.status) + " " + put.body;
      return result;
    }
    // The cycle is over once no worker is leaving.
    WaitUntil(
        [&] {
          auto list = MasterCli::ShowProc(haproxy.master_socket(), seconds(1));
          return list && list->old_workers.empty();
        },
        seconds(10), milliseconds(10));
    a.process->WaitExit(seconds(5));
    LoadSummary now = load.Snapshot();
    c.requests = now.requests - last.requests;
    c.failures = now.failures - last.failures;
    c.retries = now.retries - last.retries;
    c.failures_on_leaving = load.FailuresNotOn(c.new_worker, &c.failure_events);
    last = now;
    if (options.verbose) {
      std::fprintf(stderr,
                   "%s/%s cycle %d: flip at %d ms, %lld requests, %lld failures (%lld on the "
                   "leaving worker), %lld retries\n",
                   ModeName(options.mode), options.variant.name.c_str(), cycle, c.flip_delay_ms,
                   static_cast<long long>(c.requests), static_cast<long long>(c.failures),
                   static_cast<long long>(c.failures_on_leaving),
                   static_cast<long long>(c.retries));
    }
    result.cycles.push_back(std::move(c));
    a = std::move(b);
  }
  LoadSummary total = load.Finish();
  result.ok = total.ok;
  if (!total.ok) result.error = "the load client's final summary is missing";
  result.requests = total.requests;
  result.failures = total.failures;
  result.retries = total.retries;
  result.rps = total.rps;
  result.p99_ms = total.p99_ms;
  int64_t worst = 0;
  for (size_t i = 0; i < result.cycles.size(); ++i) {
    result.failures_on_leaving += result.cycles[i].failures_on_leaving;
    if (result.cycles[i].failures > worst) {
      worst = result.cycles[i].failures;
      result.worst_cycle = static_cast<int>(i);
    }
  }
  return result;
}

}  // namespace hawk::e2e

// How long after a reload hawk's report shows both workers, and hawk's idle memory.
//
// Each round: a slow request in flight on the current worker, `reload` on the master socket,
// then two clocks: when the new worker first appears in `show proc` (polled by this program
// through its own master connection, every 2 ms) and when hawk's /v1/workers shows the new
// worker CURRENT and the old one LEAVING with its connection. Prints the distribution of the
// difference (hawk's lag behind HAProxy's own listing) and of reload→report.
//
//   build/default/bench/reload_report_latency [rounds]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench/stats.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/master_cli.h"
#include "tests/support/wait_until.h"

using hawk::bench::Ms;
using hawk::bench::PrintDistribution;
using hawk::testing::Backend;
using hawk::testing::BasicHaproxyConfig;
using hawk::testing::HaproxyProcess;
using hawk::testing::HawkProcess;
using hawk::testing::InFlightRequest;
using hawk::testing::TempDir;
using hawk::testing::WaitUntil;
using hawk::testing::WorkersView;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  TempDir dir;
  Backend backend(dir, "app");
  if (!backend.ok()) {
    std::fprintf(stderr, "backend: %s\n", backend.error().c_str());
    return 1;
  }
  int port = hawk::testing::FreeTcpPort();
  HaproxyProcess haproxy(dir, BasicHaproxyConfig(port, backend.port()));
  if (auto r = haproxy.Start(); !r) {
    std::fprintf(stderr, "haproxy: %s\n", r.error.c_str());
    return 1;
  }
  HawkProcess hawk(dir, haproxy.master_socket(), {"--log-level", "warn"});
  if (!hawk.WaitServing() ||
      !WaitUntil([&] { return hawk.Get("/readyz").status == 200; }, std::chrono::seconds(5))) {
    std::fprintf(stderr, "hawk did not become ready:\n%s\n", hawk.LogTail().c_str());
    return 1;
  }

  std::vector<double> lag;  // new worker in show proc → both in hawk's report
  std::vector<double> reload_to_report;
  for (int i = 0; i < rounds; ++i) {
    pid_t old_worker = haproxy.CurrentWorkerPid();
    InFlightRequest slow(port, "/slow?ms=2000");
    slow.WaitSent(std::chrono::seconds(2));
    // The request is on the worker once the worker counts it (asked directly, not via hawk).
    bool held = WaitUntil(
        [&] {
          return hawk::testing::MasterCli::Command(haproxy.master_socket(),
                                                   "@!" + std::to_string(old_worker) + " show info")
                     .find("CurrConns: 1") != std::string::npos;
        },
        std::chrono::seconds(2), milliseconds(2));
    if (!held) {
      std::fprintf(stderr, "round %d: the slow request never reached worker %d\n", i, old_worker);
      continue;
    }
    Clock::time_point reload_at = Clock::now();
    if (auto r = haproxy.ReloadViaCli(); !r) {
      std::fprintf(stderr, "round %d: reload: %s\n", i, r.error.c_str());
      continue;
    }
    pid_t new_worker = -1;
    Clock::time_point appeared;
    WaitUntil(
        [&] {
          auto list =
              hawk::testing::MasterCli::ShowProc(haproxy.master_socket(), milliseconds(500));
          if (!list) return false;
          for (int pid : list->workers) {
            if (pid != old_worker) new_worker = pid;
          }
          appeared = Clock::now();
          return new_worker > 0;
        },
        std::chrono::seconds(5), milliseconds(2));
    WorkersView view;
    bool both = WaitUntil(
        [&] {
          view = hawk.Workers();
          const auto* cur = view.Find(new_worker);
          const auto* old = view.Find(old_worker);
          return cur && old && cur->role == "CURRENT" && old->role == "LEAVING" &&
                 old->connections >= 1;
        },
        std::chrono::seconds(5), milliseconds(1));
    Clock::time_point shown = Clock::now();
    if (!both || new_worker <= 0) {
      std::fprintf(stderr, "round %d: report incomplete: %s\n", i, view.raw.c_str());
      continue;
    }
    lag.push_back(std::max(0.0, Ms(shown - appeared)));
    reload_to_report.push_back(Ms(shown - reload_at));
    slow.Wait(std::chrono::seconds(5));
    WaitUntil([&] { return hawk.Workers().workers.size() == 1; }, std::chrono::seconds(5));
  }
  if (lag.empty()) return 1;
  std::printf("HAProxy %s, %d reload rounds, one slow request in flight each\n",
              hawk.Workers().workers.empty() ? "?" : "2.6", rounds);
  PrintDistribution("new worker in show proc -> hawk report", lag);
  PrintDistribution("reload sent -> hawk report (both workers)", reload_to_report);

  // Idle memory: a few seconds of polling with nothing happening.
  WaitUntil([] { return false; }, std::chrono::seconds(3), milliseconds(100));
  std::printf("hawk idle RSS: %ld KiB\n", RssKiB(hawk.pid()));
  return 0;
}

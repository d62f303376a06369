// Reload orchestration: how long POST /v1/reload takes, and how soon the new worker holds the
// desired state (time-to-seeded), against a baseline measured in the same run: a bare `reload`
// sent to the master socket by this program, timed until the new worker is listed.
//
// Each round alternates the two. The desired state moves SRV_1 of be_app to backend B and fills
// a map, while the configuration file keeps SRV_1 on A and the map empty, so a new worker starts
// stale and is "seeded" once `@!<new> show servers state be_app` shows B's port and the map has
// its entry (polled by this program through its own master connections, every 1 ms).
//
//   build/default/bench/reload_seed [rounds]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/stats.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/master_cli.h"
#include "tests/support/wait_until.h"

using hawk::bench::Median;
using hawk::bench::Ms;
using hawk::bench::PrintDistribution;
using hawk::testing::Backend;
using hawk::testing::HaproxyProcess;
using hawk::testing::HawkProcess;
using hawk::testing::HttpResult;
using hawk::testing::MasterCli;
using hawk::testing::ReadServerRow;
using hawk::testing::StateHaproxyConfig;
using hawk::testing::TempDir;
using hawk::testing::WaitUntil;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// Polls `show proc` until a worker not in `known` is listed under `# workers`; its pid and when.
int WaitNewWorker(const std::string& socket, int old_worker, Clock::time_point* seen) {
  int found = -1;
  WaitUntil(
      [&] {
        auto list = MasterCli::ShowProc(socket, milliseconds(500));
        if (!list) return false;
        for (int pid : list->workers) {
          if (pid != old_worker) found = pid;
        }
        *seen = Clock::now();
        return found > 0;
      },
      seconds(10), milliseconds(1));
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  TempDir dir;
  Backend a(dir, "A");
  Backend b(dir, "B");
  if (!a.ok() || !b.ok()) {
    std::fprintf(stderr, "backends: %s %s\n", a.error().c_str(), b.error().c_str());
    return 1;
  }
  int port = hawk::testing::FreeTcpPort();
  HaproxyProcess haproxy(dir, StateHaproxyConfig(dir, port, a.port()));
  if (auto r = haproxy.Start(); !r) {
    std::fprintf(stderr, "haproxy: %s\n", r.error.c_str());
    return 1;
  }
  HawkProcess hawk(dir, haproxy.master_socket(),
                   {"--log-level", "warn", "--haproxy-config", haproxy.config_path()});
  if (!hawk.WaitServing() ||
      !WaitUntil([&] { return hawk.Get("/readyz").status == 200; }, seconds(5))) {
    std::fprintf(stderr, "hawk did not become ready:\n%s\n", hawk.LogTail().c_str());
    return 1;
  }
  std::string map = dir.File("hosts.map");
  std::string desired =
      R"({"version":"v1","backends":[{"name":"be_app","servers":[{"name":"SRV_1",)"
      R"("address":"127.0.0.1","port":)" +
      std::to_string(b.port()) + R"(}]}],"maps":[{"name":")" + map +
      R"(","entries":[{"key":"a.example.com","value":"be_other"}]}]})";
  if (HttpResult put = hawk.Put("/v1/state", desired); put.status != 200) {
    std::fprintf(stderr, "PUT: %d %s\n", put.status, put.body.c_str());
    return 1;
  }
  auto seeded = [&](int pid) {
    return ReadServerRow(haproxy.master_socket(), pid, "be_app", "SRV_1").port == b.port() &&
           MasterCli::Command(haproxy.master_socket(),
                              "@!" + std::to_string(pid) + " show map " + map)
                   .find("a.example.com") != std::string::npos;
  };

  std::vector<double> raw_reload, hawk_post, hawk_duration, hawk_listed, listed_to_seeded,
      post_to_seeded;
  for (int i = 0; i < rounds; ++i) {
    // Baseline: `reload` on the master socket, until the new worker is listed.
    int old_worker = haproxy.CurrentWorkerPid();
    Clock::time_point start = Clock::now();
    haproxy.ReloadViaCli();
    Clock::time_point listed;
    int raw_worker = WaitNewWorker(haproxy.master_socket(), old_worker, &listed);
    if (raw_worker <= 0) continue;
    raw_reload.push_back(Ms(listed - start));
    WaitUntil([&] { return seeded(raw_worker); }, seconds(5), milliseconds(1));

    // hawk: POST /v1/reload from a thread while this one watches `show proc` and the new worker.
    old_worker = raw_worker;
    std::atomic<bool> answered{false};
    HttpResult post;
    Clock::time_point answered_at;
    start = Clock::now();
    std::thread poster([&] {
      post = hawk.Post("/v1/reload", "");
      answered_at = Clock::now();
      answered = true;
    });
    int new_worker = WaitNewWorker(haproxy.master_socket(), old_worker, &listed);
    bool ok = new_worker > 0 &&
              WaitUntil([&] { return seeded(new_worker); }, seconds(5), milliseconds(1));
    Clock::time_point seeded_at = Clock::now();
    poster.join();
    if (!ok || post.status != 200) {
      std::fprintf(stderr, "round %d: POST %d %s\n", i, post.status, post.body.c_str());
      continue;
    }
    size_t at = post.body.find("\"durationMs\":");
    if (at != std::string::npos) hawk_duration.push_back(std::atof(post.body.c_str() + at + 13));
    hawk_post.push_back(Ms(answered_at - start));
    hawk_listed.push_back(Ms(listed - start));
    listed_to_seeded.push_back(std::max(0.0, Ms(seeded_at - listed)));
    post_to_seeded.push_back(Ms(seeded_at - start));
  }
  if (raw_reload.empty() || hawk_post.empty()) return 1;
  std::printf("HAProxy 2.6, %d rounds; each a bare `reload` (baseline) then POST /v1/reload\n",
              rounds);
  PrintDistribution("baseline: `reload` sent -> new worker listed", raw_reload);
  PrintDistribution("hawk: POST sent -> new worker listed", hawk_listed);
  PrintDistribution("hawk: POST sent -> answered (success, new pid)", hawk_post);
  PrintDistribution("hawk: durationMs reported (`reload` -> verdict)", hawk_duration);
  PrintDistribution("hawk: new worker listed -> holds the desired state", listed_to_seeded);
  PrintDistribution("hawk: POST sent -> new worker holds the desired state", post_to_seeded);
  std::printf("ratio POST->listed / baseline (median): %.2f\n",
              Median(hawk_listed) / Median(raw_reload));
  return 0;
}

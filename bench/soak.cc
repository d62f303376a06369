// A soak: hawk beside a real HAProxy for a long time, reloads every 2 s and pushes every 100 ms
// (issue 14), printing hawk's RSS and open file descriptors as it goes: both must stay flat.
//
// HAProxy in master-worker mode with one backend and a map (StateHaproxyConfig), a backend, hawk
// with --state-dir (so every push is journalled and compacted). Each push is a PUT alternating
// SRV_1's weight and one map entry (timeoutMs=0: acknowledged once persisted); each reload is a
// SIGUSR2 to the master. Every `--sample-every` hawk's VmRSS and its /proc/<pid>/fd count are
// printed; at the end, the min and max after the first sample (warm-up), and whether every worker
// holds the last push.
//
//   build/default/bench/soak [--minutes M] [--reload-every-ms R] [--push-every-ms P]
//                            [--sample-every-s S] [--haproxy-binary PATH]

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/wait_until.h"

using hawk::testing::Backend;
using hawk::testing::EveryWorkerHolds;
using hawk::testing::FreeTcpPort;
using hawk::testing::HaproxyProcess;
using hawk::testing::HawkProcess;
using hawk::testing::HttpResult;
using hawk::testing::ResidentKib;
using hawk::testing::StateHaproxyConfig;
using hawk::testing::TempDir;
using hawk::testing::WaitUntil;
using hawk::testing::WorkersView;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// SIGINT/SIGTERM end the soak early, with its summary, and every process it started stopped.
volatile std::sig_atomic_t g_stop = 0;

long OpenFds(pid_t pid) {
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (dir == nullptr) return -1;
  long count = 0;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  double minutes = 60;
  int reload_every_ms = 2000;
  int push_every_ms = 100;
  int sample_every_s = 60;
  std::string haproxy_binary = HaproxyProcess::DefaultBinary();
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    bool ok = true;
    if (flag == "--minutes") {
      ok = absl::SimpleAtod(value, &minutes);
    } else if (flag == "--reload-every-ms") {
      ok = absl::SimpleAtoi(value, &reload_every_ms);
    } else if (flag == "--push-every-ms") {
      ok = absl::SimpleAtoi(value, &push_every_ms);
    } else if (flag == "--sample-every-s") {
      ok = absl::SimpleAtoi(value, &sample_every_s);
    } else if (flag == "--haproxy-binary") {
      haproxy_binary = value;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "soak: bad argument %s %s\n", flag.c_str(), value.c_str());
      return 2;
    }
  }
  if (std::getenv("HAWK_BINARY") == nullptr) ::setenv("HAWK_BINARY", HAWK_DEFAULT_BINARY, 1);
  if (std::getenv("HAWK_TEST_BACKEND") == nullptr) {
    ::setenv("HAWK_TEST_BACKEND", HAWK_DEFAULT_TEST_BACKEND, 1);
  }

  TempDir dir;
  Backend backend(dir, "A");
  if (!backend.ok()) {
    std::fprintf(stderr, "soak: backend: %s\n", backend.error().c_str());
    return 1;
  }
  HaproxyProcess haproxy(dir, StateHaproxyConfig(dir, FreeTcpPort(), backend.port()),
                         haproxy_binary);
  if (auto started = haproxy.Start(); !started) {
    std::fprintf(stderr, "soak: haproxy: %s\n", started.error.c_str());
    return 1;
  }
  HawkProcess hawk(dir, haproxy.master_socket(), {"--state-dir", dir.File("state")});
  if (!hawk.ok() || !hawk.WaitServing()) {
    std::fprintf(stderr, "soak: hawk: %s\n%s\n", hawk.error().c_str(), hawk.LogTail().c_str());
    return 1;
  }
  std::printf("soak: HAProxy %d.%d (%s), %.1f min, a reload every %d ms, a push every %d ms\n",
              haproxy.version().major, haproxy.version().minor, haproxy_binary.c_str(), minutes,
              reload_every_ms, push_every_ms);
  std::printf(
      "| minute | hawk RSS KiB | hawk open fds | pushes | failed pushes | master reloads |\n"
      "|---|---|---|---|---|---|\n");
  std::fflush(stdout);

  auto start = Clock::now();
  auto end = start + milliseconds(static_cast<long>(minutes * 60000));
  auto next_reload = start + milliseconds(reload_every_ms);
  auto next_sample = start + seconds(sample_every_s);
  long pushes = 0;
  long failed = 0;
  std::string last_version;
  long rss_min = -1, rss_max = -1, fds_min = -1, fds_max = -1;
  int samples = 0;
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  while (Clock::now() < end && g_stop == 0) {
    ++pushes;
    last_version = absl::StrCat("p", pushes);
    std::string body = absl::StrCat(
        R"({"version":")", last_version,
        R"(","backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"127.0.0.1",)",
        R"("port":)", backend.port(), R"(,"weight":)", 1 + pushes % 250, R"(}]}],)",
        R"("maps":[{"name":")", dir.File("hosts.map"),
        R"(","entries":[{"key":"soak.example.com","value":"be_)", pushes % 7, R"("}]}]})");
    HttpResult put = hawk.Put("/v1/state?timeoutMs=0", body);
    if (put.status != 200) ++failed;
    auto now = Clock::now();
    if (now >= next_reload) {
      if (!haproxy.ReloadViaSignal()) std::fprintf(stderr, "soak: reload signal failed\n");
      next_reload += milliseconds(reload_every_ms);
    }
    if (now >= next_sample) {
      long rss = ResidentKib(hawk.pid());
      long fds = OpenFds(hawk.pid());
      WorkersView view = hawk.Workers();
      double minute = std::chrono::duration<double>(now - start).count() / 60;
      std::printf("| %.1f | %ld | %ld | %ld | %ld | %d |\n", minute, rss, fds, pushes, failed,
                  view.master_reloads);
      std::fflush(stdout);
      if (samples++ > 0) {  // the first sample is the warm-up
        rss_min = rss_min < 0 ? rss : std::min(rss_min, rss);
        rss_max = std::max(rss_max, rss);
        fds_min = fds_min < 0 ? fds : std::min(fds_min, fds);
        fds_max = std::max(fds_max, fds);
      }
      next_sample += seconds(sample_every_s);
    }
    std::this_thread::sleep_until(now + milliseconds(push_every_ms));
  }
  bool converged = WaitUntil([&] { return EveryWorkerHolds(hawk, last_version); }, seconds(20));
  bool alive = hawk.process()->Running();
  std::printf(
      "\nafter warm-up: RSS %ld-%ld KiB, open fds %ld-%ld; %ld pushes (%ld failed); every "
      "worker holds the last push: %s; hawk running: %s\n",
      rss_min, rss_max, fds_min, fds_max, pushes, failed, converged ? "yes" : "NO",
      alive ? "yes" : "NO");
  return converged && alive && failed == 0 ? 0 : 1;
}

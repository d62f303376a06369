// A reload storm through hawk on a configuration with 10,000 servers and `grace` (issue 25),
// longer than tests/integration/master_wedge_test.cc: per round, `--reloads` reloads through hawk
// (POST /v1/reload, a push before each) while another client polls the master with `show proc`
// every 50 ms; then, once the leaving workers are gone (or 20 s passed), how fast the master
// answers `show proc`, how many of its 10 slots are free (connections opened together, held, each
// answered), and hawk's own account from /metrics. HAProxy 2.6 keeps a master slot for good when
// it relays a command to a worker that is exiting: ten, and the master answers no one.
//
//   build/default/bench/master_storm [--rounds R] [--reloads N] [--grace-ms G] [--servers S]
//                                    [--haproxy all|LABEL|LABEL=PATH,…]
// HAWK_BINARY selects the hawk binary (default: this build's), e.g. an older build to compare.

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_haproxy.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/master_cli.h"
#include "tests/support/socket_util.h"
#include "tests/support/wait_until.h"

using hawk::testing::Backend;
using hawk::testing::BasicHaproxyConfig;
using hawk::testing::CliReply;
using hawk::testing::Clock;
using hawk::testing::ConnectUnix;
using hawk::testing::Fetch;
using hawk::testing::FreeTcpPort;
using hawk::testing::HaproxyProcess;
using hawk::testing::HawkProcess;
using hawk::testing::HttpResult;
using hawk::testing::MasterCli;
using hawk::testing::ProcList;
using hawk::testing::ReadSome;
using hawk::testing::ReadyWithACurrentWorker;
using hawk::testing::TempDir;
using hawk::testing::UniqueFd;
using hawk::testing::WaitUntil;
using hawk::testing::WriteAll;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

std::string StormState(int round, int backend_port) {
  std::string json = absl::StrCat(R"({"version":"s)", round,
                                  R"(","backends":[{"name":"be_app","servers":[{"name":"SRV_1",)",
                                  R"("address":"127.0.0.1","port":)", backend_port, R"(,"weight":)",
                                  1 + round % 200, R"(}]},{"name":"be_bulk","servers":[)");
  for (int i = 1; i <= 20; ++i) {
    absl::StrAppend(&json, i > 1 ? "," : "", R"({"name":"bulk)", i,
                    R"(","address":"127.0.0.1","port":9,"weight":)", 1 + (round * 7 + i) % 256,
                    "}");
  }
  return json + "]}]}";
}

// Opens up to `want` master connections together, each in prompt mode answering `show proc`
// within 2 s, and keeps them until all are counted.
int FreeSlots(const std::string& socket, int want) {
  std::vector<UniqueFd> held;
  auto deadline = Clock::now() + seconds(2);
  for (int i = 0; i < want; ++i) {
    std::string error;
    UniqueFd fd = ConnectUnix(socket, deadline, &error);
    if (!fd.valid() || !WriteAll(fd.get(), "prompt\nshow proc\n", deadline, &error)) continue;
    std::string got;
    char buffer[4096];
    while (got.find("# workers") == std::string::npos || got.rfind("> ") + 2 != got.size()) {
      ssize_t n = ReadSome(fd.get(), buffer, sizeof(buffer), deadline, &error);
      if (n <= 0) break;
      got.append(buffer, static_cast<size_t>(n));
    }
    if (got.find("# workers") != std::string::npos) held.push_back(std::move(fd));
  }
  return static_cast<int>(held.size());
}

// A value of hawk's /metrics (`name ` at the start of a line), -1 if absent.
double Metric(const std::string& text, const std::string& name) {
  size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  size_t from = at + name.size() + 2;
  double value = -1;
  if (!absl::SimpleAtod(text.substr(from, text.find('\n', from) - from), &value)) return -1;
  return value;
}

struct RoundResult {
  int reloads_ok = 0;
  double storm_s = 0;
  int polls = 0;
  int unanswered = 0;  // polls the master did not answer within 2 s (or had no room for)
  bool old_workers_gone = false;
  double show_proc_ms = -1;  // -1: no answer within 1 s
  int free_slots = 0;        // of 10, counted with hawk still connected
  double slots_lost = -1, held = -1, relay_closes = -1, held_back = -1, not_relayed = -1;
};

RoundResult Round(const hawk::bench::Haproxy& version, int reloads, int grace_ms, int servers) {
  RoundResult result;
  TempDir dir;
  Backend backend(dir, "A");
  std::string config = BasicHaproxyConfig(FreeTcpPort(), backend.port(),
                                          absl::StrCat("    grace ", grace_ms, "ms\n")) +
                       absl::StrCat("backend be_bulk\n    server-template bulk ", servers,
                                    " 127.0.0.1:9 disabled\n");
  HaproxyProcess haproxy(dir, config, version.binary);
  if (auto started = haproxy.Start(seconds(60)); !started) {
    std::fprintf(stderr, "master_storm: haproxy: %s\n", started.error.c_str());
    std::exit(1);
  }
  HawkProcess hawk(dir, haproxy.master_socket(),
                   {"--haproxy-config", haproxy.config_path(), "--state-dir", dir.File("state"),
                    "--log-level", "info"});
  if (!hawk.ok() || !hawk.WaitServing() ||
      !WaitUntil([&] { return ReadyWithACurrentWorker(hawk); }, seconds(30))) {
    std::fprintf(stderr, "master_storm: hawk: %s\n%s\n", hawk.error().c_str(),
                 hawk.LogTail().c_str());
    std::exit(1);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> polls{0}, unanswered{0};
  std::thread poller([&] {
    while (!stop) {
      CliReply reply = MasterCli::Run(haproxy.master_socket(), "show proc", seconds(2));
      ++polls;
      if (!reply.ok && (reply.error == "timeout" || reply.error_number == EAGAIN)) ++unanswered;
      std::this_thread::sleep_for(milliseconds(50));
    }
  });
  auto began = Clock::now();
  for (int r = 1; r <= reloads; ++r) {
    hawk.Put("/v1/state?timeoutMs=0", StormState(r, backend.port()));
    HttpResult reload = hawk.Post("/v1/reload", "{}", seconds(60));
    if (reload.status == 200 && reload.body.find("SUCCEEDED") != std::string::npos) {
      ++result.reloads_ok;
    }
  }
  result.storm_s = std::chrono::duration<double>(Clock::now() - began).count();
  result.old_workers_gone = WaitUntil(
      [&] {
        std::optional<ProcList> list = MasterCli::ShowProc(haproxy.master_socket(), seconds(1));
        return list && list->old_workers.empty();
      },
      seconds(20), milliseconds(100));
  std::this_thread::sleep_for(seconds(1));
  stop = true;
  poller.join();
  result.polls = polls;
  result.unanswered = unanswered;
  auto asked = Clock::now();
  if (MasterCli::ShowProc(haproxy.master_socket(), seconds(1))) {
    result.show_proc_ms = std::chrono::duration<double, std::milli>(Clock::now() - asked).count();
  }
  result.free_slots = FreeSlots(haproxy.master_socket(), 10);
  std::string metrics = Fetch(hawk.probe_address(), "GET", "/metrics").body;
  result.slots_lost = Metric(metrics, "hawk_master_cli_slots_lost");
  result.held = Metric(metrics, "hawk_master_cli_connections_held");
  result.relay_closes = Metric(metrics, "hawk_master_cli_relay_closes_total");
  result.held_back = Metric(metrics, "hawk_master_cli_batches_held_back_total");
  result.not_relayed = Metric(metrics, "hawk_workers_not_relayed");
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3, reloads = 10, grace_ms = 2000, servers = 10000;
  std::string haproxy_spec = "all";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    bool ok = true;
    if (flag == "--rounds") {
      ok = absl::SimpleAtoi(value, &rounds);
    } else if (flag == "--reloads") {
      ok = absl::SimpleAtoi(value, &reloads);
    } else if (flag == "--grace-ms") {
      ok = absl::SimpleAtoi(value, &grace_ms);
    } else if (flag == "--servers") {
      ok = absl::SimpleAtoi(value, &servers);
    } else if (flag == "--haproxy") {
      haproxy_spec = value;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "master_storm: bad argument %s %s\n", flag.c_str(), value.c_str());
      return 2;
    }
  }
  if (std::getenv("HAWK_BINARY") == nullptr) ::setenv("HAWK_BINARY", HAWK_DEFAULT_BINARY, 1);
  if (std::getenv("HAWK_TEST_BACKEND") == nullptr) {
    ::setenv("HAWK_TEST_BACKEND", HAWK_DEFAULT_TEST_BACKEND, 1);
  }
  std::vector<hawk::bench::Haproxy> versions;
  if (!hawk::bench::ParseHaproxy(haproxy_spec, HAWK_DEFAULT_HAPROXY_MANIFEST, &versions)) return 2;
  std::printf("master_storm: hawk %s; %d rounds of %d reloads, %d servers, grace %d ms\n",
              std::getenv("HAWK_BINARY"), rounds, reloads, servers, grace_ms);
  std::printf(
      "| HAProxy | round | reloads ok | storm s | poller unanswered | old workers gone | "
      "show proc ms | free slots (of 10) | hawk slots lost | held | relay closes | held back | "
      "not relayed |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (hawk::bench::Haproxy& version : versions) {
    version.version_line = hawk::bench::VersionLine(version.binary);
    for (int round = 1; round <= rounds; ++round) {
      RoundResult r = Round(version, reloads, grace_ms, servers);
      std::printf(
          "| %s | %d | %d/%d | %.1f | %d of %d | %s | %s | %d | %.0f | %.0f | %.0f | %.0f | "
          "%.0f |\n",
          version.label.c_str(), round, r.reloads_ok, reloads, r.storm_s, r.unanswered, r.polls,
          r.old_workers_gone ? "yes" : "no",
          r.show_proc_ms < 0 ? "none" : absl::StrCat(r.show_proc_ms).substr(0, 5).c_str(),
          r.free_slots, r.slots_lost, r.held, r.relay_closes, r.held_back, r.not_relayed);
      std::fflush(stdout);
    }
  }
  return 0;
}

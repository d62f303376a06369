// The master CLI's 10 slots after a reload storm through hawk (issue 25). HAProxy 2.6 keeps a
// slot for good when it relays a command to a worker that is exiting (the worker has closed its
// end of the master's socketpair and frees its configuration, which takes a while with 10,000
// servers, before the master reaps it): the connect fails, the master sends the prompt alone,
// closes the client's side and keeps the session. Ten such commands and the master answers no
// one until it re-executes. hawk must never be the one that sends them, and never hold more than
// its own 2 slots. Real HAProxy (every version), 10,000 servers, `grace`, the real hawk binary.

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/master_cli.h"
#include "tests/support/socket_util.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kBulkServers = 10000;
// Servers of be_bulk the desired state sets (weights change with every version): pushes reach
// every worker, the leaving ones included, while the storm goes on.
constexpr int kManagedServers = 20;

std::string StormState(const std::string& version, int backend_port, int round) {
  std::string json = absl::StrCat(R"({"version":")", version,
                                  R"(","backends":[{"name":"be_app","servers":[{"name":"SRV_1",)",
                                  R"("address":"127.0.0.1","port":)", backend_port, R"(,"weight":)",
                                  1 + round % 200, R"(}]},{"name":"be_bulk","servers":[)");
  for (int i = 1; i <= kManagedServers; ++i) {
    absl::StrAppend(&json, i > 1 ? "," : "", R"({"name":"bulk)", i,
                    R"(","address":"127.0.0.1","port":9,"weight":)", 1 + (round * 7 + i) % 256,
                    "}");
  }
  absl::StrAppend(&json, "]}]}");
  return json;
}

// A master CLI connection held open in prompt mode once the master answered on it: it owns one
// of the master's 10 slots. Invalid when the master did not answer within `deadline`.
UniqueFd HoldSlot(const std::string& master_socket, Clock::time_point deadline,
                  std::string* error) {
  UniqueFd fd = ConnectUnix(master_socket, deadline, error);
  if (!fd.valid() || !WriteAll(fd.get(), "prompt\nshow proc\n", deadline, error)) {
    return UniqueFd();
  }
  std::string received;
  char buffer[4096];
  // The prompt after `prompt`, then `show proc`'s table and its prompt.
  while (received.find("# workers") == std::string::npos ||
         received.rfind("> ") + 2 != received.size()) {
    ssize_t n = ReadSome(fd.get(), buffer, sizeof(buffer), deadline, error);
    if (n <= 0) {
      if (n == 0) *error = "closed by the master";
      return UniqueFd();
    }
    received.append(buffer, static_cast<size_t>(n));
  }
  return fd;
}

// How many of `want` master CLI connections, opened together and all kept open, the master
// serves within 2 s (each answers `show proc`). The first failure's reason in `*error`.
int FreeSlots(const std::string& master_socket, int want, std::string* error) {
  std::vector<UniqueFd> held;
  auto deadline = Clock::now() + seconds(2);
  for (int i = 0; i < want; ++i) {
    std::string why;
    UniqueFd fd = HoldSlot(master_socket, deadline, &why);
    if (!fd.valid()) {
      if (error->empty()) *error = absl::StrCat("connection ", i + 1, ": ", why);
      continue;
    }
    held.push_back(std::move(fd));
  }
  return static_cast<int>(held.size());
}

// Another client of the master (a probe, an operator's script) polling `show proc` on short
// connections for as long as it lives: counts the polls the master did not answer within 2 s
// (or had no room for).
class MasterPoller {
 public:
  explicit MasterPoller(std::string socket)
      : socket_(std::move(socket)), thread_([this] { Run(); }) {}
  ~MasterPoller() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int polls() const { return polls_; }
  int failures() const { return failures_; }
  std::string last_failure() const { return last_failure_; }

 private:
  void Run() {
    while (!stop_) {
      CliReply reply = MasterCli::Run(socket_, "show proc", seconds(2));
      ++polls_;
      // Refused or reset while the master re-executes for a reload is not a failure to answer;
      // no answer within 2 s, or no room left on the master's socket (EAGAIN), is.
      if (!reply.ok && (reply.error == "timeout" || reply.error_number == EAGAIN)) {
        ++failures_;
        last_failure_ = reply.error;
      }
      std::this_thread::sleep_for(milliseconds(50));  // the poller's pace
    }
  }

  std::string socket_;
  std::atomic<bool> stop_{false};
  std::atomic<int> polls_{0};
  std::atomic<int> failures_{0};
  std::string last_failure_;  // read after Stop()
  std::thread thread_;
};

// Reloads through hawk (POST /v1/reload), one after the other, on a configuration with 10,000
// servers and `grace 2s`, while the controller pushes and another client polls the master; the
// leaving workers then exit. At the end the master answers `show proc` within 1 s and at least 8
// of its 10 slots are free. Then hawk is killed (SIGKILL) mid-apply and restarted, round after
// round: it finds the master answering and every worker converges.
TEST(MasterWedgeTest, AReloadStormWithGraceLeavesTheMasterAnsweringAndEightSlotsFree) {
  TempDir dir;
  Backend backend(dir, "A");
  ASSERT_TRUE(backend.ok()) << backend.error();
  std::string config = BasicHaproxyConfig(FreeTcpPort(), backend.port(), "    grace 2s\n") +
                       "backend be_bulk\n    server-template bulk " + std::to_string(kBulkServers) +
                       " 127.0.0.1:9 disabled\n";
  HaproxyProcess haproxy(dir, config);
  Result started = haproxy.Start(seconds(30));
  ASSERT_TRUE(started) << started.error;
  std::vector<std::string> args = {"--haproxy-config", haproxy.config_path(), "--state-dir",
                                   dir.File("state")};
  auto hawk = std::make_unique<HawkProcess>(dir, haproxy.master_socket(), args);
  ASSERT_TRUE(hawk->ok()) << hawk->error();
  ASSERT_TRUE(hawk->WaitServing()) << hawk->LogTail();
  ASSERT_TRUE(WaitUntil([&] { return ReadyWithACurrentWorker(*hawk); }, seconds(20)))
      << hawk->LogTail();

  MasterPoller poller(haproxy.master_socket());
  constexpr int kReloads = 4;
  int round = 0;
  int reloads_ok = 0;
  auto storm_began = std::chrono::steady_clock::now();
  for (int r = 0; r < kReloads; ++r) {
    ++round;
    HttpResult put = hawk->Put("/v1/state?timeoutMs=0",
                               StormState(absl::StrCat("s", round), backend.port(), round));
    ASSERT_EQ(put.status, 200) << put.body;
    HttpResult reload = hawk->Post("/v1/reload", "{}", seconds(60));
    if (reload.status == 200 && reload.body.find("SUCCEEDED") != std::string::npos) {
      ++reloads_ok;
    } else {
      std::cout << "reload " << r + 1 << ": " << reload.status << " " << reload.body << "\n";
    }
  }
  // The last leaving workers exit once their grace (2 s) is over; the master lists them until
  // they do. (2.6 in a storm: a leaving worker signalled again by the next reload while it exits
  // may die of it, or spin and never exit; hawk then reports it notRelayed.)
  bool exited = WaitUntil(
      [&] {
        std::optional<ProcList> list = MasterCli::ShowProc(haproxy.master_socket(), seconds(1));
        return list && list->old_workers.empty();
      },
      seconds(20), milliseconds(100));
  if (!exited) std::cout << "a leaving worker did not exit: " << hawk->Workers().raw << "\n";
  std::this_thread::sleep_for(seconds(1));  // the poller goes on a while after the last exit
  poller.Stop();
  std::cout << kReloads << " reloads (" << reloads_ok << " succeeded) in "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() -
                                                        storm_began)
                   .count()
            << " ms; the poller's show proc: " << poller.failures() << " of " << poller.polls()
            << " unanswered\n";

  std::string error;
  auto asked = std::chrono::steady_clock::now();
  std::optional<ProcList> list = MasterCli::ShowProc(haproxy.master_socket(), seconds(1), &error);
  ASSERT_TRUE(list.has_value()) << "the master does not answer `show proc` within 1 s: " << error
                                << "\n"
                                << hawk->LogTail();
  std::cout
      << "show proc answered in "
      << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - asked).count()
      << " ms\n";
  int free_slots = FreeSlots(haproxy.master_socket(), 8, &error);
  EXPECT_EQ(free_slots, 8) << "of the master's 10 slots, fewer than 8 are free: " << error << "\n"
                           << hawk->LogTail();
  EXPECT_EQ(poller.failures(), 0) << poller.last_failure();
  EXPECT_EQ(reloads_ok, kReloads);
  ASSERT_TRUE(WaitUntil([&] { return EveryRelayedWorkerHolds(*hawk, absl::StrCat("s", round)); },
                        seconds(20)))
      << hawk->Workers().raw << "\n"
      << hawk->LogTail();

  // hawk killed at a random point of an apply and started again, after such reloads: it finds
  // the master answering, and every worker converges to the last acknowledged state.
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> kill_after_ms(0, 150);
  for (int k = 0; k < 3; ++k) {
    ++round;
    std::string version = absl::StrCat("k", round);
    HttpResult put = hawk->Put("/v1/state?timeoutMs=0", StormState(version, backend.port(), round));
    ASSERT_EQ(put.status, 200) << put.body;
    std::this_thread::sleep_for(milliseconds(kill_after_ms(random)));
    ASSERT_TRUE(hawk->process()->Signal(SIGKILL));
    ASSERT_TRUE(hawk->process()->WaitExit(seconds(5)));
    hawk = std::make_unique<HawkProcess>(dir, haproxy.master_socket(), args);
    ASSERT_TRUE(hawk->ok()) << hawk->error();
    ASSERT_TRUE(hawk->WaitServing()) << hawk->LogTail();
    ASSERT_TRUE(WaitUntil([&] { return EveryRelayedWorkerHolds(*hawk, version); }, seconds(20)))
        << "after kill " << k + 1 << ": " << hawk->Workers().raw << "\n"
        << hawk->LogTail();
  }
  error.clear();
  EXPECT_EQ(FreeSlots(haproxy.master_socket(), 8, &error), 8) << error;
}

}  // namespace
}  // namespace hawk::testing

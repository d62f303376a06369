// hawk killed with SIGKILL at random points of a 10,000-server apply, round after round (issue
// 14's fault suite): nothing acknowledged is lost, and every worker converges to it. Real HAProxy
// (3.4, see tests/integration/CMakeLists.txt), the real hawk binary.

#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
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
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::seconds;

constexpr int kBulkServers = 10000;

// The weight round `round` gives bulk server `i`: every server changes from one round to the
// next, so each round's apply is 10,000 commands long.
int BulkWeight(int round, int i) { return 1 + (round * 37 + i) % 256; }

// be_bulk's 10,000 servers with round `round`'s weights, labelled "r<round>".
std::string BulkState(int round) {
  std::string json = absl::StrCat(R"({"version":"r)", round, R"(","backends":[{"name":"be_bulk",)",
                                  R"("servers":[)");
  for (int i = 1; i <= kBulkServers; ++i) {
    absl::StrAppend(&json, i > 1 ? "," : "", R"({"name":"bulk)", i,
                    R"(","address":"127.0.0.1","port":9,"weight":)", BulkWeight(round, i), "}");
  }
  absl::StrAppend(&json, "]}]}");
  return json;
}

// How many of `backend`'s 10,000 bulk servers have, in `@!<pid> show servers state`, a weight
// other than round `round` gives them; -1 if the table could not be read whole.
int ServersWithOtherWeights(const std::string& master_socket, int pid, const std::string& backend,
                            int round) {
  std::vector<ServerRow> rows = ServerRowsFromText(
      MasterCli::Command(master_socket, absl::StrCat("@!", pid, " show servers state ", backend),
                         seconds(10)),
      backend);
  if (rows.size() != static_cast<size_t>(kBulkServers)) return -1;
  int wrong = 0;
  for (const ServerRow& row : rows) {
    int index = 0;
    if (!absl::SimpleAtoi(absl::string_view(row.name).substr(4), &index)) return -1;
    if (row.weight != BulkWeight(round, index)) ++wrong;
  }
  return wrong;
}

// hawk killed with SIGKILL at a random moment of applying 10,000 servers, then started again on
// the same state directory, round after round. Even rounds kill after the PUT was acknowledged
// (hawk is sending the commands); odd rounds kill while the PUT is in flight (hawk may be parsing,
// persisting or answering). The restarted hawk holds the last acknowledged state (or, for an
// unanswered PUT, that one or the one before, never a mix) and every worker converges to it.
TEST(FaultsTest, HawkKilledAtRandomPointsOfATenThousandServerApplyLosesNothing) {
#if defined(__SANITIZE_ADDRESS__)
  constexpr int kRounds = 6;  // ASan makes each round several times slower
#else
  constexpr int kRounds = 20;
#endif
  TempDir dir;
  Backend backend(dir, "A");
  ASSERT_TRUE(backend.ok()) << backend.error();
  HaproxyProcess haproxy(dir, BasicHaproxyConfig(FreeTcpPort(), backend.port()) +
                                  "backend be_bulk\n    server-template bulk " +
                                  std::to_string(kBulkServers) + " 127.0.0.1:9 disabled\n");
  Result started = haproxy.Start();
  ASSERT_TRUE(started) << started.error;
  int worker = haproxy.CurrentWorkerPid();
  ASSERT_GT(worker, 0);
  std::vector<std::string> args = {"--state-dir", dir.File("state")};
  auto hawk = std::make_unique<HawkProcess>(dir, haproxy.master_socket(), args);
  ASSERT_TRUE(hawk->ok()) << hawk->error();
  ASSERT_TRUE(hawk->WaitServing()) << hawk->LogTail();
  ASSERT_TRUE(WaitUntil([&] { return ReadyWithACurrentWorker(*hawk); }, seconds(10)))
      << hawk->LogTail();

  // Round 0, unharmed, measures how long an apply takes: the kills land within that span.
  auto begin = std::chrono::steady_clock::now();
  HttpResult put = hawk->Put("/v1/state?timeoutMs=30000", BulkState(0));
  auto apply_span = std::chrono::steady_clock::now() - begin;
  ASSERT_EQ(put.status, 200) << put.body;
  ASSERT_NE(put.body.find("\"APPLIED\""), std::string::npos) << put.body;
  int acknowledged = 0;
  int span_us =
      static_cast<int>(std::chrono::duration_cast<std::chrono::microseconds>(apply_span).count());

  std::random_device seed_source;
  unsigned seed = seed_source();
  std::mt19937 random(seed);
  std::cout << "seed " << seed << ", one apply of " << kBulkServers << " servers took "
            << span_us / 1000 << " ms\n";
  std::uniform_int_distribution<int> kill_after_us(0, span_us);
  for (int round = 1; round <= kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round, " (seed ", seed, ")"));
    int delay_us = kill_after_us(random);
    bool in_flight = round % 2 == 1;
    int previous = acknowledged;
    if (in_flight) {
      std::atomic<int> status{0};
      std::thread pusher([&] {
        status = Fetch(hawk->api_address(), "PUT", "/v1/state?timeoutMs=0", BulkState(round),
                       seconds(10))
                     .status;
      });
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));  // the random point
      ASSERT_TRUE(hawk->process()->Signal(SIGKILL));
      pusher.join();
      if (status == 200) acknowledged = round;
    } else {
      put = hawk->Put("/v1/state?timeoutMs=0", BulkState(round));  // acknowledged once persisted
      ASSERT_EQ(put.status, 200) << put.body;
      acknowledged = round;
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));  // the random point
      ASSERT_TRUE(hawk->process()->Signal(SIGKILL));
    }
    ASSERT_TRUE(hawk->process()->WaitExit(seconds(5)));
    hawk = std::make_unique<HawkProcess>(dir, haproxy.master_socket(), args);
    ASSERT_TRUE(hawk->ok()) << hawk->error();
    ASSERT_TRUE(hawk->WaitServing()) << hawk->LogTail();

    // What the restarted hawk holds: the acknowledged round, or (the answer lost with the kill)
    // the round it was sent, whole.
    HttpResult held = Fetch(hawk->api_address(), "GET", "/v1/state", "", seconds(30));
    ASSERT_EQ(held.status, 200) << held.body << hawk->LogTail();
    std::string expected = absl::StrCat(R"("version":"r)", acknowledged, R"(")");
    std::string unanswered = absl::StrCat(R"("version":"r)", round, R"(")");
    if (held.body.find(expected) == std::string::npos && in_flight &&
        held.body.find(unanswered) != std::string::npos) {
      acknowledged = round;  // persisted, and the kill took the answer
      expected = unanswered;
    }
    ASSERT_NE(held.body.find(expected), std::string::npos)
        << "after the kill hawk holds something other than r" << acknowledged
        << (in_flight ? " or r" + std::to_string(round) : "") << " (r" << previous
        << " before): " << held.body.substr(0, 200) << "\n"
        << hawk->LogTail();
    size_t servers = 0;
    for (size_t at = 0; (at = held.body.find(R"("name":"bulk)", at)) != std::string::npos; ++at) {
      ++servers;
    }
    EXPECT_EQ(servers, static_cast<size_t>(kBulkServers)) << "r" << acknowledged << " held in part";
    ASSERT_TRUE(WaitUntil([&] { return EveryWorkerHolds(*hawk, absl::StrCat("r", acknowledged)); },
                          seconds(30)))
        << hawk->Workers().raw << "\n"
        << hawk->LogTail();
    // The worker holds, server by server, what hawk says it does.
    ASSERT_EQ(ServersWithOtherWeights(haproxy.master_socket(), worker, "be_bulk", acknowledged), 0);
  }
  EXPECT_EQ(haproxy.CurrentWorkerPid(), worker) << "HAProxy was restarted or reloaded";
}

}  // namespace
}  // namespace hawk::testing

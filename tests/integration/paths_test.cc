// The paths hawk takes to a worker, against a real HAProxy of each version:
// - 3.2+ batches a push's plain commands for one worker into one `@@!<pid> c1; c2; …` line
//   (2.6/3.0: one `@!<pid>` line each), and a command that fails inside such a line is reported
//   as exactly that command, the others applied;
// - `--worker-socket`: the current worker's commands go through its own stats socket, not the
//   master; a socket that reaches another process is detected (pid mismatch) and the master
//   serves; after a reload the socket follows the new worker.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/master_cli.h"
#include "tests/support/unix_relay.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::seconds;

class PathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(dir_, "A");
    ASSERT_TRUE(backend_->ok()) << backend_->error();
  }
  // `extra_global` lines go in HAProxy's global section.
  void StartHaproxy(const std::string& extra_global = "") {
    frontend_port_ = FreeTcpPort();
    haproxy_ = std::make_unique<HaproxyProcess>(
        dir_, StateHaproxyConfig(dir_, frontend_port_, backend_->port(), extra_global));
    Result started = haproxy_->Start();
    ASSERT_TRUE(started) << started.error;
  }
  // hawk behind a counting relay to the master; `extra` appended to its flags.
  void StartHawk(const std::vector<std::string>& extra = {}) {
    master_relay_ =
        std::make_unique<UnixRelay>(dir_.File("master-relay.sock"), haproxy_->master_socket());
    ASSERT_TRUE(master_relay_->Start());
    // --haproxy-config: on 2.6 hawk relays to a leaving worker only within its known grace.
    std::vector<std::string> args = {"--poll-interval",   "60s",
                                     "--resync-interval", "600s",
                                     "--haproxy-config",  haproxy_->config_path()};
    args.insert(args.end(), extra.begin(), extra.end());
    hawk_ = std::make_unique<HawkProcess>(dir_, master_relay_->path(), args);
    ASSERT_TRUE(hawk_->ok()) << hawk_->error();
    ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
    ASSERT_TRUE(WaitUntil([&] { return hawk_->Get("/readyz").status == 200; }, seconds(5)))
        << hawk_->LogTail();
  }
  // Waits until every worker hawk lists is in sync at `version`, `must_list` among them.
  bool AllInSync(const std::string& version, int must_list = 0) {
    return WaitUntil(
        [&] {
          WorkersView view = hawk_->Workers();
          if (!view.ok || view.workers.empty()) return false;
          if (must_list != 0 && view.Find(must_list) == nullptr) return false;
          for (const WorkerView& w : view.workers) {
            if (!w.in_sync || w.applied_version != version) return false;
          }
          return true;
        },
        seconds(10));
  }
  // A state of be_app's two servers with these weights (and SRV_2's address).
  std::string TwoServers(const std::string& version, int generation, int weight,
                         const std::string& extra_server = "") {
    return absl::StrCat(R"({"version":")", version, R"(","generation":)", generation,
                        R"(,"backends":[{"name":"be_app","servers":[)",
                        R"({"name":"SRV_1","address":"127.0.0.1","port":)", backend_->port(),
                        R"(,"weight":)", weight, R"(},)", R"({"name":"SRV_2","address":"192.0.2.)",
                        weight % 200 + 1, R"(","port":80,"weight":)", weight, "}", extra_server,
                        "]}]}");
  }
  ServerRow Row(const std::string& master_socket, int pid, const std::string& server) {
    return ReadServerRow(master_socket, pid, "be_app", server);
  }

  TempDir dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<UnixRelay> master_relay_;
  std::unique_ptr<HawkProcess> hawk_;
  int frontend_port_ = -1;
};

TEST_F(PathsTest, APushsCommandsForOneWorkerShareOneLineOnThreeTwoAndUp) {
  StartHaproxy();
  StartHawk();
  int worker = haproxy_->CurrentWorkerPid();
  ASSERT_EQ(hawk_->Put("/v1/state", TwoServers("v1", 1, 10)).status, 200);
  ASSERT_TRUE(AllInSync("v1")) << hawk_->Workers().raw;

  // Two servers, two fields each (address and weight): four plain commands for one worker.
  uint64_t before = master_relay_->lines_to_target();
  HttpResult put = hawk_->Put("/v1/state", TwoServers("v2", 2, 20));
  uint64_t lines = master_relay_->lines_to_target() - before;
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_TRUE(absl::StrContains(put.body, "\"APPLIED\"")) << put.body;
  EXPECT_EQ(Row(haproxy_->master_socket(), worker, "SRV_1").weight, 20);
  EXPECT_EQ(Row(haproxy_->master_socket(), worker, "SRV_2").address, "192.0.2.21");
  if (haproxy_->version().AtLeast(3, 2)) {
    EXPECT_EQ(lines, 1u) << "3.2+: one @@!<pid> line for the worker";
  } else {
    EXPECT_GE(lines, 3u) << "2.6/3.0: one @!<pid> line per command";
  }
}

TEST_F(PathsTest, ACommandFailingInsideALineIsReportedAloneAndTheOthersApply) {
  StartHaproxy();
  StartHawk();
  int worker = haproxy_->CurrentWorkerPid();
  ASSERT_EQ(hawk_->Put("/v1/state", TwoServers("v1", 1, 10)).status, 200);
  ASSERT_TRUE(AllInSync("v1")) << hawk_->Workers().raw;

  // SRV_9 is not in HAProxy's configuration, and without a port hawk cannot create it: its
  // command fails between the others' (servers go in name order: SRV_1, SRV_2, SRV_9 — and
  // SRV_2's fields after SRV_9 would be wrong if the replies were shifted).
  std::string ghost = R"(,{"name":"SRV_9","address":"192.0.2.99","weight":7})";
  HttpResult put = hawk_->Put("/v1/state?timeoutMs=5000", TwoServers("v2", 2, 30, ghost));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_TRUE(absl::StrContains(put.body, "\"PARTIAL\"")) << put.body;
  EXPECT_TRUE(absl::StrContains(put.body, "SRV_9")) << put.body;
  EXPECT_FALSE(absl::StrContains(put.body, "backend/be_app/server/SRV_1")) << put.body;
  EXPECT_FALSE(absl::StrContains(put.body, "backend/be_app/server/SRV_2")) << put.body;
  EXPECT_EQ(Row(haproxy_->master_socket(), worker, "SRV_1").weight, 30);
  ServerRow srv2 = Row(haproxy_->master_socket(), worker, "SRV_2");
  EXPECT_EQ(srv2.address, "192.0.2.31");
  EXPECT_EQ(srv2.weight, 30);
  // The report names SRV_9 as what stays stale there, and only it.
  WorkersView view = hawk_->Workers();
  const WorkerView* w = view.Find(worker);
  ASSERT_NE(w, nullptr) << view.raw;
  ASSERT_EQ(w->stale_objects.size(), 1u) << view.raw;
  EXPECT_TRUE(absl::StrContains(w->stale_objects[0], "SRV_9")) << view.raw;
}

TEST_F(PathsTest, TheCurrentWorkerIsReachedThroughItsStatsSocketAndFollowedAfterAReload) {
  // grace keeps the leaving worker updatable after the reload.
  StartHaproxy(
      absl::StrCat("    grace 10s\n    stats socket ", dir_.File("worker.sock"), " level admin\n"));
  UnixRelay worker_relay(dir_.File("worker-relay.sock"), dir_.File("worker.sock"));
  ASSERT_TRUE(worker_relay.Start());
  StartHawk({"--worker-socket", "unix:" + worker_relay.path()});
  int old_worker = haproxy_->CurrentWorkerPid();
  ASSERT_EQ(hawk_->Put("/v1/state", TwoServers("v1", 1, 10)).status, 200);
  ASSERT_TRUE(AllInSync("v1")) << hawk_->Workers().raw;

  uint64_t master_before = master_relay_->lines_to_target();
  uint64_t worker_before = worker_relay.lines_to_target();
  HttpResult put = hawk_->Put("/v1/state", TwoServers("v2", 2, 20));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_TRUE(absl::StrContains(put.body, "\"APPLIED\"")) << put.body;
  EXPECT_EQ(Row(haproxy_->master_socket(), old_worker, "SRV_1").weight, 20);
  EXPECT_GE(worker_relay.lines_to_target() - worker_before, 2u)
      << "the push did not go through the worker's stats socket\n"
      << hawk_->LogTail();
  EXPECT_EQ(master_relay_->lines_to_target() - master_before, 0u)
      << "a push for the current worker alone reached the master";

  // After a reload the open connection still reaches the old worker: hawk must notice and
  // connect again (the socket is the new worker's), and the leaving one goes through the master.
  InFlightRequest slow(frontend_port_, "/slow?ms=3000");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));
  ASSERT_TRUE(haproxy_->ReloadViaCli());
  int new_worker = haproxy_->WaitForNewWorker(old_worker, seconds(10));
  ASSERT_GT(new_worker, 0);
  ASSERT_TRUE(AllInSync("v2", new_worker)) << hawk_->Workers().raw;
  HttpResult after = hawk_->Put("/v1/state?timeoutMs=5000", TwoServers("v3", 3, 40));
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(Row(haproxy_->master_socket(), new_worker, "SRV_1").weight, 40);
  EXPECT_EQ(Row(haproxy_->master_socket(), old_worker, "SRV_1").weight, 40);
}

TEST_F(PathsTest, AWorkerSocketOfAnotherHaproxyIsDetectedAndTheMasterServes) {
  StartHaproxy();
  // Another HAProxy, whose worker owns the socket hawk is (wrongly) given.
  TempDir other_dir;
  Backend other_backend(other_dir, "B");
  ASSERT_TRUE(other_backend.ok()) << other_backend.error();
  HaproxyProcess other(
      other_dir, StateHaproxyConfig(other_dir, FreeTcpPort(), other_backend.port(),
                                    absl::StrCat("    stats socket ", other_dir.File("worker.sock"),
                                                 " level admin\n")));
  Result started = other.Start();
  ASSERT_TRUE(started) << started.error;
  int other_worker = other.CurrentWorkerPid();
  int other_weight = Row(other.master_socket(), other_worker, "SRV_1").weight;

  StartHawk({"--worker-socket", "unix:" + other_dir.File("worker.sock")});
  int worker = haproxy_->CurrentWorkerPid();
  HttpResult put = hawk_->Put("/v1/state?timeoutMs=5000", TwoServers("v1", 1, 33));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_TRUE(absl::StrContains(put.body, "\"APPLIED\"")) << put.body;
  EXPECT_EQ(Row(haproxy_->master_socket(), worker, "SRV_1").weight, 33);
  EXPECT_EQ(Row(other.master_socket(), other_worker, "SRV_1").weight, other_weight)
      << "hawk changed a server of another HAProxy through the wrong socket";
  EXPECT_TRUE(WaitUntil([&] { return absl::StrContains(hawk_->LogTail(), "none of the master"); },
                        seconds(5)))
      << hawk_->LogTail();
}

}  // namespace
}  // namespace hawk::testing

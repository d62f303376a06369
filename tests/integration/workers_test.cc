// The worker registry and report against a real HAProxy 2.6 in master-worker mode.

#include <signal.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/master_cli.h"
#include "tests/support/unix_relay.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class WorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(dir_, "app");
    ASSERT_TRUE(backend_->ok()) << backend_->error();
    frontend_port_ = FreeTcpPort();
    haproxy_ = std::make_unique<HaproxyProcess>(
        dir_, BasicHaproxyConfig(frontend_port_, backend_->port()));
  }
  void TearDown() override {
    hawk_.reset();
    haproxy_.reset();
    backend_.reset();
  }

  void StartHaproxy() {
    Result started = haproxy_->Start();
    ASSERT_TRUE(started) << started.error;
  }
  void StartHawk(const std::string& master_socket = "") {
    hawk_ = std::make_unique<HawkProcess>(
        dir_, master_socket.empty() ? haproxy_->master_socket() : master_socket);
    ASSERT_TRUE(hawk_->ok()) << hawk_->error();
    ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
  }
  // Polls the report until `predicate` holds; returns the last view.
  bool WaitForReport(const std::function<bool(const WorkersView&)>& predicate,
                     milliseconds deadline, WorkersView* last) {
    return WaitUntil(
        [&] {
          *last = hawk_->Workers();
          return last->ok && predicate(*last);
        },
        deadline, milliseconds(5));
  }

  TempDir dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<HawkProcess> hawk_;
  int frontend_port_ = -1;
};

// (a)
TEST_F(WorkersTest, ReportsOneCurrentWorkerWithTheRightPid) {
  StartHaproxy();
  StartHawk();
  pid_t worker = haproxy_->CurrentWorkerPid();
  ASSERT_GT(worker, 0);
  WorkersView view;
  ASSERT_TRUE(
      WaitForReport([](const WorkersView& v) { return !v.workers.empty(); }, seconds(3), &view))
      << view.error << view.raw << hawk_->LogTail();
  ASSERT_EQ(view.workers.size(), 1u) << view.raw;
  EXPECT_EQ(view.workers[0].pid, worker);
  EXPECT_EQ(view.workers[0].role, "CURRENT");
  EXPECT_FALSE(view.workers[0].stopping);
  EXPECT_EQ(view.master_pid, haproxy_->master_pid());
  EXPECT_TRUE(view.master_reachable);
  HttpResult ready = hawk_->Get("/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
}

// (b)
TEST_F(WorkersTest, ReloadShowsTheLeavingWorkerWithItsConnectionThenDropsIt) {
  StartHaproxy();
  StartHawk();
  pid_t old_worker = haproxy_->CurrentWorkerPid();
  ASSERT_GT(old_worker, 0);
  WorkersView view;
  ASSERT_TRUE(WaitForReport([&](const WorkersView& v) { return v.Find(old_worker) != nullptr; },
                            seconds(3), &view));

  InFlightRequest slow(frontend_port_, "/slow?ms=2500");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));
  // The request has reached the worker once the worker counts it.
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::string reply = MasterCli::Command(haproxy_->master_socket(),
                                               "@!" + std::to_string(old_worker) + " show info");
        return reply.find("CurrConns: 1") != std::string::npos;
      },
      seconds(2)));

  ASSERT_TRUE(haproxy_->ReloadViaCli());
  pid_t new_worker = haproxy_->WaitForNewWorker(old_worker, seconds(5));
  ASSERT_GT(new_worker, 0) << haproxy_->LogTail();
  Clock::time_point appeared = Clock::now();

  // HAProxy 2.6 keeps a master CLI slot for good when it relays a command to a worker that is
  // exiting, and a leaving worker without grace exits whenever its last connection closes: hawk
  // asks it nothing more (its connection count is as last seen) and says why.
  bool relayed = haproxy_->version().AtLeast(3, 0);
  bool both = WaitForReport(
      [&](const WorkersView& v) {
        const WorkerView* cur = v.Find(new_worker);
        const WorkerView* old = v.Find(old_worker);
        return cur && old && cur->role == "CURRENT" && old->role == "LEAVING" &&
               (relayed ? old->connections >= 1
                        : absl::StrContains(v.raw, "\"notRelayed\":\"leaving"));
      },
      milliseconds(2000), &view);
  long both_ms = MsSince(appeared);
  ASSERT_TRUE(both) << view.raw << "\n--- hawk ---\n"
                    << hawk_->LogTail() << "\n--- haproxy ---\n"
                    << haproxy_->LogTail();
  EXPECT_LE(both_ms, 500) << "both workers took " << both_ms << " ms to show";
  EXPECT_TRUE(view.Find(old_worker)->stopping);

  // The request completes on the old worker; then the old worker exits and leaves the report.
  ASSERT_TRUE(slow.Wait(seconds(10)));
  EXPECT_EQ(slow.result().status, 200) << slow.result().error;
  EXPECT_EQ(slow.result().Header("x-pid"), std::to_string(old_worker));
  ASSERT_TRUE(WaitUntil([&] { return !ProcessAlive(old_worker); }, seconds(5)));
  Clock::time_point exited = Clock::now();
  bool gone = WaitForReport([&](const WorkersView& v) { return v.Find(old_worker) == nullptr; },
                            seconds(3), &view);
  long gone_ms = MsSince(exited);
  ASSERT_TRUE(gone) << view.raw << "\n--- hawk ---\n"
                    << hawk_->LogTail() << "\n--- haproxy ---\n"
                    << haproxy_->LogTail();
  EXPECT_LE(gone_ms, 1000) << "the exited worker stayed " << gone_ms << " ms in the report";
}

// (c)
TEST_F(WorkersTest, BrokenConfigReloadKeepsTheServingWorkerCurrent) {
  StartHaproxy();
  StartHawk();
  pid_t worker = haproxy_->CurrentWorkerPid();
  ASSERT_TRUE(haproxy_->WriteConfig(BasicHaproxyConfig(frontend_port_, backend_->port()) +
                                    "    bogus_keyword here\n"));
  ASSERT_TRUE(haproxy_->ReloadViaCli());
  WorkersView view;
  ASSERT_TRUE(WaitForReport(
      [&](const WorkersView& v) {
        const WorkerView* w = v.Find(worker);
        return v.master_failed >= 1 && w != nullptr && w->role == "CURRENT";
      },
      seconds(5), &view))
      << view.raw << "\n"
      << haproxy_->LogTail();
  EXPECT_EQ(view.PidsWithRole("CURRENT"), std::vector<int>{worker});
  EXPECT_GE(view.master_reloads, 1);
  // And it still serves.
  HttpResult r = Fetch("tcp:127.0.0.1:" + std::to_string(frontend_port_), "GET", "/");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("x-pid"), std::to_string(worker));
  EXPECT_EQ(hawk_->Get("/readyz").status, 200);
}

// (d)
TEST_F(WorkersTest, NotReadyWithoutMasterThenReadySoonAfterHaproxyStarts) {
  StartHawk(dir_.File("master.sock"));
  HttpResult not_ready = hawk_->Get("/readyz");
  EXPECT_EQ(not_ready.status, 503);
  EXPECT_NE(not_ready.body.find("master CLI"), std::string::npos) << not_ready.body;
  EXPECT_NE(not_ready.body.find("\"error\""), std::string::npos) << not_ready.body;
  HttpResult probe = Fetch(hawk_->probe_address(), "GET", "/readyz");
  EXPECT_EQ(probe.status, 503);
  // Let hawk's reconnect delay grow to its maximum before HAProxy appears.
  ASSERT_FALSE(WaitUntil([&] { return hawk_->Get("/readyz").status == 200; }, seconds(2),
                         milliseconds(100)));

  StartHaproxy();  // returns once `show proc` lists a worker
  Clock::time_point started = Clock::now();
  bool ready = WaitUntil([&] { return hawk_->Get("/readyz").status == 200; }, seconds(5));
  long ready_ms = MsSince(started);
  ASSERT_TRUE(ready) << hawk_->LogTail();
  EXPECT_LE(ready_ms, 1000);
}

// (e)
TEST_F(WorkersTest, RecoversWhenHaproxyIsKilledAndStartedAgain) {
  StartHaproxy();
  StartHawk();
  WorkersView view;
  ASSERT_TRUE(
      WaitForReport([](const WorkersView& v) { return v.workers.size() == 1; }, seconds(3), &view));
  int first_master = view.master_pid;
  haproxy_->Kill();
  ASSERT_TRUE(WaitUntil([&] { return hawk_->Get("/readyz").status == 503; }, seconds(3)));

  haproxy_ =
      std::make_unique<HaproxyProcess>(dir_, BasicHaproxyConfig(frontend_port_, backend_->port()));
  StartHaproxy();
  pid_t worker = haproxy_->CurrentWorkerPid();
  ASSERT_TRUE(WaitForReport(
      [&](const WorkersView& v) {
        return v.master_pid == haproxy_->master_pid() && v.workers.size() == 1 &&
               v.workers[0].pid == worker && v.workers[0].role == "CURRENT";
      },
      seconds(5), &view))
      << view.raw << "\n"
      << hawk_->LogTail();
  EXPECT_NE(view.master_pid, first_master);
  EXPECT_TRUE(WaitUntil([&] { return hawk_->Get("/readyz").status == 200; }, seconds(2)));
}

// (f)
TEST_F(WorkersTest, NeverHoldsMoreThanTwoMasterConnections) {
  StartHaproxy();
  UnixRelay relay(dir_.File("relay.sock"), haproxy_->master_socket());
  ASSERT_TRUE(relay.Start());
  StartHawk(relay.path());
  WorkersView view;
  ASSERT_TRUE(
      WaitForReport([](const WorkersView& v) { return v.workers.size() == 1; }, seconds(3), &view));
  // Reloads (each closes every master connection), with API load and a leaving worker.
  InFlightRequest slow(frontend_port_, "/slow?ms=1500");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));
  for (int i = 0; i < 4; ++i) {
    pid_t before = haproxy_->CurrentWorkerPid();
    ASSERT_TRUE(haproxy_->ReloadViaCli());
    ASSERT_GT(haproxy_->WaitForNewWorker(before, seconds(5)), 0);
    for (int j = 0; j < 20; ++j) (void)hawk_->Workers();
  }
  haproxy_->ReloadViaSignal();
  ASSERT_TRUE(WaitUntil([&] { return hawk_->Workers().master_reloads >= 5; }, seconds(5)));
  ASSERT_TRUE(slow.Wait(seconds(5)));
  EXPECT_GT(relay.total_accepted(), 4) << "hawk did not reconnect after the reloads";
  EXPECT_LE(relay.max_concurrent_connections(), 2);
}

// SIGHUP's default action would end hawk; it is logged and hawk keeps serving.
TEST_F(WorkersTest, SighupIsLoggedAndHawkKeepsServing) {
  StartHaproxy();
  StartHawk();
  ASSERT_TRUE(hawk_->process()->Signal(SIGHUP));
  ASSERT_TRUE(WaitUntil(
      [&] { return hawk_->LogTail().find("SIGHUP: ignored") != std::string::npos; }, seconds(5)))
      << hawk_->LogTail();
  EXPECT_TRUE(hawk_->process()->Running());
  EXPECT_EQ(hawk_->Get("/readyz").status, 200) << hawk_->LogTail();
}

TEST_F(WorkersTest, SigtermClosesEverythingAndExitsZero) {
  StartHaproxy();
  StartHawk();
  ASSERT_TRUE(hawk_->process()->Signal(SIGTERM));
  ASSERT_TRUE(hawk_->process()->WaitExit(seconds(5))) << hawk_->LogTail();
  EXPECT_EQ(hawk_->process()->exit_code(), 0) << hawk_->LogTail();
  EXPECT_NE(hawk_->LogTail().find("stopped cleanly"), std::string::npos);
}

}  // namespace
}  // namespace hawk::testing

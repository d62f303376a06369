// WorkerRegistry wired to a real MasterClient, on a real loop, against FakeMaster (a 2.6 master
// CLI answering in the recorded formats): how often it asks the master while a worker starts.

#include "agent/registry/registry.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/types/optional.h"
#include "agent/cli/client.h"
#include "agent/plan/observed.h"
#include "agent/uv/loop.h"
#include "agent/uv/timer.h"
#include "gtest/gtest.h"
#include "tests/support/run_loop_until.h"
#include "tests/unit/fake_master/fake_master.h"

namespace hawk::registry {
namespace {

constexpr int kMasterPid = 100;
constexpr int kServingPid = 200;
constexpr int kStartingPid = 150;
constexpr int kNewPid = 300;
constexpr int kThirdPid = 400;

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // as agent/main.cc: the master closes connections hawk writes to
    char tmpl[] = "/tmp/hawk-registry-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::string path = dir_ + "/master.sock";
    master_ =
        std::make_unique<fake::FakeMaster>(loop_.get(), path, kMasterPid, plan::ObservedWorker{});
    master_->Listen();
    master_->AddWorker(kServingPid);
    cli::MasterClientOptions client_options;
    client_options.address = base::Address{base::Address::Kind::kUnix, path, "", 0};
    client_ = std::make_unique<cli::MasterClient>(loop_.get(), client_options);
    RegistryOptions options;
    options.poll_interval = absl::Hours(1);
    options.transition_poll_interval = absl::Hours(1);
    options.starting_poll_interval = absl::Milliseconds(100);
    registry_ = std::make_unique<WorkerRegistry>(loop_.get(), client_.get(), options,
                                                 [] { return absl::Now(); });
    registry_->SetGraceSource([this] { return grace_; });
    client_->Start();
    registry_->Start();
    RunUntil([&] { return registry_->report().Find(kServingPid) != nullptr; });
  }
  void TearDown() override {
    registry_.reset();
    client_.reset();
    master_.reset();
    EXPECT_TRUE(loop_.RunDryAndClose().ok());
    ::rmdir(dir_.c_str());
  }
  void RunUntil(const std::function<bool()>& done) {
    ASSERT_TRUE(hawk::testing::RunLoopUntil(loop_.get(), done))
        << "condition not reached within 5 s";
  }
  // `show info` commands worker `pid` received.
  size_t ShowInfos(int pid) {
    fake::FakeWorker* worker = master_->worker(pid);
    if (worker == nullptr) return 0;
    return static_cast<size_t>(
        std::count_if(worker->received.begin(), worker->received.end(),
                      [](const fake::ReceivedCommand& c) { return c.line == "show info"; }));
  }
  // Runs `count` more refreshes to their end.
  void Refreshes(int count) {
    for (int i = 0; i < count; ++i) {
      uint64_t done = registry_->refreshes();
      registry_->RefreshNow();
      RunUntil([&] { return registry_->refreshes() > done; });
    }
  }
  size_t ShowProcs() const {
    const auto& lines = master_->master_lines();
    return static_cast<size_t>(std::count(lines.begin(), lines.end(), "show proc"));
  }

  // The `grace` of the configuration (--haproxy-config), read as each worker is first listed.
  absl::optional<absl::Duration> grace_;
  uv::Loop loop_;
  std::string dir_;
  std::unique_ptr<fake::FakeMaster> master_;
  std::unique_ptr<cli::MasterClient> client_;
  std::unique_ptr<WorkerRegistry> registry_;
};

// The configuration HAProxy starts workers from has `grace 1h`.
class RegistryWithGraceTest : public RegistryTest {
 protected:
  RegistryWithGraceTest() { grace_ = absl::Hours(1); }
};

// A 3.1+ worker parsing its configuration is listed but answers `Can't find the target PID`,
// and the master drops the `show info` queued behind it. The registry asks again at the STARTING
// poll interval, not at once in a loop until the worker is ready.
TEST_F(RegistryTest, AStartingWorkerIsPolledAtItsIntervalNotInALoop) {
  master_->AddStartingWorker(kStartingPid);
  size_t before = ShowProcs();
  master_->CloseAllConnections();  // as a reload does: the registry looks again at once
  bool window_over = false;
  uv::Timer window(loop_.get());
  window.Start(absl::Milliseconds(500), [&] { window_over = true; });
  RunUntil([&] { return window_over; });
  size_t polls = ShowProcs() - before;
  // One at once, then one per 100 ms: about 6 in 500 ms.
  EXPECT_GE(polls, 2u);
  EXPECT_LE(polls, 10u) << "the registry polled in a loop while a worker was starting";
  const model::WorkerReport* starting = registry_->report().Find(kStartingPid);
  ASSERT_NE(starting, nullptr);
  EXPECT_EQ(starting->role, model::WorkerRole::kStarting);

  master_->FinishStarting(kStartingPid);
  RunUntil([&] {
    const model::WorkerReport* ready = registry_->report().Find(kStartingPid);
    return ready != nullptr && ready->role != model::WorkerRole::kStarting;
  });
}

TEST_F(RegistryTest, ListenersRunUntilTheirHandleIsDestroyed) {
  int calls = 0;
  base::Subscription subscription =
      registry_->AddListener([&](const model::WorkersReport&, const WorkerChanges&) { ++calls; });
  registry_->RefreshNow();
  RunUntil([&] { return calls == 1; });
  subscription.Reset();
  uint64_t refreshes = registry_->refreshes();
  registry_->RefreshNow();
  RunUntil([&] { return registry_->refreshes() > refreshes; });
  EXPECT_EQ(calls, 1);
}

// The client outlives the registry (as in agent/app): a batch still queued, and the connection
// the master closes afterwards, must not call into the registry that is gone (ASan checks).
TEST_F(RegistryTest, TheRegistryMayGoBeforeTheClient) {
  registry_->RefreshNow();  // a batch queued or in flight (or one more coalesced into it)
  registry_.reset();
  bool window_over = false;
  uv::Timer window(loop_.get());
  window.Start(absl::Milliseconds(200), [&] { window_over = true; });
  RunUntil([&] { return window_over; });  // its answer goes to no one
  uint64_t lost = client_->stats().connections_lost;
  master_->CloseAllConnections();  // a lost connection: no listener left to call
  RunUntil([&] { return client_->stats().connections_lost > lost && client_->reachable(); });
}

// FakeMaster is a 2.6: a command it relays to a worker that is exiting keeps a master slot for
// good. Without --haproxy-config hawk cannot tell when a leaving worker's grace ends, so it asks
// it nothing once a reload told it to stop, and says why.
TEST_F(RegistryTest, OnA26MasterALeavingWorkerWhoseGraceIsUnknownIsAskedNothing) {
  master_->Reload(kNewPid);
  size_t asked = ShowInfos(kServingPid);
  RunUntil([&] {
    const model::WorkerReport* leaving = registry_->report().Find(kServingPid);
    return registry_->report().Find(kNewPid) != nullptr && leaving != nullptr &&
           !leaving->not_relayed.empty();
  });
  Refreshes(3);
  const model::WorkerReport* leaving = registry_->report().Find(kServingPid);
  ASSERT_NE(leaving, nullptr);
  EXPECT_EQ(leaving->role, model::WorkerRole::kLeaving);
  EXPECT_TRUE(absl::StrContains(leaving->not_relayed, "--haproxy-config")) << leaving->not_relayed;
  EXPECT_EQ(ShowInfos(kServingPid), asked) << "the leaving worker was asked `show info`";
  EXPECT_GT(ShowInfos(kNewPid), 0u);
  EXPECT_FALSE(client_->RelayAllowed(kServingPid));
  EXPECT_EQ(registry_->report().Current()->pid, kNewPid);
}

// With the configuration's `grace`, the leaving worker is asked as before.
TEST_F(RegistryWithGraceTest, OnA26MasterALeavingWorkerWithinItsGraceIsAsked) {
  master_->Reload(kNewPid);
  size_t asked = ShowInfos(kServingPid);
  RunUntil([&] {
    const model::WorkerReport* leaving = registry_->report().Find(kServingPid);
    return ShowInfos(kServingPid) > asked && leaving != nullptr && leaving->stopping;
  });
  const model::WorkerReport* leaving = registry_->report().Find(kServingPid);
  ASSERT_NE(leaving, nullptr);
  EXPECT_EQ(leaving->role, model::WorkerRole::kLeaving);
  EXPECT_TRUE(leaving->not_relayed.empty()) << leaving->not_relayed;
  EXPECT_TRUE(client_->RelayAllowed(kServingPid));
}

// When the master closes hawk's connection right after relaying to a leaving worker and, asked
// again, still lists it, that worker is exiting: it gets nothing more, and a 2.6 master has kept
// that session's slot, which counts against hawk's connections until the master re-executes.
TEST_F(RegistryWithGraceTest, ACloseRightAfterARelayToALeavingWorkerCountsALostSlot) {
  master_->Reload(kNewPid);
  size_t asked = ShowInfos(kServingPid);
  RunUntil([&] { return ShowInfos(kServingPid) > asked; });
  master_->set_cut_hook([](int pid, const fake::ReceivedCommand&) { return pid == kServingPid; });
  registry_->RefreshNow();
  RunUntil([&] { return registry_->slots_lost() == 1; });
  Refreshes(3);
  EXPECT_EQ(master_->cuts(), 1) << "the exiting worker was sent commands again";
  EXPECT_EQ(registry_->slots_lost(), 1);
  EXPECT_EQ(client_->ConnectionBudget(), 1);
  const model::WorkerReport* exiting = registry_->report().Find(kServingPid);
  ASSERT_NE(exiting, nullptr);
  EXPECT_TRUE(absl::StrContains(exiting->not_relayed, "exiting")) << exiting->not_relayed;
  EXPECT_EQ(registry_->Snapshot().master_cli.slots_lost, 1);
  std::string code, detail;
  EXPECT_TRUE(registry_->Ready(&code, &detail)) << detail;
  EXPECT_TRUE(absl::StrContains(detail, "the master CLI keeps 1 slot(s)")) << detail;

  master_->set_cut_hook(nullptr);
  master_->Reload(kThirdPid);  // a re-execution frees every session
  RunUntil([&] { return registry_->slots_lost() == 0 && registry_->report().Find(kThirdPid); });
  EXPECT_EQ(client_->ConnectionBudget(), 2);
}

// A reload closes hawk's connections too, with relays in flight: the reload counter moved, so
// nothing is held against the workers and no slot is counted lost.
TEST_F(RegistryWithGraceTest, AReloadThatCutsARelayIsNoLostSlot) {
  bool cut = false;
  master_->set_cut_hook([&](int pid, const fake::ReceivedCommand&) {
    if (cut || pid != kServingPid) return false;
    cut = true;
    master_->Reload(kNewPid);  // the reload happens while the relay is on its way
    return true;
  });
  registry_->RefreshNow();
  RunUntil([&] { return registry_->report().Find(kNewPid) != nullptr; });
  Refreshes(2);
  EXPECT_TRUE(cut);
  EXPECT_EQ(registry_->slots_lost(), 0);
  const model::WorkerReport* leaving = registry_->report().Find(kServingPid);
  ASSERT_NE(leaving, nullptr);
  EXPECT_TRUE(leaving->not_relayed.empty()) << leaving->not_relayed;
}

}  // namespace
}  // namespace hawk::registry

// Reconciler, wired to a real MasterClient and WorkerRegistry as agent/app/app.cc wires them, on a
// real libuv loop against FakeMaster (a small HAProxy 2.6 behind a master CLI socket, replying
// in the recorded formats). Covers what a real HAProxy produces only by timing: a worker that
// appears after hawk started, a frozen leaving worker, a connection cut in the middle of a batch,
// desired states arriving while a worker is busy, and a worker that exits unnoticed.

#include "agent/reconcile/reconciler.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "agent/cli/client.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/observed.h"
#include "agent/plan/plan.h"
#include "agent/registry/registry.h"
#include "agent/uv/loop.h"
#include "agent/uv/timer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/run_loop_until.h"
#include "tests/unit/reconcile/fake_master.h"

namespace hawk::model {
// Readable gtest failures (StaleObject's is sim_worker.h's).
void PrintTo(const Refusal& r, std::ostream* os) {
  *os << "{" << r.object << " `" << r.command << "` → \"" << r.reply << "\"}";
}
}  // namespace hawk::model

namespace hawk::reconcile {
namespace {

using fake::FakeMaster;
using fake::FakeWorker;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Field;

constexpr int kMasterPid = 26372;
constexpr int kFirstPid = 26374;   // present when hawk starts
constexpr int kSecondPid = 26396;  // started by a reload
constexpr char kHostsMap[] = "/etc/haproxy/hosts.map";

// What every worker starts with: the configuration file, older than the desired state.
plan::ObservedWorker ConfigFile() {
  plan::ObservedWorker config;
  plan::ObservedBackend& app = config.backends["be_app"];
  app.servers["web1"] = {"127.0.0.1", 22001, 0, parse::kOpRunning, 1, ""};
  app.servers["web2"] = {"127.0.0.1", 22002, 0, parse::kOpRunning, 1, ""};
  config.maps[kHostsMap].lines = {"a.example.com be_app", "b.example.com be_other"};
  return config;
}

model::DesiredServer Server(std::string name, std::string address, int port, int weight,
                            model::ServerState state) {
  return model::DesiredServer{std::move(name), std::move(address), port, weight, state};
}

// web1 moves and gets weight `web1_weight`; web2 keeps its address and weight (what the
// configuration already says) and drains; the map gets `extra_host`.
model::DesiredState Desired(std::string version, int web1_weight, std::string extra_host) {
  model::DesiredState desired;
  desired.version = std::move(version);
  desired.backends = {model::DesiredBackend{
      "be_app",
      {Server("web1", "10.0.0.1", 8080, web1_weight, model::ServerState::kReady),
       Server("web2", "127.0.0.1", 22002, 1, model::ServerState::kDrain)}}};
  desired.maps = {model::DesiredMap{
      kHostsMap, {{"a.example.com", "be_app"}, {std::move(extra_host), "be_new"}}}};
  std::sort(desired.maps[0].entries.begin(), desired.maps[0].entries.end());
  return desired;
}

// The state `show servers state` reports for a server's admin bits.
model::ServerState StateOf(const plan::ObservedServer& server) {
  if ((server.admin_state & parse::kAdminMaintMask) != 0) return model::ServerState::kMaint;
  if ((server.admin_state & parse::kAdminDrainMask) != 0) return model::ServerState::kDrain;
  return model::ServerState::kReady;
}

// What the fake worker's servers hold that differs from `desired` ("" when they all match).
std::string ServersMismatch(const FakeWorker& worker, const model::DesiredState& desired) {
  std::string out;
  for (const model::DesiredBackend& backend : desired.backends) {
    for (const model::DesiredServer& want : backend.servers) {
      const plan::ObservedServer* server = worker.runtime.Server(backend.name, want.name);
      if (server == nullptr) {
        absl::StrAppend(&out, "no server ", backend.name, "/", want.name, "; ");
        continue;
      }
      const plan::ObservedServer& have = *server;
      std::string where = absl::StrCat(backend.name, "/", want.name, " ");
      if (have.address != want.address) {
        absl::StrAppend(&out, where, "address ", have.address, "; ");
      }
      if (want.port && have.port != *want.port) {
        absl::StrAppend(&out, where, "port ", have.port, "; ");
      }
      if (want.weight && have.user_weight != *want.weight) {
        absl::StrAppend(&out, where, "weight ", have.user_weight, "; ");
      }
      if (want.state && StateOf(have) != *want.state) {
        absl::StrAppend(&out, where, "state ", model::ServerStateName(StateOf(have)), "; ");
      }
    }
  }
  return out;
}

// The fake worker's map content as sorted "key value" lines.
std::vector<std::string> MapLines(const FakeWorker& worker, const std::string& name) {
  std::vector<std::string> lines;
  const std::vector<plan::testing::SimEntry>* entries = worker.runtime.MapEntries(name);
  if (entries == nullptr) return {"<no such map>"};
  for (const plan::testing::SimEntry& e : *entries) lines.push_back(e.key + " " + e.value);
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::vector<std::string> DesiredMapLines(const model::DesiredState& desired) {
  std::vector<std::string> lines;
  for (const model::MapEntry& e : desired.maps.at(0).entries) {
    lines.push_back(e.key + " " + e.value);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The commands the reconciler sent to a worker, in order: everything but the registry's
// `show info` polls.
std::vector<std::string> ReconcilerLines(const FakeWorker& worker, size_t from = 0) {
  std::vector<std::string> lines;
  for (size_t i = from; i < worker.received.size(); ++i) {
    if (worker.received[i].line != "show info") lines.push_back(worker.received[i].line);
  }
  return lines;
}

bool IsServerCommand(const std::string& line) {
  return absl::StartsWith(line, "set server ") || absl::StartsWith(line, "set weight ");
}

class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As agent/main.cc: a connection the master closed is a write error, not a signal (a reload
    // closes connections hawk may be writing to).
    std::signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/hawk-reconcile-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/master.sock";
    master_ = std::make_unique<FakeMaster>(loop_.get(), path_, kMasterPid, ConfigFile());
    master_->Listen();
  }
  void TearDown() override {
    // Users before what they use, as App::Stop does.
    reconciler_.reset();
    registry_.reset();
    client_.reset();
    master_.reset();
    EXPECT_TRUE(loop_.RunDryAndClose().ok());
    rmdir(dir_.c_str());
  }

  static ReconcilerOptions Options() {
    ReconcilerOptions options;
    // Far beyond the test's 5 s: no test may rely on the periodic resync.
    options.resync_interval = absl::Hours(1);
    return options;
  }

  // Wires and starts the client, the registry and the reconciler as App::Init does, then runs
  // the loop until the registry has reported the workers and is idle.
  void StartHawk(ReconcilerOptions options = Options()) {
    cli::MasterClientOptions client_options;
    client_options.address = base::Address{base::Address::Kind::kUnix, path_, "", 0};
    client_ = std::make_unique<cli::MasterClient>(loop_.get(), client_options);
    // No periodic polls: the registry looks again only when hawk starts, when the master
    // becomes reachable and when it closes a connection (a reload), so that whatever else makes
    // a worker reconcile in these tests comes from the reconciler itself.
    registry::RegistryOptions registry_options;
    registry_options.poll_interval = absl::Hours(1);
    registry_options.transition_poll_interval = absl::Hours(1);
    registry_options.starting_poll_interval = absl::Hours(1);
    registry_ = std::make_unique<registry::WorkerRegistry>(
        loop_.get(), client_.get(), registry_options, [] { return absl::Now(); });
    reconciler_ = std::make_unique<Reconciler>(loop_.get(), client_.get(), registry_.get(), options,
                                               [] { return absl::Now(); });
    client_->Start();
    registry_->Start();
    reconciler_->Start();
    // Until the start-up refreshes are over (the first one, and the one asked for when the
    // master became reachable during it): each refresh is two batches, `show proc` then the
    // workers' `show info`, and only the registry submits batches before a desired state.
    RunUntil([&] {
      return registry_->refreshes() >= 1 && client_->stats().batches == 2 * registry_->refreshes();
    });
  }

  // Runs the loop until `done` or a 5 s safety deadline.
  void RunUntil(const std::function<bool()>& done) {
    ASSERT_TRUE(hawk::testing::RunLoopUntil(loop_.get(), done))
        << "condition not reached within 5 s";
  }

  // WaitForPush with a deadline (1 h) that never passes here: the outcome must come from every
  // target worker finishing its reconcile, within RunUntil's 5 s.
  PushOutcome WaitForPush(uint64_t seq) {
    auto outcome = std::make_shared<absl::optional<PushOutcome>>();
    reconciler_->WaitForPush(seq, absl::Hours(1),
                             [outcome](PushOutcome o) { *outcome = std::move(o); });
    RunUntil([&] { return outcome->has_value(); });
    return outcome->value_or(PushOutcome{});
  }

  static const WorkerOutcome* Of(const PushOutcome& outcome, int pid) {
    for (const WorkerOutcome& w : outcome.workers) {
      if (w.pid == pid) return &w;
    }
    return nullptr;
  }

  model::WorkersReport Annotated() const {
    model::WorkersReport report = registry_->Snapshot();
    reconciler_->Annotate(&report);
    return report;
  }

  uv::Loop loop_;
  std::string dir_;
  std::string path_;
  std::unique_ptr<FakeMaster> master_;
  std::unique_ptr<cli::MasterClient> client_;
  std::unique_ptr<registry::WorkerRegistry> registry_;
  std::unique_ptr<Reconciler> reconciler_;
};

// A worker that a reload starts after hawk is running comes from the (stale) configuration file:
// it gets the whole desired state at once, before anything is observed on it.
TEST_F(ReconcilerTest, WorkerStartedByAReloadIsSeededWithoutObservingFirst) {
  master_->AddWorker(kFirstPid);
  StartHawk();
  model::DesiredState desired = Desired("v1", 10, "c.example.com");
  uint64_t seq = reconciler_->SetDesired(desired);
  PushOutcome before = WaitForPush(seq);
  ASSERT_NE(Of(before, kFirstPid), nullptr);
  ASSERT_EQ(Of(before, kFirstPid)->result, PushResult::kApplied);

  master_->Reload(kSecondPid);  // closes hawk's connections, as the real master does
  RunUntil([&] { return registry_->report().Find(kSecondPid) != nullptr; });
  PushOutcome outcome = WaitForPush(seq);

  const WorkerOutcome* fresh = Of(outcome, kSecondPid);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(fresh->role, model::WorkerRole::kCurrent);
  EXPECT_EQ(fresh->result, PushResult::kApplied) << PushResultName(fresh->result);
  EXPECT_TRUE(fresh->refused.empty());
  const WorkerOutcome* old = Of(outcome, kFirstPid);
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->role, model::WorkerRole::kLeaving);
  EXPECT_EQ(old->result, PushResult::kApplied);

  const FakeWorker& worker = *master_->worker(kSecondPid);
  std::vector<std::string> sent = ReconcilerLines(worker);
  ASSERT_FALSE(sent.empty());
  EXPECT_TRUE(absl::StartsWith(sent[0], "set server be_app/")) << sent[0];
  // Only mutations until the verifying observation.
  auto first_show = std::find_if(sent.begin(), sent.end(), [](const std::string& line) {
    return absl::StartsWith(line, "show ");
  });
  ASSERT_NE(first_show, sent.end()) << "the seed was never verified";
  for (auto it = sent.begin(); it != first_show; ++it) {
    EXPECT_TRUE(IsServerCommand(*it) || absl::StrContains(*it, " map ")) << *it;
  }
  // A seed, not a diff: the fields the configuration already had right are sent too.
  std::vector<std::string> mutations(sent.begin(), first_show);
  EXPECT_THAT(mutations, Contains("set server be_app/web2 addr 127.0.0.1 port 22002"));
  EXPECT_THAT(mutations, Contains("set server be_app/web2 weight 1"));
  EXPECT_THAT(mutations, Contains(absl::StrCat("prepare map ", kHostsMap)));

  EXPECT_EQ(ServersMismatch(worker, desired), "");
  EXPECT_EQ(MapLines(worker, kHostsMap), DesiredMapLines(desired));
}

// A leaving worker past its soft-stop refuses server changes with `Proxy is disabled.`: it is
// reported PARTIAL and frozen, keeps getting map updates, and is sent no more server commands.
TEST_F(ReconcilerTest, FrozenLeavingWorkerKeepsGettingMapsButNoMoreServerCommands) {
  FakeWorker& leaving = master_->AddWorker(kFirstPid);
  leaving.stopping = true;
  leaving.reloads = 1;
  leaving.runtime.set_frozen(true);
  leaving.sessions = fake::Fixture("old_worker_show_sess.txt");  // one stream on be_app/web1
  master_->AddWorker(kSecondPid);
  StartHawk();
  ASSERT_EQ(registry_->report().workers.size(), 2u);

  model::DesiredState first = Desired("v1", 10, "c.example.com");
  PushOutcome outcome = WaitForPush(reconciler_->SetDesired(first));
  const WorkerOutcome* current = Of(outcome, kSecondPid);
  ASSERT_NE(current, nullptr);
  EXPECT_EQ(current->result, PushResult::kApplied);
  const WorkerOutcome* old = Of(outcome, kFirstPid);
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->role, model::WorkerRole::kLeaving);
  EXPECT_EQ(old->result, PushResult::kPartial) << PushResultName(old->result);
  EXPECT_THAT(old->refused,
              Contains(model::Refusal{"backend/be_app/server/web1",
                                      "set server be_app/web1 addr 10.0.0.1 port 8080",
                                      "Proxy is disabled."}));
  EXPECT_THAT(old->stale,
              Contains(AllOf(Field(&model::StaleObject::object, "backend/be_app/server/web1"),
                             Field(&model::StaleObject::field, "address"),
                             Field(&model::StaleObject::reason, plan::kFrozenReason))));
  EXPECT_EQ(MapLines(leaving, kHostsMap), DesiredMapLines(first));
  ASSERT_NE(leaving.runtime.Server("be_app", "web1"), nullptr);
  EXPECT_EQ(leaving.runtime.Server("be_app", "web1")->address, "127.0.0.1");

  // The report marks it frozen, lists the stale server and counts the stream still using it.
  RunUntil([&] {
    model::WorkersReport now = Annotated();
    const model::WorkerReport* w = now.Find(kFirstPid);
    return w != nullptr && w->sync.sessions_on_stale_servers == 1;
  });
  model::WorkersReport report = Annotated();
  const model::WorkerReport* annotated = report.Find(kFirstPid);
  ASSERT_NE(annotated, nullptr);
  EXPECT_TRUE(annotated->sync.managed);
  EXPECT_TRUE(annotated->sync.frozen);
  EXPECT_FALSE(annotated->sync.in_sync);
  EXPECT_THAT(annotated->sync.stale,
              Contains(Field(&model::StaleObject::object, "backend/be_app/server/web1")));
  EXPECT_TRUE(report.Find(kSecondPid)->sync.in_sync);

  size_t seen = leaving.received.size();
  model::DesiredState second = Desired("v2", 20, "d.example.com");
  outcome = WaitForPush(reconciler_->SetDesired(second));
  ASSERT_NE(Of(outcome, kSecondPid), nullptr);
  EXPECT_EQ(Of(outcome, kSecondPid)->result, PushResult::kApplied);
  old = Of(outcome, kFirstPid);
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->result, PushResult::kPartial);
  // Not sent, but reported with the reply that froze the worker.
  EXPECT_THAT(old->refused,
              Contains(model::Refusal{"backend/be_app/server/web1",
                                      "set server be_app/web1 weight 20", "Proxy is disabled."}));
  std::vector<std::string> sent = ReconcilerLines(leaving, seen);
  for (const std::string& line : sent) EXPECT_FALSE(IsServerCommand(line)) << line;
  EXPECT_THAT(sent, Contains(absl::StrCat("prepare map ", kHostsMap)));
  EXPECT_EQ(MapLines(leaving, kHostsMap), DesiredMapLines(second));
  EXPECT_EQ(ServersMismatch(*master_->worker(kSecondPid), second), "");
}

// The master closes the connection in the middle of an apply batch (a reload would): the
// reconcile is retried at once, from a fresh observation, not at the next resync.
TEST_F(ReconcilerTest, ConnectionCutMidBatchIsRetriedBeforeTheResync) {
  master_->AddWorker(kFirstPid);
  const std::string cut_line = "set server be_app/web1 weight 10";
  master_->set_cut_hook([&](int pid, const fake::ReceivedCommand& command) {
    return pid == kFirstPid && command.line == cut_line && master_->cuts() == 0;
  });
  StartHawk();  // resync_interval: 1 h
  model::DesiredState desired = Desired("v1", 10, "c.example.com");
  PushOutcome outcome = WaitForPush(reconciler_->SetDesired(desired));

  EXPECT_EQ(master_->cuts(), 1);
  const WorkerOutcome* worker = Of(outcome, kFirstPid);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->result, PushResult::kApplied) << PushResultName(worker->result);
  EXPECT_TRUE(worker->refused.empty());
  const FakeWorker& fake_worker = *master_->worker(kFirstPid);
  EXPECT_EQ(ServersMismatch(fake_worker, desired), "");
  EXPECT_EQ(MapLines(fake_worker, kHostsMap), DesiredMapLines(desired));
  std::vector<std::string> sent = ReconcilerLines(fake_worker);
  // The cut command went again; the one before it had run, so the new observation dropped it.
  EXPECT_EQ(std::count(sent.begin(), sent.end(), cut_line), 2);
  EXPECT_EQ(std::count(sent.begin(), sent.end(), "set server be_app/web1 addr 10.0.0.1 port 8080"),
            1);
  model::WorkersReport report = Annotated();
  ASSERT_NE(report.Find(kFirstPid), nullptr);
  EXPECT_EQ(report.Find(kFirstPid)->sync.error, "");
}

// Desired states that arrive while a worker is busy coalesce: when it finishes, it runs once
// more with the latest; the ones in between are never sent.
TEST_F(ReconcilerTest, DesiredStatesCoalesceWhileTheWorkerIsBusy) {
  master_->AddWorker(kFirstPid);
  StartHawk();
  uint64_t refreshes = registry_->refreshes();
  reconciler_->SetDesired(Desired("a", 11, "a-only.example.com"));  // the worker is now busy
  ASSERT_FALSE(reconciler_->HoldsLatest(kFirstPid));
  reconciler_->SetDesired(Desired("b", 22, "b-only.example.com"));
  model::DesiredState latest = Desired("c", 33, "c-only.example.com");
  uint64_t seq = reconciler_->SetDesired(latest);
  PushOutcome outcome = WaitForPush(seq);

  // No registry refresh kicked the worker again: the reconciler ran the latest by itself.
  EXPECT_EQ(registry_->refreshes(), refreshes);
  EXPECT_EQ(outcome.version, "c");
  const WorkerOutcome* worker = Of(outcome, kFirstPid);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->result, PushResult::kApplied) << PushResultName(worker->result);
  EXPECT_TRUE(reconciler_->HoldsLatest(kFirstPid));
  const FakeWorker& fake_worker = *master_->worker(kFirstPid);
  EXPECT_EQ(ServersMismatch(fake_worker, latest), "");
  EXPECT_EQ(MapLines(fake_worker, kHostsMap), DesiredMapLines(latest));
  std::vector<std::string> sent = ReconcilerLines(fake_worker);
  EXPECT_THAT(sent, Contains("set server be_app/web1 weight 11"));  // the run in progress
  EXPECT_THAT(sent, Contains("set server be_app/web1 weight 33"));
  EXPECT_THAT(sent, ::testing::Not(Contains("set server be_app/web1 weight 22")));
  for (const fake::ReceivedCommand& command : fake_worker.received) {
    for (const std::string& line : command.payload) {
      EXPECT_FALSE(absl::StartsWith(line, "b-only.example.com")) << command.line;
    }
  }
}

// A leaving worker exits between two registry polls: the master answers `Can't find the target
// PID…` (and, as 2.6 does, closes the connection). The push does not wait for that worker: it is
// dropped once the registry no longer lists it, and the current worker is APPLIED.
TEST_F(ReconcilerTest, WorkerThatExitedIsDroppedFromThePush) {
  FakeWorker& leaving = master_->AddWorker(kFirstPid);
  leaving.stopping = true;
  leaving.reloads = 1;
  master_->AddWorker(kSecondPid);
  StartHawk();
  ASSERT_EQ(registry_->report().workers.size(), 2u);
  master_->RemoveWorker(kFirstPid);  // hawk still lists it

  model::DesiredState desired = Desired("v1", 10, "c.example.com");
  PushOutcome outcome = WaitForPush(reconciler_->SetDesired(desired));

  ASSERT_EQ(outcome.workers.size(), 1u);
  EXPECT_EQ(outcome.workers[0].pid, kSecondPid);
  EXPECT_EQ(outcome.workers[0].result, PushResult::kApplied);
  EXPECT_EQ(registry_->report().Find(kFirstPid), nullptr);
  EXPECT_THAT(master_->unrouted_lines(),
              Contains(absl::StrCat("@!", kFirstPid, " show servers state be_app")));
  EXPECT_EQ(ServersMismatch(*master_->worker(kSecondPid), desired), "");
}

}  // namespace
}  // namespace hawk::reconcile

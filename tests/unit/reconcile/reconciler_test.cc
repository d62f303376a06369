// Reconciler, wired to a real MasterClient and WorkerRegistry as agent/app/app.cc wires them, on a
// real libuv loop against FakeMaster (a small HAProxy 2.6 behind a master CLI socket, replying
// in the recorded formats). Covers what a real HAProxy produces only by timing: a worker that
// appears after hawk started, a frozen leaving worker, a connection cut in the middle of a batch,
// desired states arriving while a worker is busy, and a worker that exits unnoticed; and that a
// change costs commands in proportion to the change, not to the state.
//
// The desired state is held here and changed as agent/api/state_service.cc changes it: the
// delta from the state held to the new one (model::DiffStates) is applied, and its summary
// published (Reconciler::Publish).

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
#include "agent/model/delta.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/observed.h"
#include "agent/plan/plan.h"
#include "agent/reconcile/stale_sessions.h"
#include "agent/registry/registry.h"
#include "agent/uv/loop.h"
#include "agent/uv/timer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"
#include "tests/support/run_loop_until.h"
#include "tests/unit/fake_master/fake_master.h"
#include "tests/unit/plan/desired_builder.h"

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
using plan::testing::Spec;
using plan::testing::Table;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Field;
using ::testing::Not;

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
  config.maps[kHostsMap].entries =
      Table({{"a.example.com", "be_app"}, {"b.example.com", "be_other"}});
  return config;
}

// web1 moves and gets weight `web1_weight`; web2 keeps its address and weight (what the
// configuration already says) and drains; the map gets `extra_host`.
model::DesiredState Desired(std::string version, int web1_weight, const std::string& extra_host) {
  return plan::testing::Desired()
      .Version(std::move(version))
      .Server("be_app", "web1", Spec("10.0.0.1", 8080, web1_weight, model::ServerState::kReady))
      .Server("be_app", "web2", Spec("127.0.0.1", 22002, 1, model::ServerState::kDrain))
      .Map(kHostsMap, Table({{"a.example.com", "be_app"}, {extra_host, "be_new"}}));
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
  for (const auto& [backend, servers] : model::SortedByName(desired.backends)) {
    for (const auto& [name, spec] : model::SortedByName(servers->servers)) {
      const model::ServerSpec& want = *spec;
      const plan::ObservedServer* server = worker.runtime.Server(*backend, *name);
      if (server == nullptr) {
        absl::StrAppend(&out, "no server ", *backend, "/", *name, "; ");
        continue;
      }
      const plan::ObservedServer& have = *server;
      std::string where = absl::StrCat(*backend, "/", *name, " ");
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

// The fake worker's map content as sorted "key value" lines (duplicates kept).
std::vector<std::string> MapLines(const FakeWorker& worker, const std::string& name) {
  std::vector<std::string> lines;
  if (worker.runtime.MapEntries(name) == nullptr) return {"<no such map>"};
  for (const plan::testing::SimEntry& e : worker.runtime.SortedMapEntries(name)) {
    lines.push_back(e.key + " " + e.value);
  }
  return lines;
}

std::vector<std::string> DesiredMapLines(const model::DesiredState& desired) {
  std::vector<std::string> lines;
  for (const auto& [key, value] : desired.maps.at(kHostsMap).Sorted()) {
    lines.push_back(absl::StrCat(key, " ", value));
  }
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

size_t CountStartingWith(const std::vector<std::string>& lines, absl::string_view prefix) {
  return static_cast<size_t>(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) {
    return absl::StartsWith(l, prefix);
  }));
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
    stale_sessions_.reset();
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
    // FakeMaster is a 2.6, on which hawk relays to a leaving worker only within its grace
    // period (registry/relay_policy.h): the leaving workers here are well within a long one.
    registry_->SetGraceSource([] { return absl::Hours(1); });
    reconciler_ = std::make_unique<Reconciler>(loop_.get(), client_.get(), registry_.get(), &state_,
                                               options, [] { return absl::Now(); });
    stale_sessions_ = std::make_unique<StaleSessions>(
        reconciler_.get(), registry_.get(), StaleSessionsOptions{}, [] { return absl::Now(); });
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

  // A worker that lived through a reload and is leaving (kFirstPid), beside the one that reload
  // started (kSecondPid). Returns the leaving one, to be set up further before StartHawk.
  FakeWorker& AddLeavingAndCurrentWorkers() {
    FakeWorker& leaving = master_->AddWorker(kFirstPid);
    leaving.stopping = true;
    leaving.reloads = 1;
    master_->AddWorker(kSecondPid);
    return leaving;
  }

  // A new desired state, as StateService applies a PUT: the delta from the state held, applied to
  // it, its summary published. Returns the push's sequence number.
  uint64_t Push(model::DesiredState next) {
    model::AppliedDelta applied =
        model::ApplyDelta(model::DiffStates(state_, std::move(next)), &state_);
    return reconciler_->Publish(applied.summary);
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
    stale_sessions_->Annotate(&report);
    return report;
  }

  uv::Loop loop_;
  model::DesiredState state_;  // the desired state hawk holds (StateService's)
  std::string dir_;
  std::string path_;
  std::unique_ptr<FakeMaster> master_;
  std::unique_ptr<cli::MasterClient> client_;
  std::unique_ptr<registry::WorkerRegistry> registry_;
  std::unique_ptr<Reconciler> reconciler_;
  std::unique_ptr<StaleSessions> stale_sessions_;  // as App wires it
};

// A worker that a reload starts after hawk is running comes from the (stale) configuration file:
// it gets the whole desired state at once, without anything being observed on it.
TEST_F(ReconcilerTest, WorkerStartedByAReloadIsSeededWithoutObservingFirst) {
  master_->AddWorker(kFirstPid);
  StartHawk();
  model::DesiredState desired = Desired("v1", 10, "c.example.com");
  uint64_t seq = Push(desired);
  PushOutcome before = WaitForPush(seq);
  ASSERT_NE(Of(before, kFirstPid), nullptr);
  ASSERT_EQ(Of(before, kFirstPid)->result, PushResult::kApplied);
  uint64_t seeds = reconciler_->stats().seeds;

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
  EXPECT_EQ(reconciler_->stats().seeds, seeds + 1);

  const FakeWorker& worker = *master_->worker(kSecondPid);
  std::vector<std::string> sent = ReconcilerLines(worker);
  ASSERT_FALSE(sent.empty());
  EXPECT_TRUE(absl::StartsWith(sent[0], "set server be_app/")) << sent[0];
  // Changed: only mutations. The seed is no longer verified by a `show …` observation: the
  // reconciler trusts the replies (the resync timer observes every worker later).
  for (const std::string& line : sent) {
    EXPECT_TRUE(IsServerCommand(line) || absl::StrContains(line, " map ")) << line;
  }
  // A seed, not a diff: the fields the configuration already had right are sent too, and the map
  // is replaced whole.
  EXPECT_THAT(sent, Contains("set server be_app/web2 addr 127.0.0.1 port 22002"));
  EXPECT_THAT(sent, Contains("set server be_app/web2 weight 1"));
  EXPECT_THAT(sent, Contains(absl::StrCat("prepare map ", kHostsMap)));

  EXPECT_EQ(ServersMismatch(worker, desired), "");
  EXPECT_EQ(MapLines(worker, kHostsMap), DesiredMapLines(desired));
}

// A leaving worker past its soft-stop refuses server changes with `Proxy is disabled.`: it is
// reported PARTIAL and frozen, keeps getting map updates, and is sent no more server commands.
TEST_F(ReconcilerTest, FrozenLeavingWorkerKeepsGettingMapsButNoMoreServerCommands) {
  FakeWorker& leaving = AddLeavingAndCurrentWorkers();
  leaving.runtime.set_frozen(true);
  leaving.sessions = fake::Fixture("old_worker_show_sess.txt");  // one stream on be_app/web1
  StartHawk();
  ASSERT_EQ(registry_->report().workers.size(), 2u);

  model::DesiredState first = Desired("v1", 10, "c.example.com");
  PushOutcome outcome = WaitForPush(Push(first));
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
  outcome = WaitForPush(Push(second));
  ASSERT_NE(Of(outcome, kSecondPid), nullptr);
  EXPECT_EQ(Of(outcome, kSecondPid)->result, PushResult::kApplied);
  old = Of(outcome, kFirstPid);
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->result, PushResult::kPartial);
  EXPECT_THAT(old->stale,
              Contains(AllOf(Field(&model::StaleObject::object, "backend/be_app/server/web1"),
                             Field(&model::StaleObject::reason, plan::kFrozenReason))));
  // Not sent, but reported with the reply that froze the worker. Expected to fail with
  // agent/reconcile at cb512e6: Kick plans with PlanOptions::servers_frozen, so PlanChanges
  // turns the change into a StaleItem and Apply's frozen branch (which records this Refusal)
  // is never reached; the second push's outcome has no refusal at all. Kick now passes
  // servers_frozen, and the planner lists the change in Plan::withheld, which Apply reports.
  EXPECT_THAT(old->refused,
              Contains(model::Refusal{"backend/be_app/server/web1",
                                      "set server be_app/web1 weight 20", "Proxy is disabled."}));
  std::vector<std::string> sent = ReconcilerLines(leaving, seen);
  for (const std::string& line : sent) EXPECT_FALSE(IsServerCommand(line)) << line;
  // Changed: one entry out, one in, so per-entry commands instead of a replace transaction.
  EXPECT_THAT(sent, Contains(absl::StrCat("del map ", kHostsMap, " c.example.com")));
  EXPECT_THAT(sent, Contains(absl::StrCat("add map ", kHostsMap, " d.example.com be_new")));
  EXPECT_THAT(sent, Not(Contains(absl::StrCat("prepare map ", kHostsMap))));
  EXPECT_EQ(MapLines(leaving, kHostsMap), DesiredMapLines(second));
  EXPECT_EQ(ServersMismatch(*master_->worker(kSecondPid), second), "");
}

// A dry run's preview lists, per worker, what the push then sends, and what a frozen leaving
// worker would refuse; previewing sends nothing.
TEST_F(ReconcilerTest, APreviewListsWhatThePushThenSendsOnEachWorker) {
  FakeWorker& leaving = AddLeavingAndCurrentWorkers();
  leaving.runtime.set_frozen(true);
  StartHawk();
  WaitForPush(Push(Desired("v1", 10, "c.example.com")));
  FakeWorker& current = *master_->worker(kSecondPid);
  size_t seen_current = current.received.size();
  size_t seen_leaving = leaving.received.size();
  uint64_t batches = client_->stats().batches;

  model::AppliedDelta applied =
      model::ApplyDelta(model::DiffStates(state_, Desired("v2", 20, "d.example.com")), &state_);
  std::vector<WorkerPreview> preview = reconciler_->Preview(applied.summary);
  EXPECT_EQ(client_->stats().batches, batches);
  ASSERT_EQ(preview.size(), 2u);
  const WorkerPreview& old = preview[0];
  const WorkerPreview& now = preview[1];
  ASSERT_EQ(old.pid, kFirstPid);
  ASSERT_EQ(now.pid, kSecondPid);
  EXPECT_EQ(old.basis, PreviewBasis::kIncremental);
  EXPECT_EQ(now.basis, PreviewBasis::kIncremental);
  EXPECT_THAT(now.commands, Contains("set server be_app/web1 weight 20"));
  for (const std::string& line : old.commands) EXPECT_FALSE(IsServerCommand(line)) << line;
  EXPECT_THAT(old.refused,
              Contains(model::Refusal{"backend/be_app/server/web1",
                                      "set server be_app/web1 weight 20", "Proxy is disabled."}));
  EXPECT_THAT(old.stale, Contains(Field(&model::StaleObject::reason, plan::kFrozenReason)));

  PushOutcome outcome = WaitForPush(reconciler_->Publish(applied.summary));
  // The changes, without the session polls (`show sess`) on the frozen worker's stale servers.
  auto changes = [](std::vector<std::string> lines) {
    lines.erase(std::remove_if(lines.begin(), lines.end(),
                               [](const std::string& l) { return absl::StartsWith(l, "show "); }),
                lines.end());
    return lines;
  };
  EXPECT_EQ(changes(ReconcilerLines(current, seen_current)), now.commands);
  EXPECT_EQ(changes(ReconcilerLines(leaving, seen_leaving)), old.commands);
  ASSERT_NE(Of(outcome, kFirstPid), nullptr);
  EXPECT_EQ(Of(outcome, kFirstPid)->refused, old.refused);
}

// The master closes the connection in the middle of an apply batch (a reload would): the
// reconcile is retried at once, not at the next resync. The first reconcile of a worker present
// when hawk started is a full one, redone from a fresh observation; a later, incremental one is
// retried with what it carried, for a worker whose map keys are uncertain, without observing.
TEST_F(ReconcilerTest, ConnectionCutMidBatchIsRetriedBeforeTheResync) {
  master_->AddWorker(kFirstPid);
  std::string cut_line = "set server be_app/web1 weight 10";
  int cut_when = 0;  // the cut happens while master_->cuts() == cut_when
  master_->set_cut_hook([&](int pid, const fake::ReceivedCommand& command) {
    return pid == kFirstPid && command.line == cut_line && master_->cuts() == cut_when;
  });
  StartHawk();  // resync_interval: 1 h
  model::DesiredState desired = Desired("v1", 10, "c.example.com");
  PushOutcome outcome = WaitForPush(Push(desired));

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
  EXPECT_EQ(CountStartingWith(sent, "show servers state "), 2u);
  model::WorkersReport report = Annotated();
  ASSERT_NE(report.Find(kFirstPid), nullptr);
  EXPECT_EQ(report.Find(kFirstPid)->sync.error, "");

  // An incremental apply cut at its first command: retried without any observation, the map
  // change sent as an upsert.
  size_t seen = fake_worker.received.size();
  cut_line = "set server be_app/web1 weight 20";
  cut_when = 1;
  model::DesiredState second = Desired("v2", 20, "d.example.com");
  outcome = WaitForPush(Push(second));
  EXPECT_EQ(master_->cuts(), 2);
  worker = Of(outcome, kFirstPid);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->result, PushResult::kApplied) << PushResultName(worker->result);
  EXPECT_EQ(ServersMismatch(fake_worker, second), "");
  EXPECT_EQ(MapLines(fake_worker, kHostsMap), DesiredMapLines(second));
  sent = ReconcilerLines(fake_worker, seen);
  EXPECT_EQ(std::count(sent.begin(), sent.end(), cut_line), 2);
  EXPECT_EQ(CountStartingWith(sent, "show "), 0u);
  EXPECT_THAT(sent, Contains(absl::StrCat("set map ", kHostsMap, " d.example.com be_new")));
  EXPECT_THAT(sent, Contains(absl::StrCat("add map ", kHostsMap, " d.example.com be_new")));
}

// A push answered before a worker finished says why that worker is PENDING: still applying, or
// retrying after a failure (naming it), so that a controller can tell a slow worker from a
// broken path.
TEST_F(ReconcilerTest, APendingOutcomeSaysWhy) {
  master_->AddWorker(kFirstPid);
  bool cut_every_command = false;
  master_->set_cut_hook([&](int pid, const fake::ReceivedCommand& command) {
    return cut_every_command && pid == kFirstPid && absl::StartsWith(command.line, "set server");
  });
  StartHawk();
  auto answer = [&](uint64_t seq, absl::Duration timeout) {
    auto outcome = std::make_shared<absl::optional<PushOutcome>>();
    reconciler_->WaitForPush(seq, timeout, [outcome](PushOutcome o) { *outcome = std::move(o); });
    RunUntil([&] { return outcome->has_value(); });
    return outcome->value_or(PushOutcome{});
  };

  PushOutcome busy = answer(Push(Desired("v1", 10, "c.example.com")), absl::ZeroDuration());
  const WorkerOutcome* worker = Of(busy, kFirstPid);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->result, PushResult::kPending) << PushResultName(worker->result);
  EXPECT_THAT(worker->reason, ::testing::AnyOf("still applying", "not started"));
  RunUntil([&] { return reconciler_->HoldsLatest(kFirstPid); });

  cut_every_command = true;
  PushOutcome failing = answer(Push(Desired("v2", 20, "d.example.com")), absl::Milliseconds(300));
  worker = Of(failing, kFirstPid);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->result, PushResult::kPending) << PushResultName(worker->result);
  EXPECT_TRUE(absl::StartsWith(worker->reason, "retrying: ")) << worker->reason;
  EXPECT_GT(master_->cuts(), 0);
  cut_every_command = false;  // the fake's cuts must end before the test's teardown
}

// A pid that comes back is not always the same worker: here the leaving worker exits while a batch
// for it is in flight and the reload that cut the batch starts a new worker that gets the same
// pid (pids wrap, soonest in a container's pid namespace). The new worker holds the configuration
// file, not what hawk applied to the old one: it must be seeded with the whole desired state,
// and nothing done for the old worker (the cut batch, its retry) may count for it.
TEST_F(ReconcilerTest, APidReusedWhileABatchIsInFlightIsSeededAsANewWorker) {
  AddLeavingAndCurrentWorkers();
  StartHawk();
  model::DesiredState first = Desired("v1", 10, "c.example.com");
  PushOutcome outcome = WaitForPush(Push(first));
  ASSERT_EQ(outcome.workers.size(), 2u);
  ASSERT_EQ(ServersMismatch(*master_->worker(kFirstPid), first), "");

  // v2 changes web1's weight alone: the old worker's batch is that one command.
  master_->set_cut_hook([&](int pid, const fake::ReceivedCommand& command) {
    if (pid != kFirstPid || command.line != "set server be_app/web1 weight 20" ||
        master_->cuts() > 0) {
      return false;
    }
    master_->RemoveWorker(kFirstPid);  // it exits…
    master_->Reload(kFirstPid);        // …and the reload's new worker gets its pid
    return true;
  });
  model::DesiredState second = Desired("v2", 20, "c.example.com");
  uint64_t seq = Push(second);
  RunUntil([&] { return master_->cuts() == 1; });
  outcome = WaitForPush(seq);

  const FakeWorker& reborn = *master_->worker(kFirstPid);
  EXPECT_EQ(reborn.reloads, 0);
  EXPECT_EQ(ServersMismatch(reborn, second), "");
  EXPECT_EQ(MapLines(reborn, kHostsMap), DesiredMapLines(second));
  const WorkerOutcome* worker = Of(outcome, kFirstPid);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->result, PushResult::kApplied) << PushResultName(worker->result);
  EXPECT_EQ(ServersMismatch(*master_->worker(kSecondPid), second), "");
  model::WorkersReport report = Annotated();
  ASSERT_NE(report.Find(kFirstPid), nullptr);
  EXPECT_EQ(report.Find(kFirstPid)->role, model::WorkerRole::kCurrent);
  EXPECT_EQ(report.Find(kFirstPid)->sync.applied_version, "v2");
}

// An incremental apply cut after its server command ran, and a push that changes that field back
// before the retry (a controller pushing a burst during a reload). Expected to fail with
// agent/plan at cb512e6: the retry plans the server from the first run's before-value, which
// equals the desired value again, so the weight the cut run set stays (reported APPLIED).
TEST_F(ReconcilerTest, PushDuringACutApplyChangingAFieldBack) {
  master_->AddWorker(kFirstPid);
  StartHawk();
  model::DesiredState first = Desired("v1", 10, "c.example.com");
  ASSERT_EQ(Of(WaitForPush(Push(first)), kFirstPid)->result, PushResult::kApplied);
  model::DesiredState back = Desired("v3", 10, "c.example.com");
  uint64_t back_seq = 0;
  // v2 changes the weight and the map; the connection closes at the map command (the weight
  // command before it ran), and v3 arrives just then, with v1's weight and map.
  master_->set_cut_hook([&](int pid, const fake::ReceivedCommand& command) {
    if (pid != kFirstPid || master_->cuts() > 0 || !absl::StartsWith(command.line, "del map ")) {
      return false;
    }
    back_seq = Push(back);
    return true;
  });
  Push(Desired("v2", 20, "d.example.com"));
  RunUntil([&] { return back_seq != 0; });
  PushOutcome outcome = WaitForPush(back_seq);
  EXPECT_EQ(master_->cuts(), 1);
  const WorkerOutcome* worker = Of(outcome, kFirstPid);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->result, PushResult::kApplied) << PushResultName(worker->result);
  const FakeWorker& fake_worker = *master_->worker(kFirstPid);
  EXPECT_EQ(MapLines(fake_worker, kHostsMap), DesiredMapLines(back));
  EXPECT_EQ(ServersMismatch(fake_worker, back), "");
}

// Desired states that arrive while a worker is busy coalesce: when it finishes, it runs once
// more with the latest; the ones in between are never sent. Changed: the worker is first brought
// in sync (its first reconcile is an observation, planned against the state as it is when the
// replies come back, so pushes during it would all land in that one run); then "a" starts an
// incremental apply and "b" and "c" arrive while it runs.
TEST_F(ReconcilerTest, DesiredStatesCoalesceWhileTheWorkerIsBusy) {
  master_->AddWorker(kFirstPid);
  StartHawk();
  ASSERT_EQ(Of(WaitForPush(Push(Desired("v0", 5, "v0-only.example.com"))), kFirstPid)->result,
            PushResult::kApplied);
  const FakeWorker& fake_worker = *master_->worker(kFirstPid);
  size_t seen = fake_worker.received.size();
  uint64_t refreshes = registry_->refreshes();
  uint64_t incremental = reconciler_->stats().incremental_reconciles;
  Push(Desired("a", 11, "a-only.example.com"));  // the worker is now busy
  ASSERT_FALSE(reconciler_->HoldsLatest(kFirstPid));
  Push(Desired("b", 22, "b-only.example.com"));
  model::DesiredState latest = Desired("c", 33, "c-only.example.com");
  uint64_t seq = Push(latest);
  PushOutcome outcome = WaitForPush(seq);

  // No registry refresh kicked the worker again: the reconciler ran the latest by itself.
  EXPECT_EQ(registry_->refreshes(), refreshes);
  EXPECT_EQ(reconciler_->stats().incremental_reconciles, incremental + 2);
  EXPECT_EQ(outcome.version, "c");
  const WorkerOutcome* worker = Of(outcome, kFirstPid);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->result, PushResult::kApplied) << PushResultName(worker->result);
  EXPECT_TRUE(reconciler_->HoldsLatest(kFirstPid));
  EXPECT_EQ(ServersMismatch(fake_worker, latest), "");
  EXPECT_EQ(MapLines(fake_worker, kHostsMap), DesiredMapLines(latest));
  std::vector<std::string> sent = ReconcilerLines(fake_worker, seen);
  EXPECT_THAT(sent, Contains("set server be_app/web1 weight 11"));  // the run in progress
  EXPECT_THAT(sent, Contains("set server be_app/web1 weight 33"));
  EXPECT_THAT(sent, Not(Contains("set server be_app/web1 weight 22")));
  for (const std::string& line : sent) {
    EXPECT_FALSE(absl::StrContains(line, "b-only.example.com")) << line;
  }
  for (size_t i = seen; i < fake_worker.received.size(); ++i) {
    EXPECT_FALSE(absl::StrContains(fake_worker.received[i].payload, "b-only.example.com"))
        << fake_worker.received[i].line;
  }
}

// A leaving worker exits between two registry polls: the master answers `Can't find the target
// PID…` (and, as 2.6 does, closes the connection). The push does not wait for that worker: it is
// dropped once the registry no longer lists it, and the current worker is APPLIED.
TEST_F(ReconcilerTest, WorkerThatExitedIsDroppedFromThePush) {
  AddLeavingAndCurrentWorkers();
  StartHawk();
  ASSERT_EQ(registry_->report().workers.size(), 2u);
  master_->RemoveWorker(kFirstPid);  // hawk still lists it

  model::DesiredState desired = Desired("v1", 10, "c.example.com");
  PushOutcome outcome = WaitForPush(Push(desired));

  ASSERT_EQ(outcome.workers.size(), 1u);
  EXPECT_EQ(outcome.workers[0].pid, kSecondPid);
  EXPECT_EQ(outcome.workers[0].result, PushResult::kApplied);
  EXPECT_EQ(registry_->report().Find(kFirstPid), nullptr);
  EXPECT_THAT(master_->unrouted_lines(),
              Contains(absl::StrCat("@!", kFirstPid, " show servers state be_app")));
  EXPECT_EQ(ServersMismatch(*master_->worker(kSecondPid), desired), "");
}

// The cost of a change is the change: one entry of a 100,000-entry map changes, and the worker
// in sync gets exactly one command (no observation, no transaction).
TEST_F(ReconcilerTest, OneEntryOfAHundredThousandEntryMapSendsOneCommand) {
  constexpr int kEntries = 100000;
  model::StringTable hosts;
  hosts.Reserve(kEntries, kEntries * 32);
  for (int i = 0; i < kEntries; ++i) {
    hosts.Set(absl::StrCat("host", i, ".example.com"), absl::StrCat("be_", i % 7));
  }
  plan::ObservedWorker config;
  config.maps[kHostsMap].entries = hosts;
  master_->set_config(config);
  master_->AddWorker(kFirstPid);
  StartHawk();
  // The worker already holds it: observed once, nothing to send.
  ASSERT_EQ(
      Of(WaitForPush(Push(plan::testing::Desired().Version("v1").Map(kHostsMap, hosts))), kFirstPid)
          ->result,
      PushResult::kApplied);
  const FakeWorker& worker = *master_->worker(kFirstPid);
  size_t seen = worker.received.size();
  uint64_t commands = reconciler_->stats().commands_sent;

  model::StringTable changed = hosts;
  changed.Set("host4242.example.com", "be_changed");
  model::DesiredState desired = plan::testing::Desired().Version("v2").Map(kHostsMap, changed);
  PushOutcome pushed = WaitForPush(Push(desired));
  const WorkerOutcome* outcome = Of(pushed, kFirstPid);
  ASSERT_NE(outcome, nullptr);
  EXPECT_EQ(outcome->result, PushResult::kApplied) << PushResultName(outcome->result);
  std::vector<std::string> sent = ReconcilerLines(worker, seen);
  EXPECT_THAT(sent, ::testing::ElementsAre(
                        absl::StrCat("set map ", kHostsMap, " host4242.example.com be_changed")));
  EXPECT_EQ(CountStartingWith(sent, "show map"), 0u);
  EXPECT_EQ(CountStartingWith(sent, "prepare "), 0u);
  EXPECT_EQ(reconciler_->stats().commands_sent, commands + 1);
  std::vector<plan::testing::SimEntry> held = worker.runtime.SortedMapEntries(kHostsMap);
  EXPECT_EQ(held, plan::testing::SimEntries(changed));
}

// The same for servers: one server's weight among 10,000.
TEST_F(ReconcilerTest, OneServerOfTenThousandSendsOneCommand) {
  constexpr int kServers = 10000;
  plan::ObservedWorker config;
  plan::testing::Desired desired;
  desired.Version("v1");
  for (int i = 0; i < kServers; ++i) {
    std::string name = absl::StrCat("srv", i);
    std::string address =
        absl::StrCat("10.", i / 256 / 256 % 256, ".", i / 256 % 256, ".", i % 256);
    config.backends["be_big"].servers[name] =
        plan::ObservedServer{address, 8080, 0, parse::kOpRunning, 10, ""};
    desired.Server("be_big", name, Spec(address, 8080, 10, model::ServerState::kReady));
  }
  master_->set_config(config);
  master_->AddWorker(kFirstPid);
  StartHawk();
  model::DesiredState state = desired;
  ASSERT_EQ(Of(WaitForPush(Push(state)), kFirstPid)->result, PushResult::kApplied);
  const FakeWorker& worker = *master_->worker(kFirstPid);
  size_t seen = worker.received.size();
  uint64_t commands = reconciler_->stats().commands_sent;

  state.version = "v2";
  state.backends["be_big"].servers["srv4242"].weight = 7;
  PushOutcome pushed = WaitForPush(Push(state));
  const WorkerOutcome* outcome = Of(pushed, kFirstPid);
  ASSERT_NE(outcome, nullptr);
  EXPECT_EQ(outcome->result, PushResult::kApplied) << PushResultName(outcome->result);
  EXPECT_THAT(ReconcilerLines(worker, seen),
              ::testing::ElementsAre("set server be_big/srv4242 weight 7"));
  EXPECT_EQ(reconciler_->stats().commands_sent, commands + 1);
  ASSERT_NE(worker.runtime.Server("be_big", "srv4242"), nullptr);
  EXPECT_EQ(worker.runtime.Server("be_big", "srv4242")->user_weight, 7);
}

}  // namespace
}  // namespace hawk::reconcile

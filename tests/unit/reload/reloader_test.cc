// Reloader: reload rounds on a real libuv loop against FakeMaster (a small HAProxy 2.6 behind a
// master CLI socket, tests/unit/fake_master), with a real MasterClient, WorkerRegistry and
// Reconciler wired as agent/app/app.cc wires them, and `haproxy -c` run by the HAProxy binary the
// integration suites use. The reloader's clock is the test's: every timestamp and duration of a
// record comes from it.

#include "agent/reload/reloader.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "agent/cli/client.h"
#include "agent/model/delta.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/observed.h"
#include "agent/reconcile/reconciler.h"
#include "agent/registry/registry.h"
#include "agent/uv/loop.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"
#include "tests/support/run_loop_until.h"
#include "tests/unit/fake_master/fake_master.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::reload {
namespace {

using fake::FakeMaster;
using plan::testing::Spec;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kMasterPid = 26372;
constexpr int kFirstPid = 26374;   // present when hawk starts
constexpr int kSecondPid = 26396;  // started by the first reload
const absl::Time kT0 = absl::FromUnixSeconds(1800000000);

// The configuration file: one frontend (so that `haproxy -c` accepts it) and be_app's two servers,
// as the fake's workers hold them.
constexpr char kConfig[] =
    "global\n"
    "\n"
    "defaults\n"
    "  mode http\n"
    "  timeout client 1s\n"
    "  timeout server 1s\n"
    "  timeout connect 1s\n"
    "\n"
    "frontend fe\n"
    "  bind 127.0.0.1:1\n"
    "  default_backend be_app\n"
    "\n"
    "backend be_app\n"
    "  server web1 127.0.0.1:22001\n"
    "  server web2 127.0.0.1:22002\n";

plan::ObservedWorker WorkerConfig() {
  plan::ObservedWorker config;
  plan::ObservedBackend& app = config.backends["be_app"];
  app.servers["web1"] = {"127.0.0.1", 22001, 0, parse::kOpRunning, 1, ""};
  app.servers["web2"] = {"127.0.0.1", 22002, 0, parse::kOpRunning, 1, ""};
  return config;
}

// The binary the integration suites run against (tests/support/haproxy_process.h).
std::string HaproxyBinary() {
  const char* env = std::getenv("HAWK_HAPROXY_BINARY");
  return env != nullptr && *env != '\0' ? env : "/usr/sbin/haproxy";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

class ReloaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As agent/main.cc: a connection the master closed is a write error, not a signal.
    std::signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/hawk-reloader-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    config_path_ = dir_ + "/haproxy.cfg";
    WriteFile(config_path_, kConfig);
    master_ = std::make_unique<FakeMaster>(loop_.get(), dir_ + "/master.sock", kMasterPid,
                                           WorkerConfig());
    master_->Listen();
    master_->AddWorker(kFirstPid);
    master_->AnswerReloads(kSecondPid);
  }
  void TearDown() override {
    // Users before what they use, as App::Stop does.
    reloader_.reset();
    reconciler_.reset();
    registry_.reset();
    client_.reset();
    master_.reset();
    EXPECT_TRUE(loop_.RunDryAndClose().ok());
    for (const char* name : {"haproxy.cfg", "haproxy.cfg.previous", "master.sock"}) {
      unlink((dir_ + "/" + name).c_str());
    }
    rmdir(dir_.c_str());
  }

  ReloaderOptions Options() const {
    ReloaderOptions options;
    options.config_path = config_path_;
    options.haproxy_binary = HaproxyBinary();
    return options;
  }

  // Wires and starts the client, the registry, the reconciler and the reloader as App::Init
  // does, then runs the loop until the registry has reported the first worker.
  void StartHawk(ReloaderOptions options) {
    cli::MasterClientOptions client_options;
    client_options.address =
        base::Address{base::Address::Kind::kUnix, dir_ + "/master.sock", "", 0};
    client_ = std::make_unique<cli::MasterClient>(loop_.get(), client_options);
    // No periodic polls: the registry looks again when the reloader asks (and when the master
    // closes a connection).
    registry::RegistryOptions registry_options;
    registry_options.poll_interval = absl::Hours(1);
    registry_options.transition_poll_interval = absl::Hours(1);
    registry_options.starting_poll_interval = absl::Hours(1);
    registry_ = std::make_unique<registry::WorkerRegistry>(
        loop_.get(), client_.get(), registry_options, [] { return absl::Now(); });
    registry_->SetGraceSource([] { return absl::Hours(1); });
    reconcile::ReconcilerOptions reconciler_options;
    reconciler_options.resync_interval = absl::Hours(1);
    reconciler_ = std::make_unique<reconcile::Reconciler>(
        loop_.get(), client_.get(), registry_.get(), &state_, reconciler_options,
        [] { return absl::Now(); });
    reloader_ =
        std::make_unique<Reloader>(loop_.get(), client_.get(), registry_.get(), reconciler_.get(),
                                   std::move(options), [this] { return now_; });
    client_->Start();
    registry_->Start();
    reconciler_->Start();
    reloader_->Start();
    RunUntil([&] { return registry_->report().Find(kFirstPid) != nullptr; });
  }

  // A new desired state, as StateService applies a PUT; runs until the current worker holds it.
  void Push(model::DesiredState next) {
    model::AppliedDelta applied =
        model::ApplyDelta(model::DiffStates(state_, std::move(next)), &state_);
    reconciler_->Publish(applied.summary);
    RunUntil([&] { return reconciler_->HoldsLatest(kFirstPid); });
  }

  // Queues a reload; the outcome lands in the returned slot.
  std::shared_ptr<absl::optional<ReloadOutcome>> Request(absl::optional<std::string> config) {
    auto outcome = std::make_shared<absl::optional<ReloadOutcome>>();
    reloader_->Request(std::move(config), [outcome](const ReloadOutcome& o) { *outcome = o; });
    return outcome;
  }

  ReloadOutcome Await(const std::shared_ptr<absl::optional<ReloadOutcome>>& outcome) {
    RunUntil([&] { return outcome->has_value(); });
    return outcome->value_or(ReloadOutcome{});
  }

  // Runs the loop until `done` or a 5 s safety deadline.
  void RunUntil(const std::function<bool()>& done) {
    ASSERT_TRUE(hawk::testing::RunLoopUntil(loop_.get(), done))
        << "condition not reached within 5 s";
  }

  int Reloads() const {
    const std::vector<std::string>& lines = master_->master_lines();
    return static_cast<int>(std::count(lines.begin(), lines.end(), "reload"));
  }

  uv::Loop loop_;
  std::string dir_;
  std::string config_path_;
  absl::Time now_ = kT0;  // the reloader's clock
  model::DesiredState state_;
  std::unique_ptr<FakeMaster> master_;
  std::unique_ptr<cli::MasterClient> client_;
  std::unique_ptr<registry::WorkerRegistry> registry_;
  std::unique_ptr<reconcile::Reconciler> reconciler_;
  std::unique_ptr<Reloader> reloader_;
};

// The desired servers written into the configuration, `haproxy -c` passed, the file replaced;
// then `show proc` (the baseline) and `reload` in one batch, and the new worker the reports show
// judged the verdict.
TEST_F(ReloaderTest, ASuccessfulRoundSendsShowProcAndReloadTogetherAndJudgesTheNewWorker) {
  StartHawk(Options());
  Push(plan::testing::Desired().Server("be_app", "web1", Spec("10.0.0.1", 8080)));

  ReloadOutcome outcome = Await(Request(absl::nullopt));

  ASSERT_TRUE(outcome.status.ok()) << outcome.status << "\n" << outcome.record.log;
  const ReloadRecord& record = outcome.record;
  EXPECT_EQ(record.result, ReloadResult::kSucceeded);
  EXPECT_EQ(record.new_worker_pid, kSecondPid);
  EXPECT_EQ(record.requests, 1);
  EXPECT_TRUE(record.config_written);
  EXPECT_FALSE(record.config_restored);
  // The reloader's clock, not the loop's: it stood still.
  EXPECT_EQ(record.started_at, kT0);
  EXPECT_EQ(record.duration, absl::ZeroDuration());
  EXPECT_THAT(record.log, HasSubstr("servers: 1 of 1 managed servers written"));
  EXPECT_THAT(ReadFile(config_path_), HasSubstr("server web1 10.0.0.1:8080"));
  EXPECT_EQ(ReadFile(config_path_ + ".previous"), kConfig);

  // `reload` right behind `show proc`, on the same connection: one batch.
  const std::vector<std::string>& lines = master_->master_lines();
  const std::vector<int>& conns = master_->master_line_connections();
  auto reload = std::find(lines.begin(), lines.end(), "reload");
  ASSERT_NE(reload, lines.end());
  size_t at = static_cast<size_t>(reload - lines.begin());
  ASSERT_GT(at, 0u);
  EXPECT_EQ(lines[at - 1], "show proc");
  EXPECT_EQ(conns[at - 1], conns[at]);
  EXPECT_EQ(Reloads(), 1);

  ASSERT_EQ(reloader_->History().size(), 1u);
  EXPECT_EQ(reloader_->counters().reloads[static_cast<int>(ReloadTrigger::kApi)]
                                         [static_cast<int>(ReloadResult::kSucceeded)],
            1u);
}

// A configuration `haproxy -c` rejects: the round ends FAILED, nothing written, no `reload` sent.
TEST_F(ReloaderTest, ARoundWhoseCheckFailsSendsNoReload) {
  StartHawk(Options());

  ReloadOutcome outcome = Await(Request(std::string("global\n  no-such-keyword\n")));

  EXPECT_TRUE(absl::IsFailedPrecondition(outcome.status)) << outcome.status;
  EXPECT_EQ(outcome.record.result, ReloadResult::kFailed);
  EXPECT_THAT(outcome.record.error, HasSubstr("rejected the configuration"));
  EXPECT_THAT(outcome.record.error, HasSubstr("nothing was written"));
  EXPECT_FALSE(outcome.record.config_written);
  EXPECT_EQ(ReadFile(config_path_), kConfig);
  EXPECT_THAT(master_->master_lines(), Not(::testing::Contains("reload")));
  EXPECT_EQ(master_->worker(kFirstPid)->stopping, false);
}

// Requests that arrive while a round is under way are covered together by one more round.
TEST_F(ReloaderTest, RequestsDuringARoundCoalesceIntoOneMoreRound) {
  ReloaderOptions options;  // no configuration, no check: the rounds reload the file as it is
  StartHawk(options);

  auto first = Request(absl::nullopt);
  RunUntil([&] { return Reloads() == 1; });
  ASSERT_FALSE(first->has_value());  // the round awaits its verdict
  now_ += absl::Milliseconds(300);
  auto second = Request(absl::nullopt);
  auto third = Request(absl::nullopt);

  ReloadOutcome one = Await(first);
  ReloadOutcome two = Await(second);
  ReloadOutcome three = Await(third);
  EXPECT_TRUE(one.status.ok()) << one.status;
  EXPECT_EQ(one.record.requests, 1);
  EXPECT_EQ(one.record.new_worker_pid, kSecondPid);
  EXPECT_EQ(one.record.duration, absl::Milliseconds(300));  // the reloader's clock
  EXPECT_TRUE(two.status.ok()) << two.status;
  EXPECT_EQ(two.record.id, three.record.id);
  EXPECT_NE(two.record.id, one.record.id);
  EXPECT_EQ(two.record.requests, 2);
  EXPECT_EQ(two.record.new_worker_pid, kSecondPid + 1);
  EXPECT_EQ(Reloads(), 2);
  EXPECT_EQ(reloader_->History().size(), 2u);
}

}  // namespace
}  // namespace hawk::reload

// `hawk apply` and `hawk get state`, a person's commands, against a running hawk and HAProxy.

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::seconds;

class ApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(dir_, "app");
    ASSERT_TRUE(backend_->ok()) << backend_->error();
    haproxy_ =
        std::make_unique<HaproxyProcess>(dir_, BasicHaproxyConfig(FreeTcpPort(), backend_->port()));
    Result started = haproxy_->Start();
    ASSERT_TRUE(started) << started.error;
    hawk_ = std::make_unique<HawkProcess>(dir_, haproxy_->master_socket());
    ASSERT_TRUE(hawk_->ok()) << hawk_->error();
    ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
    ASSERT_TRUE(WaitUntil([&] { return ReadyWithACurrentWorker(*hawk_); }, seconds(5)))
        << hawk_->LogTail();
  }
  // A document in a file; `extra` adds servers after SRV_1.
  std::string Document(const std::string& version, int weight, const std::string& extra = "") {
    std::string path = dir_.File(version + ".json");
    std::ofstream(path) << absl::StrCat(
        R"({"version":")", version, R"(","backends":[{"name":"be_app","servers":[)",
        R"({"name":"SRV_1","address":"127.0.0.1","port":)", backend_->port(), R"(,"weight":)",
        weight, "}", extra, "]}]}");
    return path;
  }
  RunResult Hawk(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--address", hawk_->api_address()});
    return RunHawk(dir_, std::move(args), seconds(20));
  }

  TempDir dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<HawkProcess> hawk_;
};

TEST_F(ApplyTest, AppliesPrintsEachWorkerAndFailsWhenOneIsNotApplied) {
  int worker = haproxy_->CurrentWorkerPid();
  RunResult applied = Hawk({"apply", "--timeout-ms", "5000", Document("v1", 10)});
  EXPECT_EQ(applied.exit_code, 0) << applied.output;
  EXPECT_TRUE(absl::StrContains(applied.output, "version v1")) << applied.output;
  EXPECT_TRUE(
      absl::StrContains(applied.output, absl::StrCat("worker ", worker, " CURRENT  APPLIED")))
      << applied.output;

  // SRV_9 is not in HAProxy's configuration, and without a port hawk cannot create it there.
  RunResult partial = Hawk({"apply", "--timeout-ms", "5000",
                            Document("v2", 20, R"(,{"name":"SRV_9","address":"192.0.2.9"})")});
  EXPECT_EQ(partial.exit_code, 3) << partial.output;
  EXPECT_TRUE(absl::StrContains(partial.output, "PARTIAL")) << partial.output;
  EXPECT_TRUE(absl::StrContains(partial.output, "SRV_9")) << partial.output;

  RunResult state = RunHawk(dir_, {"get", "state", hawk_->api_address()});
  EXPECT_EQ(state.exit_code, 0) << state.output;
  EXPECT_TRUE(absl::StrContains(state.output, "\"version\":\"v2\"")) << state.output;

  // A dry run lists what the push would send, and changes nothing.
  RunResult dry = Hawk({"apply", "--dry-run", Document("v3", 30)});
  EXPECT_EQ(dry.exit_code, 0) << dry.output;
  EXPECT_TRUE(absl::StrContains(dry.output, "dry run: version v3")) << dry.output;
  EXPECT_TRUE(absl::StrContains(
      dry.output, absl::StrCat("worker ", worker, " CURRENT  INCREMENTAL  would send 1")))
      << dry.output;
  EXPECT_TRUE(absl::StrContains(dry.output, "  send    set server be_app/SRV_1 weight 30"))
      << dry.output;
  RunResult after = RunHawk(dir_, {"get", "state", hawk_->api_address()});
  EXPECT_TRUE(absl::StrContains(after.output, "\"version\":\"v2\"")) << after.output;

  RunResult usage = RunHawk(dir_, {"apply"});
  EXPECT_EQ(usage.exit_code, 2) << usage.output;
}

TEST_F(ApplyTest, GetStateWithNoneHeldFails) {
  RunResult state = RunHawk(dir_, {"get", "state", hawk_->api_address()});
  EXPECT_EQ(state.exit_code, 1) << state.output;
  EXPECT_TRUE(absl::StrContains(state.output, "no desired state")) << state.output;
}

}  // namespace
}  // namespace hawk::testing

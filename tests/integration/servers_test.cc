// Servers by name (issue 28): a server the configuration does not declare is created on the
// worker with `add server`, serves requests without a reload, changes address, and is deleted
// once it leaves the desired state — after the requests it still serves have ended. Servers the
// configuration declares are never deleted. Real HAProxy (every version), real backends.

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/backend_process.h"
#include "tests/support/free_port.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/master_cli.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

class ServersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"A", "B", "C"}) {
      auto backend = std::make_unique<BackendProcess>(dir_, name);
      Result started = backend->Start();
      ASSERT_TRUE(started) << started.error;
      backends_.push_back(std::move(backend));
    }
    frontend_port_ = FreeTcpPort();
    // SRV_1 (backend A) is the only server the configuration declares.
    haproxy_ = std::make_unique<HaproxyProcess>(
        dir_, BasicHaproxyConfig(frontend_port_, backends_[0]->port(), ExtraGlobal()));
    Result started = haproxy_->Start();
    ASSERT_TRUE(started) << started.error;
    StartHawk({});
    worker_ = haproxy_->CurrentWorkerPid();
    ASSERT_GT(worker_, 0);
  }

  virtual std::string ExtraGlobal() const { return ""; }

  // hawk again, with --haproxy-config: it may write the file, and learns `grace` from it (which
  // it needs on 2.6 to send anything to a leaving worker).
  void StartHawkWithConfig() { StartHawk({"--haproxy-config", haproxy_->config_path()}); }

  // (Re)starts hawk with `args`, until it serves and sees a current worker.
  void StartHawk(std::vector<std::string> args) {
    hawk_.reset();
    hawk_ = std::make_unique<HawkProcess>(dir_, haproxy_->master_socket(), std::move(args));
    ASSERT_TRUE(hawk_->ok()) << hawk_->error();
    ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
    ASSERT_TRUE(WaitUntil([&] { return ReadyWithACurrentWorker(*hawk_); }, seconds(5)))
        << hawk_->LogTail();
  }

  // A desired state of be_app: SRV_1 in `srv1_state`, and `servers` ("<name>" → backend index;
  // -1 leaves it out), each READY.
  std::string Desired(const std::string& version, const std::string& srv1_state,
                      const std::vector<std::pair<std::string, int>>& servers) {
    std::string out =
        absl::StrCat(R"({"version":")", version, R"(","backends":[{"name":"be_app","servers":[)",
                     R"({"name":"SRV_1","address":"127.0.0.1","port":)", backends_[0]->port(),
                     R"(,"state":")", srv1_state, R"("})");
    for (const auto& [name, backend] : servers) {
      absl::StrAppend(&out, R"(,{"name":")", name, R"(","address":"127.0.0.1","port":)",
                      backends_[backend]->port(), R"(,"weight":10})");
    }
    absl::StrAppend(&out, "]}]}");
    return out;
  }
  // Whose body answers a request through HAProxy ("A\n", …), or the error.
  std::string Through(const std::string& target = "/") {
    HttpResult r = Fetch("tcp:127.0.0.1:" + std::to_string(frontend_port_), "GET", target);
    return r.ok ? absl::StrCat(r.status, " ", r.body) : r.error;
  }
  ServerRow Row(const std::string& server, int pid = 0) {
    return ReadServerRow(haproxy_->master_socket(), pid == 0 ? worker_ : pid, "be_app", server);
  }
  int MasterReloads() {
    std::optional<ProcList> proc = MasterCli::ShowProc(haproxy_->master_socket());
    return proc ? proc->master_reloads : -1;
  }
  // The worker's entry in GET /v1/workers, raw.
  std::string WorkersJson() { return hawk_->Get("/v1/workers").body; }

  TempDir dir_;
  std::vector<std::unique_ptr<BackendProcess>> backends_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<HawkProcess> hawk_;
  int frontend_port_ = -1;
  int worker_ = 0;
};

TEST_F(ServersTest, AServerCreatedByNameServesWithoutAReloadAndFollowsItsAddress) {
  int reloads = MasterReloads();
  ASSERT_GE(reloads, 0);
  EXPECT_EQ(Row("DYN_1").admin, -1) << "the configuration declares no DYN_1";

  // SRV_1 in maintenance: every request goes to the server hawk creates.
  HttpResult put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v1", "MAINT", {{"DYN_1", 1}}));
  ASSERT_EQ(put.status, 200) << put.body << hawk_->LogTail();
  EXPECT_THAT(put.body, HasSubstr("\"result\":\"APPLIED\"")) << put.body;
  ServerRow created = Row("DYN_1");
  EXPECT_EQ(created.address, "127.0.0.1");
  EXPECT_EQ(created.port, backends_[1]->port());
  EXPECT_EQ(created.weight, 10);
  EXPECT_EQ(created.admin & 0x01, 0) << "enabled once created";
  EXPECT_EQ(Through(), "200 B\n");
  EXPECT_THAT(WorkersJson(), HasSubstr(R"("createdServers":["be_app/DYN_1"])"));

  // Its address changes like any server's.
  put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v2", "MAINT", {{"DYN_1", 2}}));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_THAT(put.body, HasSubstr("\"result\":\"APPLIED\"")) << put.body;
  EXPECT_EQ(Through(), "200 C\n");
  EXPECT_EQ(MasterReloads(), reloads) << "no reload: the worker that serves is the same";
  EXPECT_EQ(haproxy_->CurrentWorkerPid(), worker_);
}

TEST_F(ServersTest, ARemovedServerIsDeletedOnceItsRequestsEndAndAConfiguredOneNeverIs) {
  HttpResult put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v1", "MAINT", {{"DYN_1", 1}}));
  ASSERT_EQ(put.status, 200) << put.body << hawk_->LogTail();
  ASSERT_EQ(Row("DYN_1").port, backends_[1]->port());

  // A slow request on DYN_1, then DYN_1 leaves the desired state (SRV_1 back in rotation).
  InFlightRequest slow(frontend_port_, "/slow/4000", seconds(20));
  ASSERT_TRUE(slow.WaitSent(seconds(5)));
  ASSERT_TRUE(backends_[1]->WaitForRequest("/slow/4000", seconds(5)));
  put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v2", "READY", {}));
  ASSERT_EQ(put.status, 200) << put.body;

  // HAProxy refuses to delete it while the request runs: hawk says it drains, out of rotation.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return WorkersJson().find(R"("drainingServers":["be_app/DYN_1"])") != std::string::npos;
      },
      seconds(5)))
      << WorkersJson() << hawk_->LogTail();
  EXPECT_NE(Row("DYN_1").admin, -1) << "deleted under a running request";
  EXPECT_EQ(Row("DYN_1").admin & 0x01, 1) << "in maintenance while it drains";
  EXPECT_THAT(hawk_->Get("/metrics").body,
              HasSubstr(absl::StrCat("hawk_worker_servers_draining{pid=\"", worker_,
                                     "\",role=\"CURRENT\"} 1\n")));
  EXPECT_EQ(Through(), "200 A\n");

  // The request completes; then the server is gone.
  ASSERT_TRUE(slow.Wait(seconds(10)));
  HttpResult answered = slow.result();
  EXPECT_EQ(answered.status, 200) << answered.error;
  EXPECT_EQ(answered.body, "B\n");
  EXPECT_TRUE(WaitUntil([&] { return Row("DYN_1").admin == -1; }, seconds(10)))
      << WorkersJson() << hawk_->LogTail();
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::string json = WorkersJson();
        return json.find(R"("createdServers":[])") != std::string::npos &&
               json.find(R"("drainingServers":[])") != std::string::npos;
      },
      seconds(5)))
      << WorkersJson();

  // SRV_1 leaves the desired state too: the configuration declares it, so it stays.
  put = hawk_->Put("/v1/state?timeoutMs=10000",
                   R"({"version":"v3","backends":[{"name":"be_app","servers":[]}]})");
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_NE(Row("SRV_1").admin, -1);
  EXPECT_EQ(Through(), "200 A\n");
}

TEST_F(ServersTest, AWorkerStartedByAReloadGetsTheServerAtOnce) {
  HttpResult put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v1", "MAINT", {{"DYN_1", 1}}));
  ASSERT_EQ(put.status, 200) << put.body << hawk_->LogTail();

  Result reloaded = haproxy_->ReloadViaCli();
  ASSERT_TRUE(reloaded) << reloaded.error;
  worker_ = haproxy_->WaitForNewWorker(worker_);
  ASSERT_GT(worker_, 0);
  // The configuration declares no DYN_1: hawk's seed of the new worker meets "No such server."
  // and creates it in the same reconcile.
  EXPECT_TRUE(WaitUntil(
      [&] {
        ServerRow row = Row("DYN_1");
        return row.port == backends_[1]->port() && (row.admin & 0x01) == 0;
      },
      seconds(10)))
      << WorkersJson() << hawk_->LogTail();
  EXPECT_EQ(Through(), "200 B\n");
  EXPECT_TRUE(WaitUntil(
      [&] {
        WorkersView view = hawk_->Workers();
        const WorkerView* w = view.Find(worker_);
        return w != nullptr && w->in_sync && w->applied_version == "v1";
      },
      seconds(10)))
      << WorkersJson();
}

TEST_F(ServersTest, AReloadThroughHawkWritesItIntoTheConfigurationAndANewWorkerIsBornWithIt) {
  StartHawkWithConfig();
  HttpResult put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v1", "MAINT", {{"DYN_1", 1}}));
  ASSERT_EQ(put.status, 200) << put.body << hawk_->LogTail();

  HttpResult reload = hawk_->Post("/v1/reload", "");
  ASSERT_EQ(reload.status, 200) << reload.body << hawk_->LogTail();
  std::string config = ReadFile(haproxy_->config_path());
  EXPECT_THAT(config, HasSubstr(absl::StrCat(
                          "    # hawk --write-servers: servers created at runtime\n"
                          "    server DYN_1 127.0.0.1:",
                          backends_[1]->port(),
                          " weight 10\n"
                          "    # hawk --write-servers: end of servers created at runtime\n")))
      << config;

  // Without hawk, a reload made elsewhere starts a worker from that file: it serves DYN_1 from
  // its first request.
  hawk_.reset();
  int previous = haproxy_->CurrentWorkerPid();
  Result reloaded = haproxy_->ReloadViaCli();
  ASSERT_TRUE(reloaded) << reloaded.error;
  worker_ = haproxy_->WaitForNewWorker(previous);
  ASSERT_GT(worker_, 0);
  EXPECT_EQ(Row("DYN_1").port, backends_[1]->port());
  EXPECT_EQ(Through(), "200 B\n");

  // A hawk started again knows DYN_1 as its own from the file: a state without it deletes it.
  StartHawkWithConfig();
  put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v2", "READY", {}));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_TRUE(WaitUntil([&] { return Row("DYN_1").admin == -1; }, seconds(10)))
      << WorkersJson() << hawk_->LogTail();
  EXPECT_NE(Row("SRV_1").admin, -1);
}

TEST_F(ServersTest, ALeavingWorkerPastItsGraceGetsNoServerAndSaysSo) {
  if (!haproxy_->version().AtLeast(3, 0)) {
    GTEST_SKIP() << "before 3.0 hawk sends a leaving worker past its grace nothing "
                    "(registry/relay_policy.h): there is nothing to create there";
  }
  HttpResult put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v1", "MAINT", {{"DYN_1", 1}}));
  ASSERT_EQ(put.status, 200) << put.body << hawk_->LogTail();
  // A slow request keeps the old worker alive past the reload; no `grace`: it stops at once.
  InFlightRequest slow(frontend_port_, "/slow/8000", seconds(20));
  ASSERT_TRUE(slow.WaitSent(seconds(5)));
  ASSERT_TRUE(backends_[1]->WaitForRequest("/slow/8000", seconds(5)));
  int leaving = worker_;
  Result reloaded = haproxy_->ReloadViaCli();
  ASSERT_TRUE(reloaded) << reloaded.error;
  worker_ = haproxy_->WaitForNewWorker(leaving);
  ASSERT_GT(worker_, 0);

  put =
      hawk_->Put("/v1/state?timeoutMs=10000", Desired("v2", "MAINT", {{"DYN_1", 1}, {"DYN_2", 2}}));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_TRUE(WaitUntil([&] { return Row("DYN_2").port == backends_[2]->port(); }, seconds(5)));
  // The leaving worker reports DYN_2 stale, frozen, and does not hold it.
  EXPECT_TRUE(WaitUntil(
      [&] {
        WorkersView view = hawk_->Workers();
        const WorkerView* old = view.Find(leaving);
        return old != nullptr &&
               std::find(old->stale_objects.begin(), old->stale_objects.end(),
                         "backend/be_app/server/DYN_2") != old->stale_objects.end();
      },
      seconds(5)))
      << WorkersJson();
  EXPECT_THAT(WorkersJson(), HasSubstr("frozen: the leaving worker"));
  // Not held there: never created, or (when its grace ended between the two) deleted again.
  EXPECT_TRUE(WaitUntil([&] { return Row("DYN_2", leaving).admin == -1; }, seconds(5)))
      << WorkersJson() << hawk_->LogTail();
  ASSERT_TRUE(slow.Wait(seconds(15)));
  EXPECT_EQ(slow.result().body, "B\n");
}

// A leaving worker within its `grace` (10 s here) still takes server changes: servers are created
// and deleted there as on the current worker.
class ServersGraceTest : public ServersTest {
 protected:
  std::string ExtraGlobal() const override { return "    grace 10s\n"; }
};

TEST_F(ServersGraceTest, ALeavingWorkerInItsGraceGetsTheCreationsAndDeletions) {
  StartHawkWithConfig();
  HttpResult put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v1", "MAINT", {{"DYN_1", 1}}));
  ASSERT_EQ(put.status, 200) << put.body << hawk_->LogTail();
  int leaving = worker_;
  Result reloaded = haproxy_->ReloadViaCli();
  ASSERT_TRUE(reloaded) << reloaded.error;
  worker_ = haproxy_->WaitForNewWorker(leaving);
  ASSERT_GT(worker_, 0);
  ASSERT_TRUE(WaitUntil(
      [&] {
        WorkersView view = hawk_->Workers();
        const WorkerView* old = view.Find(leaving);
        const WorkerView* current = view.Find(worker_);
        return old != nullptr && old->role == "LEAVING" && current != nullptr && current->in_sync;
      },
      seconds(10)))
      << WorkersJson();

  // DYN_2 in, DYN_1 out: on both workers.
  put = hawk_->Put("/v1/state?timeoutMs=10000", Desired("v2", "MAINT", {{"DYN_2", 2}}));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_THAT(put.body, Not(HasSubstr("PARTIAL"))) << put.body;
  for (int pid : {leaving, worker_}) {
    SCOPED_TRACE(pid);
    EXPECT_TRUE(
        WaitUntil([&] { return Row("DYN_2", pid).port == backends_[2]->port(); }, seconds(5)))
        << WorkersJson();
    EXPECT_TRUE(WaitUntil([&] { return Row("DYN_1", pid).admin == -1; }, seconds(5)))
        << WorkersJson();
  }
}

}  // namespace
}  // namespace hawk::testing

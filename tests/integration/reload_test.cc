// Reload orchestration (POST /v1/reload, GET /v1/reloads) against a real HAProxy 2.6 in
// master-worker mode. HAProxy's state is checked through the master CLI from the test itself.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simdjson.h"
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
using ::testing::HasSubstr;
using ::testing::Not;

// The fields of a ReloadResponse / ReloadRecord the tests read.
struct ReloadView {
  bool ok = false;  // parsed
  bool success = false;
  std::string trigger, result, log, error_code, error_message;
  int new_worker_pid = 0;
  int requests = 0;
  bool config_restored = false;
};

ReloadView ParseReload(simdjson::dom::object o) {
  ReloadView v;
  v.ok = true;
  bool b = false;
  int64_t n = 0;
  std::string_view s;
  if (o["success"].get(b) == simdjson::SUCCESS) v.success = b;
  if (o["trigger"].get(s) == simdjson::SUCCESS) v.trigger = std::string(s);
  if (o["result"].get(s) == simdjson::SUCCESS) v.result = std::string(s);
  if (o["log"].get(s) == simdjson::SUCCESS) v.log = std::string(s);
  if (o["newWorkerPid"].get(n) == simdjson::SUCCESS) v.new_worker_pid = static_cast<int>(n);
  if (o["requests"].get(n) == simdjson::SUCCESS) v.requests = static_cast<int>(n);
  if (o["configRestored"].get(b) == simdjson::SUCCESS) v.config_restored = b;
  simdjson::dom::object error;
  if (o["error"].get(error) == simdjson::SUCCESS) {
    if (error["code"].get(s) == simdjson::SUCCESS) v.error_code = std::string(s);
    if (error["message"].get(s) == simdjson::SUCCESS) v.error_message = std::string(s);
  } else if (o["error"].get(s) == simdjson::SUCCESS) {
    v.error_message = std::string(s);
  }
  return v;
}

ReloadView ParseReloadResponse(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  if (parser.parse(json).get(o) != simdjson::SUCCESS) return {};
  return ParseReload(o);
}

std::vector<ReloadView> ParseReloads(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::array reloads;
  std::vector<ReloadView> out;
  if (parser.parse(json)["reloads"].get(reloads) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element e : reloads) {
    simdjson::dom::object o;
    if (e.get(o) == simdjson::SUCCESS) out.push_back(ParseReload(o));
  }
  return out;
}

// `{"config":"<config as a JSON string>"}`.
std::string ConfigJson(const std::string& config) {
  return "{\"config\":" + JsonQuote(config) + "}";
}

class ReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_a_ = std::make_unique<Backend>(dir_, "A");
    backend_b_ = std::make_unique<Backend>(dir_, "B");
    ASSERT_TRUE(backend_a_->ok()) << backend_a_->error();
    ASSERT_TRUE(backend_b_->ok()) << backend_b_->error();
    frontend_port_ = FreeTcpPort();
  }
  void StartHaproxy(const std::string& config) {
    haproxy_ = std::make_unique<HaproxyProcess>(dir_, config);
    Result started = haproxy_->Start();
    ASSERT_TRUE(started) << started.error;
  }
  void StartHawk(std::vector<std::string> extra = {}, std::string master_socket = "") {
    std::vector<std::string> args = {"--haproxy-config", haproxy_->config_path(), "--state-dir",
                                     dir_.File("state")};
    for (std::string& arg : extra) args.push_back(std::move(arg));
    if (master_socket.empty()) master_socket = haproxy_->master_socket();
    hawk_ = std::make_unique<HawkProcess>(dir_, master_socket, args);
    ASSERT_TRUE(hawk_->ok()) << hawk_->error();
    ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
    ASSERT_TRUE(WaitUntil([&] { return hawk_->Get("/readyz").status == 200; }, seconds(5)))
        << hawk_->LogTail();
  }
  std::string Frontend() const { return "tcp:127.0.0.1:" + std::to_string(frontend_port_); }
  ProcList ShowProc() {
    std::optional<ProcList> proc = haproxy_->ShowProc(seconds(5));
    return proc.value_or(ProcList{});
  }
  // A desired state moving SRV_1 of be_app to `port` on 127.0.0.1.
  std::string Desired(const std::string& version, int port) {
    return absl::StrCat(R"({"version":")", version,
                        R"(","backends":[{"name":"be_app","servers":[{"name":"SRV_1",)",
                        R"("address":"127.0.0.1","port":)", port, R"(,"state":"READY"}]}]})");
  }

  TempDir dir_;
  std::unique_ptr<Backend> backend_a_;
  std::unique_ptr<Backend> backend_b_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<HawkProcess> hawk_;
  int frontend_port_ = -1;
};

TEST_F(ReloadTest, AGoodConfigSucceedsWithTheNewWorkerPid) {
  std::string original = BasicHaproxyConfig(frontend_port_, backend_a_->port());
  StartHaproxy(original);
  StartHawk();
  int old_worker = haproxy_->CurrentWorkerPid();
  std::string next = BasicHaproxyConfig(frontend_port_, backend_b_->port());

  HttpResult r = hawk_->Post("/v1/reload", ConfigJson(next));
  ASSERT_EQ(r.status, 200) << r.body << hawk_->LogTail();
  ReloadView v = ParseReloadResponse(r.body);
  ASSERT_TRUE(v.ok) << r.body;
  EXPECT_TRUE(v.success);
  EXPECT_EQ(v.result, "SUCCEEDED");
  EXPECT_NE(v.new_worker_pid, old_worker);
  EXPECT_EQ(v.new_worker_pid, haproxy_->CurrentWorkerPid());
  EXPECT_EQ(ReadFile(haproxy_->config_path()), next);
  EXPECT_EQ(ReadFile(haproxy_->config_path() + ".previous"), original);
  // The new worker runs the new configuration.
  HttpResult served = Fetch(Frontend(), "GET", "/");
  EXPECT_EQ(served.body, "B\n");
  EXPECT_EQ(served.Header("x-pid"), std::to_string(v.new_worker_pid));

  // A reload of the current file, no body.
  HttpResult again = hawk_->Post("/v1/reload", "");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_NE(ParseReloadResponse(again.body).new_worker_pid, v.new_worker_pid);
}

// Every file hawk writes from the configuration (the candidate under `haproxy -c`, `.previous`,
// the new file, a restore) keeps the configuration's mode, owner and group: a 0640 haproxy.cfg
// that holds passwords must not become world-readable.
TEST_F(ReloadTest, TheConfigurationKeepsItsModeOwnerAndGroup) {
  std::string original = BasicHaproxyConfig(frontend_port_, backend_a_->port());
  StartHaproxy(original);
  const std::string& path = haproxy_->config_path();
  // Root (CI) gives the file to another owner and group; otherwise our own uid and gid.
  uid_t uid = ::geteuid() == 0 ? 4321 : ::geteuid();
  gid_t gid = ::geteuid() == 0 ? 8765 : ::getegid();
  ASSERT_EQ(::chown(path.c_str(), uid, gid), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  StartHawk();
  auto expect_kept = [&](const std::string& file) {
    struct stat st;
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 07777, 0640u) << file;
    EXPECT_EQ(st.st_uid, uid) << file;
    EXPECT_EQ(st.st_gid, gid) << file;
  };

  std::string next = BasicHaproxyConfig(frontend_port_, backend_b_->port());
  HttpResult r = hawk_->Post("/v1/reload", ConfigJson(next));
  ASSERT_EQ(r.status, 200) << r.body << hawk_->LogTail();
  EXPECT_EQ(ReadFile(path), next);
  expect_kept(path);
  expect_kept(path + ".previous");

  // A configuration HAProxy refuses: hawk restores the previous one, still 0640.
  HttpResult broken =
      hawk_->Post("/v1/reload", ConfigJson(next + "backend be_broken\n    bogus-keyword 1\n"));
  ASSERT_EQ(broken.status, 422) << broken.body;
  EXPECT_EQ(ReadFile(path), next);
  expect_kept(path);
}

TEST_F(ReloadTest, ABrokenConfigIs422AndTheOldWorkerKeepsServing) {
  std::string original = BasicHaproxyConfig(frontend_port_, backend_a_->port());
  StartHaproxy(original);
  StartHawk();
  int old_worker = haproxy_->CurrentWorkerPid();
  ProcList before = ShowProc();
  // A request in flight on the serving worker across the failed reload.
  InFlightRequest slow(frontend_port_, "/slow?ms=1500");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));

  HttpResult r =
      hawk_->Post("/v1/reload", ConfigJson(original + "backend be_broken\n    bogus-keyword 1\n"));
  ASSERT_EQ(r.status, 422) << r.body << hawk_->LogTail();
  ReloadView v = ParseReloadResponse(r.body);
  EXPECT_FALSE(v.success);
  EXPECT_EQ(v.result, "FAILED");
  EXPECT_EQ(v.error_code, "FAILED_PRECONDITION");
  // 2.7+ answers `reload` with Success=0; 2.6 answers nothing and the master's counters tell.
  EXPECT_TRUE(absl::StrContains(
      v.error_message, haproxy_->version().AtLeast(2, 7) ? "Success=0" : "failed-reload count"))
      << v.error_message;
  EXPECT_TRUE(v.config_restored);
  // HAProxy tried and failed; the previous file is back on disk.
  ProcList after = ShowProc();
  EXPECT_EQ(after.master_reloads, before.master_reloads + 1);
  EXPECT_EQ(after.master_failed, 1);
  EXPECT_EQ(ReadFile(haproxy_->config_path()), original);
  EXPECT_EQ(haproxy_->CurrentWorkerPid(), old_worker);
  WorkersView view = hawk_->Workers();
  EXPECT_EQ(view.master_failed, 1) << view.raw;
  ASSERT_EQ(view.PidsWithRole("CURRENT"), std::vector<int>{old_worker}) << view.raw;
  // The old worker still serves: the request in flight and a new one.
  ASSERT_TRUE(slow.Wait(seconds(5)));
  EXPECT_EQ(slow.result().status, 200);
  HttpResult served = Fetch(Frontend(), "GET", "/");
  EXPECT_EQ(served.status, 200);
  EXPECT_EQ(served.Header("x-pid"), std::to_string(old_worker));
}

TEST_F(ReloadTest, WithTheBinaryABrokenConfigIsRejectedBeforeHaproxySeesIt) {
  std::string original = BasicHaproxyConfig(frontend_port_, backend_a_->port());
  StartHaproxy(original);
  StartHawk({"--haproxy-binary", HaproxyProcess::DefaultBinary()});
  ProcList before = ShowProc();
  HttpResult r = hawk_->Post("/v1/reload", ConfigJson("global\n    bogus-keyword 1\n"));
  ASSERT_EQ(r.status, 422) << r.body;
  ReloadView v = ParseReloadResponse(r.body);
  EXPECT_TRUE(absl::StrContains(v.log, "unknown keyword 'bogus-keyword'")) << v.log;
  EXPECT_TRUE(absl::StrContains(v.error_message, "unknown keyword 'bogus-keyword'"))
      << v.error_message;
  // Nothing was written and HAProxy was not asked to reload.
  EXPECT_EQ(ReadFile(haproxy_->config_path()), original);
  EXPECT_EQ(ShowProc().master_reloads, before.master_reloads);
}

TEST_F(ReloadTest, BadRequestsNameTheField) {
  StartHaproxy(BasicHaproxyConfig(frontend_port_, backend_a_->port()));
  StartHawk();
  ProcList before = ShowProc();
  for (const std::string& body : {std::string(R"({"config":5})"), std::string(R"({"config":""})"),
                                  std::string(R"({"conf":"x"})"), std::string("not json")}) {
    HttpResult r = hawk_->Post("/v1/reload", body);
    EXPECT_EQ(r.status, 400) << body << " → " << r.body;
  }
  HttpResult r = hawk_->Post("/v1/reload", R"({"config":5})");
  EXPECT_TRUE(absl::StrContains(r.body, R"("field":"config")")) << r.body;
  EXPECT_EQ(ShowProc().master_reloads, before.master_reloads);
}

TEST_F(ReloadTest, ConcurrentRequestsCoalesceAndAllAreAnswered) {
  StartHaproxy(BasicHaproxyConfig(frontend_port_, backend_a_->port()));
  StartHawk();
  ProcList before = ShowProc();
  constexpr int kRequests = 10;
  std::vector<int> statuses(kRequests, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] { statuses[i] = hawk_->Post("/v1/reload", "").status; });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(statuses[i], 200) << "request " << i;
  int reloads = ShowProc().master_reloads - before.master_reloads;
  EXPECT_GE(reloads, 1);
  EXPECT_LE(reloads, 3);
  int answered = 0;
  for (const ReloadView& record : ParseReloads(hawk_->Get("/v1/reloads").body)) {
    if (record.trigger == "API") answered += record.requests;
  }
  EXPECT_EQ(answered, kRequests);
}

// A PUT that arrives while the master is reloading (on 2.6 it refuses connections for the whole
// re-execution and parse) reaches the new worker and, within `grace`, the leaving one.
TEST_F(ReloadTest, APutDuringAReloadReachesTheNewAndTheLeavingWorker) {
  // Enough servers that parsing the configuration keeps the master busy for a while.
  std::string config = BasicHaproxyConfig(frontend_port_, backend_a_->port(), "    grace 3s\n") +
                       "backend be_bulk\n    server-template bulk 8000 127.0.0.1:9 disabled\n";
  StartHaproxy(config);
  StartHawk();
  ASSERT_EQ(hawk_->Put("/v1/state", Desired("v1", backend_a_->port())).status, 200);
  int old_worker = haproxy_->CurrentWorkerPid();
  // Keeps the old worker alive after the reload.
  InFlightRequest slow(frontend_port_, "/slow?ms=4000");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));

  std::atomic<bool> reload_answered{false};
  HttpResult reload;
  std::thread reloader([&] {
    reload = hawk_->Post("/v1/reload", "");
    reload_answered = true;
  });
  // Wait until the master is busy reloading: it refuses connections while it re-executes.
  bool busy = WaitUntil(
      [&] { return !MasterCli::Run(haproxy_->master_socket(), "show proc", seconds(1)).ok; },
      seconds(5), milliseconds(2));
  bool put_during_reload = !reload_answered;
  HttpResult put = hawk_->Put("/v1/state?timeoutMs=8000", Desired("v2", backend_b_->port()));
  reloader.join();
  ASSERT_TRUE(busy) << "the master never became unreachable: the reload was too quick";
  ASSERT_TRUE(put_during_reload)
      << "the PUT was sent after the reload was answered: nothing was tested";
  ASSERT_EQ(reload.status, 200) << reload.body << hawk_->LogTail();
  ASSERT_EQ(put.status, 200) << put.body;
  int new_worker = ParseReloadResponse(reload.body).new_worker_pid;
  ASSERT_GT(new_worker, 0);
  ASSERT_NE(new_worker, old_worker);

  EXPECT_TRUE(WaitUntil(
      [&] {
        return ReadServerRow(haproxy_->master_socket(), new_worker, "be_app", "SRV_1").port ==
               backend_b_->port();
      },
      seconds(5)))
      << hawk_->LogTail();
  EXPECT_TRUE(WaitUntil(
      [&] {
        return ReadServerRow(haproxy_->master_socket(), old_worker, "be_app", "SRV_1").port ==
               backend_b_->port();
      },
      seconds(3)))
      << "the leaving worker, still within its grace period, missed the PUT\n"
      << hawk_->LogTail();
  EXPECT_TRUE(slow.Wait(seconds(10)));
}

// With --server-state-file the new worker starts from the desired server state: the first
// request it serves already avoids the server the desired state put in maintenance, before hawk
// has had time to reach it.
TEST_F(ReloadTest, TheServerStateFileSeedsTheNewWorkerFromItsFirstRequest) {
  std::string state_file = dir_.File("servers.state");
  std::string config =
      absl::StrCat("global\n    server-state-file ", state_file,
                   "\ndefaults\n    mode http\n    load-server-state-from-file global\n"
                   "    timeout connect 1s\n    timeout client 30s\n    timeout server 30s\n"
                   "frontend fe\n    bind 127.0.0.1:",
                   frontend_port_,
                   "\n    http-after-response set-header X-Pid %pid\n"
                   "    default_backend be_app\n"
                   "backend be_app\n    balance first\n    server SRV_1 127.0.0.1:",
                   backend_a_->port(), "\n    server SRV_2 127.0.0.1:", backend_b_->port(), "\n");
  StartHaproxy(config);
  StartHawk({"--server-state-file", state_file});
  std::string desired =
      absl::StrCat(R"({"version":"v1","backends":[{"name":"be_app","servers":[)",
                   R"({"name":"SRV_1","address":"127.0.0.1","port":)", backend_a_->port(),
                   R"(,"state":"MAINT"},{"name":"SRV_2","address":"127.0.0.1","port":)",
                   backend_b_->port(), R"(,"state":"READY"}]}]})");
  HttpResult put = hawk_->Put("/v1/state", desired);
  ASSERT_EQ(put.status, 200) << put.body;
  ASSERT_EQ(Fetch(Frontend(), "GET", "/").body, "B\n");

  // Requests on fresh connections, back to back, through the reload.
  std::atomic<bool> stop{false};
  std::vector<std::pair<std::string, std::string>> served;  // (X-Pid, body), in order
  std::thread client([&] {
    while (!stop) {
      HttpResult r = Fetch(Frontend(), "GET", "/", "", seconds(2));
      if (r.ok) served.emplace_back(r.Header("x-pid"), r.body);
    }
  });
  HttpResult reload = hawk_->Post("/v1/reload", "");
  int new_worker = ParseReloadResponse(reload.body).new_worker_pid;
  bool reached = WaitUntil(
      [&] {
        std::optional<ProcList> proc = haproxy_->ShowProc(seconds(1));
        return proc && proc->old_workers.empty();
      },
      seconds(5));
  stop = true;
  client.join();
  ASSERT_EQ(reload.status, 200) << reload.body;
  ASSERT_TRUE(reached);
  // The file holds the desired state.
  std::string file = ReadFile(state_file);
  EXPECT_TRUE(absl::StartsWith(file, "1\n# be_id ")) << file;
  EXPECT_EQ(ServerRowFromText(file, "be_app", "SRV_1").admin & 0x01, 1) << file;
  EXPECT_EQ(ServerRowFromText(file, "be_app", "SRV_2").admin & 0x01, 0) << file;
  // The first request the new worker served went to B.
  std::string new_pid = std::to_string(new_worker);
  auto first = std::find_if(served.begin(), served.end(),
                            [&](const auto& response) { return response.first == new_pid; });
  ASSERT_NE(first, served.end()) << "the new worker served nothing";
  EXPECT_EQ(first->second, "B\n") << "the new worker's first request went to SRV_1 (A)";
  for (auto it = first; it != served.end(); ++it) {
    if (it->first == new_pid) {
      EXPECT_EQ(it->second, "B\n");
    }
  }
}

// The slot model of ingress controllers: every slot of a `server-template … disabled` is set at
// runtime. A reload through hawk writes the desired servers into the configuration, so a worker
// born from it holds them from its first request: shown here with a worker born after hawk has
// gone, which nobody seeds.
TEST_F(ReloadTest, AWorkerBornFromTheConfigurationHawkWroteHoldsTheDesiredServers) {
  std::string config = absl::StrCat(
      "global\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 30s\n"
      "    timeout server 30s\nfrontend fe\n    bind 127.0.0.1:",
      frontend_port_,
      "\n    default_backend be_app\nbackend be_app\n    balance roundrobin\n"
      "    server-template s 1-3 127.0.0.1:1 disabled\n");
  StartHaproxy(config);
  StartHawk();
  std::string desired = absl::StrCat(
      R"({"version":"v1","backends":[{"name":"be_app","servers":[)",
      R"({"name":"s1","address":"127.0.0.1","port":)", backend_b_->port(),
      R"(,"weight":5,"state":"READY"},)", R"({"name":"s2","address":"127.0.0.1","port":)",
      backend_b_->port(), R"(,"state":"READY"},)", R"({"name":"s3","address":"127.0.0.1","port":)",
      backend_a_->port(), R"(,"state":"MAINT"}]}]})");
  HttpResult put = hawk_->Put("/v1/state", desired);
  ASSERT_EQ(put.status, 200) << put.body;
  ASSERT_EQ(Fetch(Frontend(), "GET", "/").body, "B\n");
  // The advice: the file does not hold them yet.
  EXPECT_THAT(hawk_->Get("/v1/workers").body, HasSubstr("servers: not written by hawk since it "
                                                        "started into "));

  HttpResult reload = hawk_->Post("/v1/reload", "");
  ASSERT_EQ(reload.status, 200) << reload.body << hawk_->LogTail();
  EXPECT_THAT(hawk_->Get("/v1/workers").body, Not(HasSubstr("servers: ")));
  EXPECT_THAT(ParseReloadResponse(reload.body).log,
              HasSubstr("servers: 3 of 3 managed servers written into the configuration (1 "
                        "server-template expanded)"));
  std::string written = ReadFile(haproxy_->config_path());
  EXPECT_THAT(written, HasSubstr("# hawk --write-servers: expanded server-template s 1-3 "
                                 "127.0.0.1:1 disabled\n"));
  EXPECT_THAT(written, HasSubstr(absl::StrCat("    server s1 127.0.0.1:", backend_b_->port(),
                                              " weight 5\n")));

  // A change after the reload: the file lacks it, and the advice says so.
  std::string weight_6 = desired;
  weight_6.replace(weight_6.find(R"("weight":5)"), 10, R"("weight":6)");
  ASSERT_EQ(hawk_->Put("/v1/state", weight_6).status, 200);
  EXPECT_THAT(hawk_->Get("/v1/workers").body,
              HasSubstr("servers: changed since the last reload through hawk wrote them into "));
  ASSERT_EQ(hawk_->Put("/v1/state", desired).status, 200);

  // hawk gone, HAProxy reloaded from the file: the new worker holds the desired servers.
  hawk_.reset();
  int old_worker = haproxy_->CurrentWorkerPid();
  ASSERT_TRUE(haproxy_->ReloadViaSignal());
  int born = haproxy_->WaitForNewWorker(old_worker, seconds(5));
  ASSERT_GT(born, 0);
  for (const char* slot : {"s1", "s2"}) {
    SCOPED_TRACE(slot);
    ServerRow row = ReadServerRow(haproxy_->master_socket(), born, "be_app", slot);
    EXPECT_EQ(row.address, "127.0.0.1");
    EXPECT_EQ(row.port, backend_b_->port());
    EXPECT_EQ(row.admin, 0);
  }
  EXPECT_EQ(ReadServerRow(haproxy_->master_socket(), born, "be_app", "s1").weight, 5);
  ServerRow s3 = ReadServerRow(haproxy_->master_socket(), born, "be_app", "s3");
  EXPECT_EQ(s3.port, backend_a_->port());
  EXPECT_NE(s3.admin & 0x04, 0) << "s3 is not in configuration maintenance";
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Fetch(Frontend(), "GET", "/").body, "B\n");
}

// A configuration reached through a symbolic link (a mounted ConfigMap) is never replaced to
// write the servers in: the reload goes on with the file as it is, and says so.
TEST_F(ReloadTest, ServersAreNotWrittenThroughASymlinkedConfiguration) {
  std::string config = absl::StrCat(
      "global\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 30s\n"
      "    timeout server 30s\nfrontend fe\n    bind 127.0.0.1:",
      frontend_port_,
      "\n    default_backend be_app\nbackend be_app\n    server-template s 1-2 127.0.0.1:1 "
      "disabled\n");
  StartHaproxy(config);
  // HAProxy reads the file through the link from now on (the master re-executes with its path).
  std::string target = dir_.File("configmap-haproxy.cfg");
  WriteFile(target, config);
  ASSERT_EQ(::unlink(haproxy_->config_path().c_str()), 0);
  ASSERT_EQ(::symlink(target.c_str(), haproxy_->config_path().c_str()), 0);
  StartHawk();
  ASSERT_EQ(hawk_
                ->Put("/v1/state",
                      absl::StrCat(R"({"backends":[{"name":"be_app","servers":[{"name":"s1",)",
                                   R"("address":"127.0.0.1","port":)", backend_b_->port(),
                                   R"(,"state":"READY"}]}]})"))
                .status,
            200);
  HttpResult reload = hawk_->Post("/v1/reload", "");
  ASSERT_EQ(reload.status, 200) << reload.body << hawk_->LogTail();
  EXPECT_THAT(ParseReloadResponse(reload.body).log,
              HasSubstr("is a symbolic link (a mounted ConfigMap's?), which hawk does not replace; "
                        "the file is reloaded as it is"));
  struct stat st;
  ASSERT_EQ(::lstat(haproxy_->config_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(ReadFile(target), config);
  EXPECT_THAT(hawk_->Get("/v1/workers").body,
              HasSubstr("servers: the last reload through hawk could not write the desired "
                        "servers into "));
  // The new worker got them from hawk all the same.
  EXPECT_TRUE(WaitUntil([&] { return Fetch(Frontend(), "GET", "/").body == "B\n"; }, seconds(5)));
}

TEST_F(ReloadTest, AnExternalReloadIsRecordedAndItsWorkerSeeded) {
  StartHaproxy(BasicHaproxyConfig(frontend_port_, backend_a_->port()));
  StartHawk();
  ASSERT_EQ(hawk_->Put("/v1/state", Desired("v1", backend_b_->port())).status, 200);
  int old_worker = haproxy_->CurrentWorkerPid();
  ASSERT_TRUE(haproxy_->ReloadViaSignal());
  int new_worker = haproxy_->WaitForNewWorker(old_worker, seconds(5));
  ASSERT_GT(new_worker, 0);
  std::vector<ReloadView> records;
  ASSERT_TRUE(WaitUntil(
      [&] {
        records = ParseReloads(hawk_->Get("/v1/reloads").body);
        return !records.empty();
      },
      seconds(3)))
      << hawk_->LogTail();
  EXPECT_EQ(records[0].trigger, "EXTERNAL");
  EXPECT_EQ(records[0].result, "SUCCEEDED");
  EXPECT_EQ(records[0].new_worker_pid, new_worker);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return ReadServerRow(haproxy_->master_socket(), new_worker, "be_app", "SRV_1").port ==
               backend_b_->port();
      },
      seconds(2)));
}

// The line of a reload's log that names `table` ("map /x" or "ACL /x"), or "" when none does.
std::string LogLineOf(const std::string& log, const std::string& table) {
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, table + ": ")) return std::string(line);
  }
  return "";
}

// Before a reload hawk writes a map or ACL file only where HAProxy loaded it (the current worker
// lists it so), inside --table-files-dir (here its default, the directory of --haproxy-config),
// outside --state-dir, reached without a symbolic link, and never replacing one. Every table it
// does not write is named in the reload's log with the reason; the files stay as they were.
TEST_F(ReloadTest, AReloadWritesOnlyTableFilesHaproxyLoadedInsideTheDirectory) {
  TempDir other;  // outside the directory
  const std::string hosts = dir_.File("hosts.map");
  const std::string blocked = dir_.File("blocked.acl");
  WriteFile(hosts, "");
  WriteFile(blocked, "");
  // Loaded by HAProxy through a symlinked directory, and through a final symlink.
  ASSERT_EQ(::mkdir(dir_.File("real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(dir_.File("real").c_str(), dir_.File("link").c_str()), 0);
  WriteFile(dir_.File("real/linked.map"), "keep.example.com keep\n");
  WriteFile(dir_.File("real/target.map"), "keep.example.com keep\n");
  ASSERT_EQ(::symlink(dir_.File("real/target.map").c_str(), dir_.File("final.map").c_str()), 0);
  // Loaded by HAProxy inside --state-dir, and outside the directory.
  ASSERT_EQ(::mkdir(dir_.File("state").c_str(), 0700), 0);
  WriteFile(dir_.File("state/inside.acl"), "198.51.100.1\n");
  WriteFile(other.File("outside.acl"), "198.51.100.2\n");
  // Not loaded by HAProxy at all: outside the directory (reached through `..`) and inside it.
  WriteFile(other.File("victim.txt"), "keep\n");
  WriteFile(dir_.File("unlisted.acl"), "keep\n");
  std::string other_name = other.path().substr(other.path().rfind('/') + 1);
  const std::string dotdot_victim = other.path() + "/../" + other_name + "/victim.txt";

  std::string config = absl::StrCat(
      "global\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 30s\n"
      "    timeout server 30s\nfrontend fe\n    bind 127.0.0.1:",
      frontend_port_,
      "\n    http-after-response set-header X-Pid %pid\n"
      "    http-request deny if { src -f ",
      blocked, " }\n    http-request deny if { src -f ", dir_.File("state/inside.acl"),
      " }\n    http-request deny if { src -f ", other.File("outside.acl"),
      " }\n    http-request set-header X-Linked %[req.hdr(host),map(", dir_.File("link/linked.map"),
      ",none)]\n    http-request set-header X-Final %[req.hdr(host),map(", dir_.File("final.map"),
      ",none)]\n    use_backend %[req.hdr(host),lower,map(", hosts,
      ",be_app)]\nbackend be_app\n    server SRV_1 127.0.0.1:", backend_a_->port(),
      "\nbackend be_other\n    server o1 127.0.0.1:", backend_b_->port(), "\n");
  StartHaproxy(config);
  StartHawk();
  auto acl = [](const std::string& name) {
    return absl::StrCat(R"({"name":)", JsonQuote(name), R"(,"patterns":["203.0.113.9"]})");
  };
  auto map = [](const std::string& name) {
    return absl::StrCat(R"({"name":)", JsonQuote(name),
                        R"(,"entries":[{"key":"pwned.example.com","value":"be_other"}]})");
  };
  std::string desired = absl::StrCat(
      R"({"version":"v1","maps":[)", map(hosts), ",", map(dir_.File("link/linked.map")), ",",
      map(dir_.File("final.map")), R"(],"acls":[)", acl(blocked), ",", acl(dotdot_victim), ",",
      acl(dir_.File("unlisted.acl")), ",", acl(dir_.File("state/inside.acl")), ",",
      acl(other.File("outside.acl")), "]}");
  HttpResult put = hawk_->Put("/v1/state", desired);
  ASSERT_EQ(put.status, 200) << put.body;

  HttpResult r = hawk_->Post("/v1/reload", "");
  ASSERT_EQ(r.status, 200) << r.body << hawk_->LogTail();
  ReloadView v = ParseReloadResponse(r.body);
  // Written: the two files HAProxy loaded, in the directory, as they are.
  EXPECT_EQ(ReadFile(hosts), "pwned.example.com be_other\n");
  EXPECT_EQ(ReadFile(blocked), "203.0.113.9\n");
  EXPECT_THAT(v.log, HasSubstr("map and ACL files: 2 written"));
  // Untouched, each named in the log with the reason.
  struct Refused {
    std::string table;  // as the log names it
    std::string file;   // what must not change
    std::string before;
    std::string reason;
  };
  for (const Refused& c : std::vector<Refused>{
           {"ACL " + dotdot_victim, other.File("victim.txt"), "keep\n",
            "did not load it from this file"},
           {"ACL " + dir_.File("unlisted.acl"), dir_.File("unlisted.acl"), "keep\n",
            "did not load it from this file"},
           {"ACL " + dir_.File("state/inside.acl"), dir_.File("state/inside.acl"), "198.51.100.1\n",
            "--state-dir"},
           {"ACL " + other.File("outside.acl"), other.File("outside.acl"), "198.51.100.2\n",
            "outside --table-files-dir"},
           {"map " + dir_.File("link/linked.map"), dir_.File("real/linked.map"),
            "keep.example.com keep\n", "symbolic link"},
           {"map " + dir_.File("final.map"), dir_.File("real/target.map"),
            "keep.example.com keep\n", "symbolic link"},
       }) {
    SCOPED_TRACE(c.table);
    EXPECT_EQ(ReadFile(c.file), c.before);
    std::string line = LogLineOf(v.log, c.table);
    EXPECT_THAT(line, HasSubstr("not written")) << v.log;
    EXPECT_THAT(line, HasSubstr(c.reason)) << v.log;
  }
  EXPECT_TRUE(::access(dir_.File("final.map").c_str(), F_OK) == 0);
  struct stat st {};
  ASSERT_EQ(::lstat(dir_.File("final.map").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

// hawk started against a master socket that does not exist: a reload is answered 503
// UNAVAILABLE with the socket error at once, not after --reload-timeout, and the next one too
// (nothing queues behind a reload that cannot happen).
TEST_F(ReloadTest, WithTheMasterUnreachableAReloadIs503AtOnce) {
  const std::string missing = dir_.File("missing.sock");
  hawk_ = std::make_unique<HawkProcess>(dir_, missing,
                                        std::vector<std::string>{"--reload-timeout", "30s"});
  ASSERT_TRUE(hawk_->ok()) << hawk_->error();
  ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    Clock::time_point start = Clock::now();
    HttpResult r = hawk_->Post("/v1/reload", "", seconds(20));
    ASSERT_EQ(r.status, 503) << r.error << r.body << hawk_->LogTail();
    EXPECT_LT(Clock::now() - start, seconds(10)) << "answered after the reload timeout's wait";
    ReloadView v = ParseReloadResponse(r.body);
    EXPECT_EQ(v.error_code, "UNAVAILABLE") << r.body;
    EXPECT_EQ(v.result, "UNREACHABLE") << r.body;
    EXPECT_THAT(v.error_message, HasSubstr(missing)) << r.body;
    EXPECT_THAT(absl::AsciiStrToLower(v.error_message), HasSubstr("no such file or directory"))
        << r.body;
  }
}

// The master briefly unreachable (here its socket gone for a moment, as while it re-executes
// for a reload): a reload requested meanwhile waits for it and succeeds.
TEST_F(ReloadTest, AReloadWhileTheMasterIsBrieflyUnreachableWaitsForIt) {
  StartHaproxy(BasicHaproxyConfig(frontend_port_, backend_a_->port()));
  auto relay = std::make_unique<UnixRelay>(dir_.File("relay.sock"), haproxy_->master_socket());
  ASSERT_TRUE(relay->Start());
  StartHawk({}, relay->path());
  int old_worker = haproxy_->CurrentWorkerPid();
  relay.reset();  // closes hawk's connections and removes the socket
  ASSERT_TRUE(WaitUntil([&] { return !hawk_->Workers().master_reachable; }, seconds(5)))
      << hawk_->Workers().raw;
  HttpResult reload;
  std::thread post([&] { reload = hawk_->Post("/v1/reload", "", seconds(20)); });
  relay = std::make_unique<UnixRelay>(dir_.File("relay.sock"), haproxy_->master_socket());
  bool restarted = static_cast<bool>(relay->Start());
  post.join();
  ASSERT_TRUE(restarted);
  ASSERT_EQ(reload.status, 200) << reload.error << reload.body << hawk_->LogTail();
  ReloadView v = ParseReloadResponse(reload.body);
  EXPECT_EQ(v.result, "SUCCEEDED");
  EXPECT_NE(v.new_worker_pid, old_worker);
}

}  // namespace
}  // namespace hawk::testing

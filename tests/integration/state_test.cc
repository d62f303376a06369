// Desired state on every worker, against a real HAProxy 2.6 in master-worker mode. HAProxy's
// state is checked through the master CLI from the test itself (tests/support), not via hawk.

#include <dirent.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/master_cli.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// Runs `command` with /bin/sh; its exit status (-1 if it could not run), its output in *output.
int RunShell(const std::string& command, std::string* output) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output->append(buffer, n);
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class StateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_a_ = std::make_unique<Backend>(dir_, "A");
    backend_b_ = std::make_unique<Backend>(dir_, "B");
    ASSERT_TRUE(backend_a_->ok()) << backend_a_->error();
    ASSERT_TRUE(backend_b_->ok()) << backend_b_->error();
    frontend_port_ = FreeTcpPort();
  }
  void StartHaproxy(const std::string& extra_global = "") {
    haproxy_ = std::make_unique<HaproxyProcess>(
        dir_, StateHaproxyConfig(dir_, frontend_port_, backend_a_->port(), extra_global));
    Result started = haproxy_->Start();
    ASSERT_TRUE(started) << started.error;
  }
  void StartHawk() {
    // --haproxy-config: on 2.6 hawk relays to a leaving worker only within its known grace.
    hawk_ = std::make_unique<HawkProcess>(
        dir_, haproxy_->master_socket(),
        std::vector<std::string>{"--state-dir", StateDir(), "--haproxy-config",
                                 haproxy_->config_path()});
    ASSERT_TRUE(hawk_->ok()) << hawk_->error();
    ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
    ASSERT_TRUE(WaitUntil([&] { return hawk_->Get("/readyz").status == 200; }, seconds(5)))
        << hawk_->LogTail();
  }

  std::string Cli(int pid, const std::string& command) {
    return MasterCli::Command(haproxy_->master_socket(),
                              "@!" + std::to_string(pid) + " " + command);
  }
  ServerRow Server(int pid, const std::string& backend, const std::string& server) {
    return ReadServerRow(haproxy_->master_socket(), pid, backend, server);
  }
  // Every file of hawk's state directory, by name, with its bytes.
  std::string StateDirBytes() {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(dir_.File("state").c_str())) {
      while (struct dirent* entry = ::readdir(d)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") names.push_back(name);
      }
      ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (const std::string& name : names) {
      absl::StrAppend(&out, name, "\n", ReadFile(dir_.File("state/" + name)), "\n");
    }
    return out;
  }
  // `show map <file>` as "key value" lines, sorted.
  std::vector<std::string> Map(int pid, const std::string& file) {
    std::vector<std::string> lines;
    for (absl::string_view line : absl::StrSplit(Cli(pid, "show map " + file), '\n')) {
      size_t space = line.find(' ');
      if (!absl::StartsWith(line, "0x") || space == absl::string_view::npos) continue;
      lines.emplace_back(line.substr(space + 1));
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  }
  std::string DesiredJson(const std::string& version, int srv1_port, const std::string& map_value,
                          const std::string& generation = "") {
    return absl::StrCat(
        R"({"version":")", version, "\"", generation.empty() ? "" : ",\"generation\":" + generation,
        R"(,"backends":[{"name":"be_app","servers":[)",
        R"({"name":"SRV_1","address":"127.0.0.1","port":)", srv1_port,
        R"(,"weight":77,"state":"READY"},)",
        R"({"name":"SRV_2","address":"192.0.2.7","port":8080,"state":"MAINT"}]}],)",
        R"("maps":[{"name":")", dir_.File("hosts.map"),
        R"(","entries":[{"key":"a.example.com","value":")", map_value,
        R"("},{"key":"k with spaces; and semicolons","value":"v \\ x"}]}],)",
        R"("acls":[{"name":")", dir_.File("blocked.acl"), R"(","patterns":["192.0.2.0/24"]}]})");
  }

  std::string StateDir() const { return dir_.File("state"); }

  TempDir dir_;
  std::unique_ptr<Backend> backend_a_;
  std::unique_ptr<Backend> backend_b_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<HawkProcess> hawk_;
  int frontend_port_ = -1;
};

// (a)
TEST_F(StateTest, PutReachesTheCurrentWorker) {
  StartHaproxy();
  StartHawk();
  int worker = haproxy_->CurrentWorkerPid();
  HttpResult put = hawk_->Put("/v1/state", DesiredJson("v1", backend_b_->port(), "be_other"));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_NE(put.body.find("\"result\":\"APPLIED\""), std::string::npos) << put.body;

  ServerRow srv1 = Server(worker, "be_app", "SRV_1");
  EXPECT_EQ(srv1.address, "127.0.0.1");
  EXPECT_EQ(srv1.port, backend_b_->port());
  EXPECT_EQ(srv1.weight, 77);
  EXPECT_EQ(srv1.admin & 0x09, 0);
  ServerRow srv2 = Server(worker, "be_app", "SRV_2");
  EXPECT_EQ(srv2.address, "192.0.2.7");
  EXPECT_EQ(srv2.admin & 0x01, 1);
  EXPECT_EQ(
      Map(worker, dir_.File("hosts.map")),
      (std::vector<std::string>{"a.example.com be_other", "k with spaces; and semicolons v \\ x"}));
  EXPECT_NE(Cli(worker, "show acl " + dir_.File("blocked.acl")).find("192.0.2.0/24"),
            std::string::npos);
  // The traffic agrees: SRV_1 now points at backend B.
  HttpResult r = Fetch("tcp:127.0.0.1:" + std::to_string(frontend_port_), "GET", "/");
  EXPECT_EQ(r.body, "B\n");

  WorkersView view = hawk_->Workers();
  ASSERT_EQ(view.workers.size(), 1u) << view.raw;
  EXPECT_EQ(view.workers[0].applied_version, "v1");
  EXPECT_TRUE(view.workers[0].in_sync);
  HttpResult state = hawk_->Get("/v1/state");
  EXPECT_EQ(state.status, 200);
  EXPECT_NE(state.body.find("\"version\":\"v1\""), std::string::npos);
}

// (b)
TEST_F(StateTest, WithinGraceTheLeavingWorkerGetsTheNewAddress) {
  StartHaproxy("    grace 10s\n");
  StartHawk();
  ASSERT_EQ(hawk_->Put("/v1/state", DesiredJson("v1", backend_a_->port(), "be_app")).status, 200);
  int old_worker = haproxy_->CurrentWorkerPid();
  InFlightRequest slow(frontend_port_, "/slow?ms=4000");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));
  ASSERT_TRUE(WaitUntil(
      [&] { return Cli(old_worker, "show info").find("CurrConns: 1") != std::string::npos; },
      seconds(2)));
  ASSERT_TRUE(haproxy_->ReloadViaCli());
  int new_worker = haproxy_->WaitForNewWorker(old_worker);
  ASSERT_GT(new_worker, 0);
  ASSERT_TRUE(
      WaitUntil([&] { return hawk_->Workers().PidsWithRole("LEAVING").size() == 1; }, seconds(2)));

  HttpResult put = hawk_->Put("/v1/state", DesiredJson("v2", backend_b_->port(), "be_app"));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(Server(old_worker, "be_app", "SRV_1").port, backend_b_->port());
  EXPECT_EQ(Server(new_worker, "be_app", "SRV_1").port, backend_b_->port());
  EXPECT_NE(put.body.find(
                absl::StrCat(R"({"pid":)", old_worker, R"(,"role":"LEAVING","result":"APPLIED")")),
            std::string::npos)
      << put.body;
  EXPECT_NE(put.body.find(
                absl::StrCat(R"({"pid":)", new_worker, R"(,"role":"CURRENT","result":"APPLIED")")),
            std::string::npos)
      << put.body;
}

// (c)
TEST_F(StateTest, WithoutGraceTheLeavingWorkerIsFrozenButGetsMaps) {
  StartHaproxy();
  StartHawk();
  ASSERT_EQ(hawk_->Put("/v1/state", DesiredJson("v1", backend_a_->port(), "be_app")).status, 200);
  int old_worker = haproxy_->CurrentWorkerPid();
  InFlightRequest slow(frontend_port_, "/slow?ms=3000");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));
  ASSERT_TRUE(WaitUntil(
      [&] { return Cli(old_worker, "show info").find("CurrConns: 1") != std::string::npos; },
      seconds(2)));
  ASSERT_TRUE(haproxy_->ReloadViaCli());
  ASSERT_GT(haproxy_->WaitForNewWorker(old_worker), 0);
  ASSERT_TRUE(
      WaitUntil([&] { return hawk_->Workers().PidsWithRole("LEAVING").size() == 1; }, seconds(2)));

  if (!haproxy_->version().AtLeast(3, 0)) {
    // HAProxy 2.6 keeps a master CLI slot for good when it relays a command to a worker that is
    // exiting, and a leaving worker without grace exits whenever its last connection closes:
    // hawk sends it nothing more, says why, and a push answers for the current worker alone.
    HttpResult put = hawk_->Put("/v1/state", DesiredJson("v2", backend_b_->port(), "be_other"));
    ASSERT_EQ(put.status, 200) << put.body;
    EXPECT_EQ(put.body.find(absl::StrCat(R"("pid":)", old_worker, ",")), std::string::npos)
        << put.body;
    EXPECT_TRUE(absl::StrContains(put.body, R"("role":"CURRENT","result":"APPLIED")")) << put.body;
    EXPECT_EQ(Server(old_worker, "be_app", "SRV_1").port, backend_a_->port());
    EXPECT_EQ(Map(old_worker, dir_.File("hosts.map"))[0], "a.example.com be_app");
    WorkersView view = hawk_->Workers();
    EXPECT_TRUE(absl::StrContains(view.raw, "\"notRelayed\":\"leaving, without a grace period"))
        << view.raw;
    EXPECT_TRUE(absl::StrContains(hawk_->Get("/metrics").body, "\nhawk_workers_not_relayed 1\n"));
    return;
  }
  HttpResult put = hawk_->Put("/v1/state", DesiredJson("v2", backend_b_->port(), "be_other"));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_NE(put.body.find("Proxy is disabled."), std::string::npos) << put.body;
  EXPECT_NE(put.body.find(
                absl::StrCat(R"({"pid":)", old_worker, R"(,"role":"LEAVING","result":"PARTIAL")")),
            std::string::npos)
      << put.body;
  // HAProxy: the old worker kept SRV_1's old port, but its map changed.
  EXPECT_EQ(Server(old_worker, "be_app", "SRV_1").port, backend_a_->port());
  EXPECT_EQ(Map(old_worker, dir_.File("hosts.map"))[0], "a.example.com be_other");

  WorkersView view;
  ASSERT_TRUE(WaitUntil(
      [&] {
        view = hawk_->Workers();
        const WorkerView* old = view.Find(old_worker);
        return old && old->frozen && old->sessions_on_stale_servers >= 1;
      },
      seconds(3)))
      << view.raw;
  const WorkerView* old = view.Find(old_worker);
  EXPECT_FALSE(old->in_sync);
  EXPECT_NE(std::find(old->stale_objects.begin(), old->stale_objects.end(),
                      "backend/be_app/server/SRV_1"),
            old->stale_objects.end())
      << view.raw;

  // The same, as Prometheus scrapes it; promtool (Debian's prometheus package) accepts it.
  HttpResult scraped = hawk_->Get("/metrics");
  ASSERT_EQ(scraped.status, 200);
  EXPECT_EQ(scraped.Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = scraped.body;
  int new_worker = haproxy_->CurrentWorkerPid();
  std::string leaving = absl::StrCat(R"(pid=")", old_worker, R"(",role="LEAVING")");
  std::string current = absl::StrCat(R"(pid=")", new_worker, R"(",role="CURRENT")");
  for (const std::string& series : {
           absl::StrCat("hawk_worker_frozen{", leaving, "} 1\n"),
           absl::StrCat("hawk_worker_in_sync{", leaving, "} 0\n"),
           absl::StrCat("hawk_worker_stale_objects{", leaving, R"(,kind="server"} 1)", "\n"),
           absl::StrCat("hawk_worker_sessions_on_stale_servers{", leaving, "} 1\n"),
           absl::StrCat("hawk_worker_frozen{", current, "} 0\n"),
           absl::StrCat("hawk_worker_in_sync{", current, "} 1\n"),
           std::string(R"(hawk_reloads_total{trigger="EXTERNAL",result="SUCCEEDED"} 1)"
                       "\n"),
           std::string("hawk_master_cli_reachable 1\n"),
           std::string(R"(hawk_workers{role="LEAVING"} 1)"
                       "\n"),
       }) {
    EXPECT_NE(text.find(series), std::string::npos) << series << " not in:\n" << text;
  }
  EXPECT_NE(text.find(R"(hawk_push_applied_seconds_count{role="CURRENT"} 2)"), std::string::npos)
      << text;
  WriteFile(dir_.File("metrics.txt"), text);
  std::string promtool_output;
  int promtool = RunShell("promtool check metrics < " + dir_.File("metrics.txt"), &promtool_output);
  EXPECT_EQ(promtool, 0) << "promtool check metrics (install Debian's prometheus package): "
                         << promtool_output;
  EXPECT_TRUE(slow.Wait(seconds(10)));
}

// (d)
TEST_F(StateTest, ANewWorkerIsSeededRightAfterItAppears) {
  StartHaproxy();
  StartHawk();
  ASSERT_EQ(hawk_->Put("/v1/state", DesiredJson("v1", backend_b_->port(), "be_other")).status, 200);
  for (int round = 0; round < 3; ++round) {
    int old_worker = haproxy_->CurrentWorkerPid();
    ASSERT_TRUE(haproxy_->ReloadViaCli());
    int new_worker = haproxy_->WaitForNewWorker(old_worker, seconds(5));
    ASSERT_GT(new_worker, 0);
    Clock::time_point appeared = Clock::now();
    bool seeded = WaitUntil(
        [&] {
          return Server(new_worker, "be_app", "SRV_1").port == backend_b_->port() &&
                 !Map(new_worker, dir_.File("hosts.map")).empty();
        },
        seconds(2), milliseconds(1));
    long ms = MsSince(appeared);
    ASSERT_TRUE(seeded) << hawk_->LogTail();
    // Seeded at once, not by the next poll (1 s) or the resync (10 s). What "at once" takes is a
    // figure, measured by bench/reload_seed (a few ms), not asserted here: this machine is shared.
    EXPECT_LE(ms, 500) << "round " << round << ": the new worker was seeded " << ms
                       << " ms after it appeared";
    EXPECT_EQ(Server(new_worker, "be_app", "SRV_1").weight, 77);
  }
}

// (e)
TEST_F(StateTest, InvalidAndHostileInputChangesNothing) {
  StartHaproxy();
  StartHawk();
  std::string good = DesiredJson("v1", backend_a_->port(), "be_app", "5");
  ASSERT_EQ(hawk_->Put("/v1/state", good).status, 200);
  int worker = haproxy_->CurrentWorkerPid();
  // The journal (and any snapshot): every byte of the state directory.
  std::string persisted = StateDirBytes();
  ASSERT_FALSE(persisted.empty());
  std::string state_before = hawk_->Get("/v1/state").body;
  ServerRow srv1_before = Server(worker, "be_app", "SRV_1");
  std::vector<std::string> map_before = Map(worker, dir_.File("hosts.map"));

  struct Case {
    std::string body;
    std::string field;
  };
  std::string map = dir_.File("hosts.map");
  std::vector<Case> cases = {
      {R"({"version":"x","backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"1.2.3.4; shutdown sessions server be_app/SRV_1"}]}]})",
       "backends[0].servers[0].address"},
      {R"({"version":"x","backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"1.2.3.4\nreload"}]}]})",
       "backends[0].servers[0].address"},
      {R"({"version":"x","backends":[{"name":"be_app; reload","servers":[]}]})",
       "backends[0].name"},
      {R"({"version":"x","backends":[{"name":"be_app","servers":[{"name":"@!1 reload","address":"1.2.3.4"}]}]})",
       "backends[0].servers[0].name"},
      {R"({"version":"x","backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"1.2.3.4","port":70000}]}]})",
       "backends[0].servers[0].port"},
      {R"({"version":"x","backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"1.2.3.4","weight":257}]}]})",
       "backends[0].servers[0].weight"},
      {R"({"version":"x","backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"1.2.3.4","state":"UP"}]}]})",
       "backends[0].servers[0].state"},
      {absl::StrCat(R"({"version":"x","maps":[{"name":")", map,
                    R"(","entries":[{"key":"a\nreload","value":"b"}]}]})"),
       "maps[0].entries[0].key"},
      {absl::StrCat(R"({"version":"x","maps":[{"name":")", map,
                    R"(","entries":[{"key":"a","value":"b\u0000c"}]}]})"),
       "maps[0].entries[0].value"},
      {R"({"version":"x","maps":[{"name":"/etc/x.map; reload","entries":[]}]})", "maps[0].name"},
      // A name ending in "<<" sent as `show map <name>` opened 2.6's payload mode and stalled
      // every later batch for that worker.
      {R"({"version":"x","maps":[{"name":"/tmp/x<<","entries":[]}]})", "maps[0].name"},
      {R"({"version":"x","acls":[{"name":"/tmp/x<<EOF","patterns":[]}]})", "acls[0].name"},
      {R"({"version":"x","acls":[{"name":"/etc/x.acl","patterns":["1.2.3.4\r\nreload"]}]})",
       "acls[0].patterns[0]"},
      {R"({"version":"x","bogus":1})", "bogus"},
  };
  for (const Case& c : cases) {
    HttpResult r = hawk_->Put("/v1/state", c.body);
    EXPECT_EQ(r.status, 400) << c.body << " → " << r.body;
    EXPECT_NE(r.body.find("\"code\":\"INVALID_ARGUMENT\""), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("\"field\":\"" + c.field + "\""), std::string::npos)
        << "expected field " << c.field << " in " << r.body;
  }
  HttpResult malformed = hawk_->Put("/v1/state", "{not json");
  EXPECT_EQ(malformed.status, 400);
  // Ordering: an older generation is refused, the same one with the same content accepted.
  HttpResult older = hawk_->Put("/v1/state", DesiredJson("v0", backend_b_->port(), "be_x", "4"));
  EXPECT_EQ(older.status, 409) << older.body;
  EXPECT_NE(older.body.find("ABORTED"), std::string::npos);
  HttpResult other = hawk_->Put("/v1/state", DesiredJson("v1", backend_b_->port(), "be_x", "5"));
  EXPECT_EQ(other.status, 409) << other.body;
  EXPECT_EQ(hawk_->Put("/v1/state", good).status, 200);

  EXPECT_EQ(hawk_->Get("/v1/state").body, state_before);
  EXPECT_EQ(StateDirBytes(), persisted);
  ServerRow srv1_after = Server(worker, "be_app", "SRV_1");
  EXPECT_EQ(srv1_after.address, srv1_before.address);
  EXPECT_EQ(srv1_after.port, srv1_before.port);
  EXPECT_EQ(srv1_after.weight, srv1_before.weight);
  EXPECT_EQ(Map(worker, dir_.File("hosts.map")), map_before);
  EXPECT_EQ(Cli(worker, "show servers state be_app").find("shutdown"), std::string::npos);
}

// Payload markers in values reach the worker as text and never open a payload; a table the
// worker does not have is reported stale, never in sync; the next push is not held up.
TEST_F(StateTest, PayloadMarkersAreTextAndAMissingTableIsNeverInSync) {
  // blocked.acl holds addresses: a string ACL for patterns with "<<".
  std::string acl = dir_.File("paths.acl");
  WriteFile(acl, "");
  std::string config = StateHaproxyConfig(dir_, frontend_port_, backend_a_->port());
  std::string deny = "    http-request deny if { src -f " + dir_.File("blocked.acl") + " }\n";
  ASSERT_NE(config.find(deny), std::string::npos);
  config.insert(config.find(deny), "    http-request deny if { path -f " + acl + " }\n");
  haproxy_ = std::make_unique<HaproxyProcess>(dir_, config);
  Result started = haproxy_->Start();
  ASSERT_TRUE(started) << started.error;
  StartHawk();
  int worker = haproxy_->CurrentWorkerPid();
  std::string map = dir_.File("hosts.map");
  std::string missing = dir_.File("none.map");  // HAProxy loaded no such map
  HttpResult put = hawk_->Put(
      "/v1/state",
      absl::StrCat(R"({"version":"v1","maps":[{"name":")", map,
                   R"(","entries":[{"key":"k1","value":"v<<"},{"key":"<<k2","value":"<<EOF"},)",
                   R"({"key":"k3","value":"a <<"}]},{"name":")", missing,
                   R"(","entries":[]}],"acls":[{"name":")", acl,
                   R"(","patterns":["p<<","<<x"]}]})"));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_NE(put.body.find("\"result\":\"PARTIAL\""), std::string::npos) << put.body;
  EXPECT_NE(put.body.find("worker has no map " + missing), std::string::npos) << put.body;
  EXPECT_EQ(Map(worker, map), (std::vector<std::string>{"<<k2 <<EOF", "k1 v<<", "k3 a <<"}));
  std::string patterns = Cli(worker, "show acl " + acl);
  EXPECT_NE(patterns.find(" p<<\n"), std::string::npos) << patterns;
  EXPECT_NE(patterns.find(" <<x\n"), std::string::npos) << patterns;
  WorkersView view = hawk_->Workers();
  ASSERT_EQ(view.workers.size(), 1u) << view.raw;
  EXPECT_FALSE(view.workers[0].in_sync) << view.raw;
  EXPECT_THAT(view.workers[0].stale_objects, ::testing::Contains("map/" + missing)) << view.raw;

  // Per-entry commands carry the markers too, and nothing is left waiting on the worker.
  HttpResult patch = hawk_->Patch(
      "/v1/state", absl::StrCat(R"({"version":"v2","upsert":{"maps":[{"name":")", map,
                                R"(","entries":[{"key":"k4","value":"w<<"}]}],"acls":[{"name":")",
                                acl, R"(","patterns":["q<<"]}]}})"));
  ASSERT_EQ(patch.status, 200) << patch.body;
  EXPECT_NE(patch.body.find("\"result\":\"PARTIAL\""), std::string::npos) << patch.body;
  EXPECT_EQ(patch.body.find("retrying"), std::string::npos) << patch.body;
  EXPECT_EQ(Map(worker, map),
            (std::vector<std::string>{"<<k2 <<EOF", "k1 v<<", "k3 a <<", "k4 w<<"}));
  EXPECT_NE(Cli(worker, "show acl " + acl).find(" q<<\n"), std::string::npos);
  HttpResult drop =
      hawk_->Patch("/v1/state", absl::StrCat(R"({"version":"v3","remove":{"maps":[{"name":")",
                                             missing, R"(","whole":true}]}})"));
  ASSERT_EQ(drop.status, 200) << drop.body;
  EXPECT_NE(drop.body.find("\"result\":\"APPLIED\""), std::string::npos) << drop.body;
  EXPECT_TRUE(WaitUntil([&] { return hawk_->Workers().workers.at(0).in_sync; }, seconds(5)))
      << hawk_->Workers().raw;
}

// (f)
TEST_F(StateTest, StateSurvivesSigkillAndSeedsTheNextWorker) {
  StartHaproxy();
  StartHawk();
  ASSERT_EQ(hawk_->Put("/v1/state", DesiredJson("v7", backend_b_->port(), "be_other", "7")).status,
            200);
  std::string before = hawk_->Get("/v1/state").body;
  ASSERT_TRUE(hawk_->process()->Signal(SIGKILL));
  ASSERT_TRUE(hawk_->process()->WaitExit(seconds(5)));
  hawk_.reset();

  StartHawk();
  EXPECT_EQ(hawk_->Get("/v1/state").body, before);
  int old_worker = haproxy_->CurrentWorkerPid();
  ASSERT_TRUE(haproxy_->ReloadViaCli());
  int new_worker = haproxy_->WaitForNewWorker(old_worker);
  ASSERT_GT(new_worker, 0);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return Server(new_worker, "be_app", "SRV_1").port == backend_b_->port() &&
               Map(new_worker, dir_.File("hosts.map")).size() == 2;
      },
      seconds(2)))
      << hawk_->LogTail();
  // Even a newer push must not go backwards after the restart.
  EXPECT_EQ(hawk_->Put("/v1/state", DesiredJson("v6", backend_a_->port(), "be_app", "6")).status,
            409);
}

// The state directory on a small tmpfs of its own, unmounted (lazily: hawk may still hold files
// there) whatever the test's outcome.
class StateDirFaultTest : public StateTest {
 protected:
  void SetUp() override {
    StateTest::SetUp();
    ASSERT_EQ(::mkdir(StateDir().c_str(), 0700), 0);
    if (::mount("tmpfs", StateDir().c_str(), "tmpfs", 0, "size=1m,mode=0700") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs for the state directory (needs root): "
                   << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    hawk_.reset();
    if (mounted_) ::umount2(StateDir().c_str(), MNT_DETACH);
  }
  // Writes a file until the file system is full; returns its path.
  std::string Fill() {
    std::string path = StateDir() + "/filler";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0);
    std::string block(4096, 'x');
    for (size_t size : {size_t{4096}, size_t{1}}) {
      while (::write(fd, block.data(), size) == static_cast<ssize_t>(size)) {
      }
    }
    ::close(fd);
    return path;
  }
  // DesiredJson with `extra` more map entries: a record larger than what is left of the journal
  // file's last page.
  std::string LargeDesiredJson(const std::string& version, int srv1_port,
                               const std::string& generation, int extra) {
    std::string entries;
    for (int i = 0; i < extra; ++i) {
      absl::StrAppend(&entries, R"({"key":"extra)", i, R"(.example.com","value":"be_app"},)");
    }
    std::string json = DesiredJson(version, srv1_port, "be_app", generation);
    size_t at = json.find(R"("entries":[)") + std::string(R"("entries":[)").size();
    return json.insert(at, entries);
  }
  bool mounted_ = false;
};

// A full state directory refuses the push (507, naming the cause) and nothing of it is applied:
// the previous state stays in force and on disk, on the worker too when the change had gone out
// before the journal refused it; once there is room, pushes go through again without a restart. (A
// read-only state directory is answered 503 by the same path; a remount cannot show it here: hawk
// holds its journal open for writing, so the kernel refuses to remount the file system read-only.)
TEST_F(StateDirFaultTest, AFullStateDirectoryRefusesThePushAndKeepsThePrevious) {
  StartHaproxy();
  StartHawk();
  int worker = haproxy_->CurrentWorkerPid();
  ASSERT_EQ(hawk_->Put("/v1/state", DesiredJson("v7", backend_b_->port(), "be_other", "7")).status,
            200);
  std::string held = hawk_->Get("/v1/state").body;

  std::string filler = Fill();
  HttpResult full = hawk_->Put("/v1/state", LargeDesiredJson("v8", backend_a_->port(), "8", 5000));
  EXPECT_EQ(full.status, 507) << full.body;
  EXPECT_NE(full.body.find("RESOURCE_EXHAUSTED"), std::string::npos) << full.body;
  EXPECT_NE(full.body.find("No space left on device"), std::string::npos) << full.body;
  std::string patch = R"({"generation":8,"upsert":{"backends":[{"name":"be_app","servers":[)"
                      R"({"name":"SRV_1","port":)" +
                      std::to_string(backend_a_->port()) + R"(}]}],"maps":[{"name":")" +
                      dir_.File("hosts.map") + R"(","entries":[)";
  for (int i = 0; i < 5000; ++i)
    absl::StrAppend(&patch, i ? "," : "", R"({"key":"p)", i, R"(","value":"v"})");
  patch += "]}]}}";
  HttpResult patched = hawk_->Patch("/v1/state", patch);
  EXPECT_EQ(patched.status, 507) << patched.body;
  EXPECT_EQ(hawk_->Get("/v1/state").body, held);
  EXPECT_EQ(Server(worker, "be_app", "SRV_1").port, backend_b_->port());
  EXPECT_EQ(Map(worker, dir_.File("hosts.map")).size(), 2u);

  // A change to a server hawk already manages goes to the worker while the journal syncs. Small
  // records still fit in the journal file's last page; the first that does not is refused, and
  // the worker must hold the last acknowledged weight again by the time the answer comes.
  int acknowledged_weight = 77;
  HttpResult refused;
  for (int weight = 1; weight <= 200; ++weight) {
    refused = hawk_->Patch("/v1/state",
                           R"({"upsert":{"backends":[{"name":"be_app","servers":[{"name":"SRV_1",)"
                           R"("weight":)" +
                               std::to_string(weight) + "}]}]}}");
    if (refused.status != 200) break;
    acknowledged_weight = weight;
  }
  ASSERT_EQ(refused.status, 507) << refused.body;
  EXPECT_NE(refused.body.find("were put back"), std::string::npos) << refused.body;
  EXPECT_EQ(Server(worker, "be_app", "SRV_1").weight, acknowledged_weight) << hawk_->LogTail();

  // Room again: the next push goes through, without a restart of hawk.
  ASSERT_EQ(::unlink(filler.c_str()), 0);
  HttpResult recovered =
      hawk_->Put("/v1/state", LargeDesiredJson("v9", backend_a_->port(), "9", 5000));
  ASSERT_EQ(recovered.status, 200) << recovered.body;
  EXPECT_EQ(Server(worker, "be_app", "SRV_1").port, backend_a_->port());
  std::string after = hawk_->Get("/v1/state").body;
  // And the directory holds exactly that: a hawk restarted from it holds v9.
  ASSERT_TRUE(hawk_->process()->Signal(SIGKILL));
  ASSERT_TRUE(hawk_->process()->WaitExit(seconds(5)));
  StartHawk();
  EXPECT_EQ(hawk_->Get("/v1/state").body, after);
  EXPECT_NE(after.find("\"v9\""), std::string::npos);
}

// Issue 24, defect 2, against the real hawk and HAProxy: a push whose journal record is over the
// limit and a normal push, handled in the same loop iteration (behind a third push that keeps
// hawk busy while their last bytes arrive). Each gets its own answer: the oversized one 413 at
// once, naming its size and the limit, and never applied on the worker; the normal one 200 once
// durable and applied. hawk used to give the oversized push the normal one's 200 (and send it to
// the workers unwritten) and never answer the normal one.
TEST_F(StateTest, AnOversizedPushAndANormalOneEachGetTheirOwnAnswer) {
  StartHaproxy();
  hawk_ = std::make_unique<HawkProcess>(
      dir_, haproxy_->master_socket(),
      std::vector<std::string>{"--state-dir", StateDir(), "--state-max-record-bytes", "8388608"});
  ASSERT_TRUE(hawk_->ok()) << hawk_->error();
  ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
  ASSERT_TRUE(WaitUntil([&] { return ReadyWithACurrentWorker(*hawk_); }, seconds(10)))
      << hawk_->LogTail();
  int worker = haproxy_->CurrentWorkerPid();
  ASSERT_EQ(hawk_->Put("/v1/state", DesiredJson("v1", backend_a_->port(), "be_app", "1")).status,
            200);

  // busy: 20,000 entries of a new map (a few ms of parsing and applying). big: 3,000 values of
  // 4,096 DEL bytes, 12 MiB whatever the encoding (it was 74 MB as a record when DEL was escaped).
  std::string map = dir_.File("hosts.map");
  std::string busy = R"({"version":"busy","upsert":{"maps":[{"name":")" + map + R"(","entries":[)";
  for (int i = 0; i < 20000; ++i) {
    absl::StrAppend(&busy, i ? "," : "", R"({"key":"busy)", i, R"(","value":"v"})");
  }
  busy += "]}]}}";
  std::string big = R"({"version":"big","upsert":{"maps":[{"name":")" + map + R"(","entries":[)";
  for (int i = 0; i < 3000; ++i) {
    absl::StrAppend(&big, i ? "," : "", R"({"key":"big)", i, R"(","value":")",
                    std::string(4096, '\x7f'), R"("})");
  }
  big += "]}]}}";
  std::string small = R"({"version":"small","upsert":{"maps":[{"name":")" + map +
                      R"(","entries":[{"key":"a.example.com","value":"small"}]}]}})";
  auto request = [](const std::string& body) {
    return absl::StrCat("PATCH /v1/state?timeoutMs=5000 HTTP/1.1\r\nHost: hawk\r\n",
                        "Content-Type: application/json\r\nContent-Length: ", body.size(),
                        "\r\n\r\n", body);
  };
  std::vector<std::string> requests = {request(busy), request(big), request(small)};
  std::vector<std::unique_ptr<HttpConnection>> connections;
  for (size_t i = 0; i < requests.size(); ++i) {
    std::string error;
    connections.push_back(HttpConnection::Connect(hawk_->api_address(), seconds(5), &error));
    ASSERT_NE(connections.back(), nullptr) << error;
  }
  // Everything but each request's last byte, read by hawk (nothing left in the sockets), then
  // the three last bytes back to back: big's and small's arrive while hawk handles busy, and are
  // read in the same loop iteration, big first.
  auto deadline = Clock::now() + seconds(10);
  std::string error;
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(WriteAll(connections[i]->fd(), requests[i].substr(0, requests[i].size() - 1),
                         deadline, &error))
        << error;
  }
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const auto& connection : connections) {
          int unread = 0;
          if (::ioctl(connection->fd(), SIOCOUTQ, &unread) != 0 || unread != 0) return false;
        }
        return true;
      },
      seconds(10), milliseconds(1)));
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(WriteAll(connections[i]->fd(), requests[i].substr(requests[i].size() - 1), deadline,
                         &error))
        << error;
  }
  HttpResult busy_answer = connections[0]->ReadResponse(seconds(10));
  HttpResult big_answer = connections[1]->ReadResponse(seconds(10));
  HttpResult small_answer = connections[2]->ReadResponse(seconds(10));

  EXPECT_EQ(busy_answer.status, 200) << busy_answer.error << busy_answer.body;
  // Each answer carries its own push's version, not the state's when it was answered.
  EXPECT_NE(busy_answer.body.find(R"("version":"busy")"), std::string::npos) << busy_answer.body;
  EXPECT_EQ(big_answer.status, 413) << big_answer.error << big_answer.body;
  EXPECT_NE(big_answer.body.find("RESOURCE_EXHAUSTED"), std::string::npos) << big_answer.body;
  EXPECT_NE(big_answer.body.find("more than the limit of 8388608 bytes"), std::string::npos)
      << big_answer.body;
  EXPECT_EQ(small_answer.status, 200) << small_answer.error << small_answer.body;
  EXPECT_NE(small_answer.body.find(R"("result":"APPLIED")"), std::string::npos)
      << small_answer.body;
  EXPECT_NE(small_answer.body.find(R"("version":"small")"), std::string::npos) << small_answer.body;

  // On the worker: busy's and small's entries, none of big's.
  std::vector<std::string> entries = Map(worker, map);
  EXPECT_EQ(entries.size(), 2u + 20000u) << hawk_->LogTail();
  EXPECT_NE(std::find(entries.begin(), entries.end(), "a.example.com small"), entries.end());
  EXPECT_EQ(std::count_if(entries.begin(), entries.end(),
                          [](const std::string& e) { return absl::StartsWith(e, "big"); }),
            0);
  HttpResult state = hawk_->Get("/v1/state");
  EXPECT_EQ(state.body.find("\"big0\""), std::string::npos);
  EXPECT_NE(state.body.find(R"("value":"small")"), std::string::npos);
}

TEST_F(StateTest, WatchStreamsReportChangesAndHeartbeats) {
  StartHaproxy();
  StartHawk();
  std::string error;
  auto watch = HttpConnection::Connect(hawk_->api_address(), seconds(2), &error);
  ASSERT_NE(watch, nullptr) << error;
  HttpRequest request;
  request.target = "/v1/watch?heartbeatMs=200";
  ASSERT_TRUE(watch->SendRequest(request, seconds(2)));
  HttpResult head = watch->ReadResponseHead(seconds(2));
  ASSERT_EQ(head.status, 200);
  EXPECT_EQ(head.Header("content-type"), "application/x-ndjson");
  std::string received;
  auto read_until = [&](const std::string& needle) {
    return WaitUntil(
        [&] {
          std::optional<std::string> chunk = watch->ReadChunk(milliseconds(50));
          if (chunk) received += *chunk;
          return received.find(needle) != std::string::npos;
        },
        seconds(5), milliseconds(0));
  };
  EXPECT_TRUE(read_until("{\"report\":")) << received;
  ASSERT_EQ(hawk_->Put("/v1/state", DesiredJson("w1", backend_b_->port(), "be_other")).status, 200);
  EXPECT_TRUE(read_until("\"appliedVersion\":\"w1\"")) << received;
  EXPECT_TRUE(read_until("{\"heartbeat\":\"")) << received;
  for (absl::string_view line : absl::StrSplit(received, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(absl::StartsWith(line, "{\"report\":") || absl::StartsWith(line, "{\"heartbeat\":"))
        << line;
  }
}

}  // namespace
}  // namespace hawk::testing

// The operator's views of a running hawk: /metrics read by Debian's own Prometheus server (it
// scrapes hawk's probe listener through a reload; the series come back through Prometheus' HTTP
// query API), and `hawk status` showing a current and a frozen leaving worker.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/base/build_info.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/master_cli.h"
#include "tests/support/subprocess.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(MetricsTest, PrometheusScrapesHawkThroughAReload) {
  TempDir dir;
  Backend backend(dir, "A");
  ASSERT_TRUE(backend.ok()) << backend.error();
  HaproxyProcess haproxy(dir, StateHaproxyConfig(dir, FreeTcpPort(), backend.port(), ""));
  Result started = haproxy.Start();
  ASSERT_TRUE(started) << started.error;
  HawkProcess hawk(dir, haproxy.master_socket());
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  std::string target = hawk.probe_address().substr(std::string("tcp:").size());

  WriteFile(dir.File("prometheus.yml"),
            absl::StrCat("global:\n  scrape_interval: 1s\n"
                         "scrape_configs:\n  - job_name: hawk\n    scrape_interval: 1s\n"
                         "    static_configs:\n      - targets: ['",
                         target, "']\n"));
  int prometheus_port = FreeTcpPort();
  std::string error;
  SubprocessOptions options;
  options.argv = {"prometheus", "--config.file=" + dir.File("prometheus.yml"),
                  "--storage.tsdb.path=" + dir.File("tsdb"),
                  "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port),
                  "--log.level=warn"};
  options.stdout_path = dir.File("prometheus.log");
  options.stderr_path = dir.File("prometheus.log");
  std::unique_ptr<Subprocess> prometheus = Subprocess::Spawn(options, &error);
  ASSERT_NE(prometheus, nullptr) << "prometheus (Debian's prometheus package): " << error;
  std::string prometheus_address = "tcp:127.0.0.1:" + std::to_string(prometheus_port);
  // The value Prometheus holds for `query`, as its JSON answer shows it ("" until it has one).
  auto query = [&](const std::string& expression) {
    HttpResult r =
        Fetch(prometheus_address, "GET", "/api/v1/query?query=" + expression, "", seconds(2));
    return r.ok && r.status == 200 && r.body.find("\"result\":[{") != std::string::npos ? r.body
                                                                                        : "";
  };

  int old_worker = haproxy.CurrentWorkerPid();
  ASSERT_TRUE(WaitUntil([&] { return !query("hawk_master_cli_reachable").empty(); }, seconds(30),
                        milliseconds(200)))
      << ReadFile(dir.File("prometheus.log"));
  EXPECT_NE(query("hawk_master_cli_reachable").find("\"1\"]"), std::string::npos);
  // The version and commit `hawk --version` prints.
  std::string build = query("hawk_build_info");
  EXPECT_NE(build.find(absl::StrCat("\"commit\":\"", base::BuildCommit(), "\"")), std::string::npos)
      << build;
  EXPECT_NE(build.find(absl::StrCat("\"version\":\"", base::BuildVersion(), "\"")),
            std::string::npos)
      << build;

  ASSERT_TRUE(haproxy.ReloadViaCli());
  ASSERT_GT(haproxy.WaitForNewWorker(old_worker), 0);
  // The reload is counted, and Prometheus reads it back on a later scrape.
  std::string reloads;
  EXPECT_TRUE(WaitUntil(
      [&] {
        reloads =
            query("hawk_reloads_total%7Btrigger%3D%22EXTERNAL%22%2Cresult%3D%22SUCCEEDED%22%7D");
        return reloads.find("\"1\"]") != std::string::npos;
      },
      seconds(30), milliseconds(200)))
      << reloads << ReadFile(dir.File("prometheus.log"));
  // The scrape target is healthy.
  HttpResult targets = Fetch(prometheus_address, "GET", "/api/v1/targets", "", seconds(2));
  EXPECT_NE(targets.body.find("\"health\":\"up\""), std::string::npos) << targets.body;
  prometheus->Stop();
}

TEST(StatusTest, ShowsTheCurrentAndAFrozenLeavingWorkerWithWhatIsStale) {
  TempDir dir;
  Backend a(dir, "A");
  Backend b(dir, "B");
  ASSERT_TRUE(a.ok() && b.ok());
  int frontend_port = FreeTcpPort();
  HaproxyProcess haproxy(dir, StateHaproxyConfig(dir, frontend_port, a.port(), ""));
  Result started = haproxy.Start();
  ASSERT_TRUE(started) << started.error;
  HawkProcess hawk(dir, haproxy.master_socket());
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  auto state = [&](const std::string& version, int port) {
    return absl::StrCat(R"({"version":")", version,
                        R"(","backends":[{"name":"be_app","servers":[{"name":"SRV_1",)",
                        R"("address":"127.0.0.1","port":)", port, "}]}]}");
  };
  ASSERT_EQ(hawk.Put("/v1/state", state("v1", a.port())).status, 200);
  int old_worker = haproxy.CurrentWorkerPid();
  InFlightRequest slow(frontend_port, "/slow?ms=3000");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return MasterCli::Command(haproxy.master_socket(),
                                  "@!" + std::to_string(old_worker) + " show info")
                   .find("CurrConns: 1") != std::string::npos;
      },
      seconds(2)));
  ASSERT_TRUE(haproxy.ReloadViaCli());
  int new_worker = haproxy.WaitForNewWorker(old_worker);
  ASSERT_GT(new_worker, 0);
  ASSERT_TRUE(
      WaitUntil([&] { return hawk.Workers().PidsWithRole("LEAVING").size() == 1; }, seconds(2)));
  ASSERT_EQ(hawk.Put("/v1/state", state("v2", b.port())).status, 200);

  RunResult run;
  ASSERT_TRUE(WaitUntil(
      [&] {
        run = RunHawk(dir, {"status", hawk.api_address()});
        return run.output.find("Proxy is disabled.") != std::string::npos;
      },
      seconds(5)))
      << run.output;
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.find("\x1b["), std::string::npos) << "colours outside a terminal";
  for (const std::string& expected : {
           absl::StrCat("master ", haproxy.master_pid()),
           std::string("PID"),
           absl::StrCat(new_worker, "  CURRENT"),
           absl::StrCat(old_worker, "  LEAVING"),
           absl::StrCat("worker ", old_worker, " (LEAVING)"),
           std::string("stale   backend/be_app/server/SRV_1"),
           absl::StrCat("refused `set server be_app/SRV_1 addr 127.0.0.1 port ", b.port()),
       }) {
    EXPECT_NE(run.output.find(expected), std::string::npos) << "\"" << expected << "\" not in:\n"
                                                            << run.output;
  }
  RunResult json = RunHawk(dir, {"status", "--json", hawk.api_address()});
  EXPECT_EQ(json.exit_code, 0);
  EXPECT_NE(json.output.find("\"workers\":["), std::string::npos) << json.output;

  RunResult unreachable = RunHawk(dir, {"status", dir.File("nothing.sock")});
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_EQ(unreachable.output,
            "hawk status: hawk is not reachable at unix:" + dir.File("nothing.sock") +
                ": connect: No such file or directory\n");
  EXPECT_TRUE(slow.Wait(seconds(10)));
}

}  // namespace
}  // namespace hawk::testing

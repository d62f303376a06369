// hawk's /metrics read by Debian's own Prometheus server: it scrapes hawk's probe listener
// through a reload, and the series come back through Prometheus' HTTP query API.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
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

}  // namespace
}  // namespace hawk::testing

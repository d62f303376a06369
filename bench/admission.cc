// Admission under hostile clients: how long a controller's authenticated request and a probe's
// /healthz take while 256 slowloris clients hold (and, when dropped, reopen) connections to the
// token listener and 256 more to the probe listener. Each request opens its own connection, as
// kubelet's probes do. The real hawk binary, no HAProxy (hawk answers without a master).
//
//   build/default/bench/admission [rounds]

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/stats.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/trickle_clients.h"
#include "tests/support/wait_until.h"

namespace hawk::bench {
namespace {

using hawk::testing::HttpConnection;
using hawk::testing::HttpRequest;
using hawk::testing::HttpResult;

// Latencies in ms of `rounds` requests, each on a new connection; a request that is not answered
// `status` counts as failed.
std::vector<double> Measure(const std::string& address, const HttpRequest& request, int status,
                            int rounds, int* failed) {
  std::vector<double> latencies;
  for (int i = 0; i < rounds; ++i) {
    auto start = std::chrono::steady_clock::now();
    std::string error;
    std::unique_ptr<HttpConnection> connection =
        HttpConnection::Connect(address, std::chrono::seconds(5), &error);
    HttpResult result;
    if (connection != nullptr) result = connection->RoundTrip(request, std::chrono::seconds(5));
    if (!result.ok || result.status != status) {
      ++*failed;
      if (*failed == 1) {
        std::printf("  failed: %s\n", result.ok
                                          ? absl::StrCat(result.status, " ", result.body).c_str()
                                          : result.error.c_str());
      }
    } else {
      latencies.push_back(Ms(std::chrono::steady_clock::now() - start));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return latencies;
}

void Report(const char* what, const std::vector<double>& latencies, int failed) {
  if (latencies.empty()) {
    std::printf("%-52s all %d failed\n", what, failed);
    return;
  }
  PrintDistribution(what, latencies);
  if (failed > 0) std::printf("%-52s %d not answered\n", "", failed);
}

int Run(int rounds) {
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  hawk::testing::TempDir dir;
  if (!hawk::testing::WriteFile(dir.File("token"), "bench-token-0a1b")) return 1;
  std::string api = absl::StrCat("tcp:127.0.0.1:", hawk::testing::FreeTcpPort());
  hawk::testing::HawkProcess hawk(dir, dir.File("master.sock"),
                                  {"--listen", api, "--token-file", dir.File("token")});
  if (!hawk.ok() || !hawk.WaitServing()) {
    std::fprintf(stderr, "hawk did not start: %s\n%s\n", hawk.error().c_str(),
                 hawk.LogTail().c_str());
    return 1;
  }
  HttpRequest controller = HttpRequest::Get("/v1/workers");
  controller.AddHeader("Authorization", "Bearer bench-token-0a1b");
  controller.AddHeader("Connection", "close");
  HttpRequest probe = HttpRequest::Get("/healthz");
  probe.AddHeader("Connection", "close");

  std::printf("%d requests each, one connection per request\n", rounds);
  auto measure = [&](const char* what, const std::string& address, const HttpRequest& request) {
    int failed = 0;  // Measure() counts into it: read once it returns
    std::vector<double> latencies = Measure(address, request, 200, rounds, &failed);
    Report(what, latencies, failed);
  };
  measure("controller GET /v1/workers (token), idle hawk", api, controller);
  measure("probe GET /healthz, idle hawk", hawk.probe_address(), probe);

  hawk::testing::Tricklers on_api(api, 256, std::chrono::milliseconds(100));
  hawk::testing::Tricklers on_probe(hawk.probe_address(), 256, std::chrono::milliseconds(100));
  hawk::testing::WaitUntil(
      [&] {
        return on_api.open() + on_api.closed_by_server() >= 256 &&
               on_probe.open() + on_probe.closed_by_server() >= 256;
      },
      std::chrono::seconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  measure("controller, 256 trickling clients on each listener", api, controller);
  measure("probe /healthz, 256 trickling clients on each", hawk.probe_address(), probe);
  std::printf(
      "hostile connections closed by hawk: %llu on the API, %llu on the probes; %d and %d "
      "open at the end\n",
      static_cast<unsigned long long>(on_api.closed_by_server()),
      static_cast<unsigned long long>(on_probe.closed_by_server()), on_api.open(), on_probe.open());
  return 0;
}

}  // namespace
}  // namespace hawk::bench

int main(int argc, char** argv) {
  if (std::getenv("HAWK_BINARY") == nullptr) ::setenv("HAWK_BINARY", HAWK_DEFAULT_BINARY, 1);
  int rounds = argc > 1 ? std::atoi(argv[1]) : 50;
  return hawk::bench::Run(rounds > 0 ? rounds : 50);
}

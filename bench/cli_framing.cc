// Which master-CLI framing is fast: hawk's persistent prompt-mode connection with a pipelined
// batch, the same connection with one command in flight, and the robust default of one
// connection per command (connect, write, half-close, read to EOF; EOF frames the reply on every
// version) as the baseline. Real HAProxy 2.6, the same worker, `@!<pid> get weight
// be_app/SRV_1` (read-only) and `set weight` (a mutation).
//
//   build/default/bench/cli_framing [commands]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "agent/cli/client.h"
#include "agent/cli/wire.h"
#include "agent/uv/loop.h"
#include "bench/stats.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/master_cli.h"

using hawk::bench::Median;
using hawk::bench::Ms;
using Clock = std::chrono::steady_clock;

namespace {

// Runs `batches` through one MasterClient, each batch of `batch_size` commands, one batch in
// flight at a time. Returns elapsed ms, or -1 on any error.
double RunClient(const std::string& socket, const hawk::cli::Command& command, int total,
                 int batch_size) {
  hawk::uv::Loop loop;
  double elapsed = -1;
  {
    hawk::cli::MasterClientOptions options;
    options.address = hawk::base::Address{hawk::base::Address::Kind::kUnix, socket, "", 0};
    hawk::cli::MasterClient client(loop.get(), options);
    client.Start();
    int sent = 0;
    bool failed = false;
    Clock::time_point start;
    std::function<void()> next = [&] {
      if (sent >= total || failed) {
        elapsed = failed ? -1 : Ms(Clock::now() - start);
        return;
      }
      std::vector<hawk::cli::Command> batch;
      for (int i = 0; i < batch_size && sent < total; ++i, ++sent) {
        batch.push_back(command);
      }
      client.Submit(std::move(batch), [&](std::vector<hawk::cli::CommandResult> results) {
        for (const auto& r : results) failed |= !r.ok();
        next();
      });
    };
    hawk::base::Subscription reachable = client.AddReachableListener([&] {
      start = Clock::now();
      next();
    });
    // The client's connection keeps the loop alive until the runs are done.
    while (elapsed == -1 && !failed) uv_run(loop.get(), UV_RUN_ONCE);
  }
  (void)loop.RunDryAndClose();
  return elapsed;
}

double RunOnePerConnection(const std::string& socket, const std::string& command, int total) {
  Clock::time_point start = Clock::now();
  for (int i = 0; i < total; ++i) {
    hawk::testing::CliReply reply = hawk::testing::MasterCli::Run(socket, command);
    if (!reply.ok) return -1;
  }
  return Ms(Clock::now() - start);
}

}  // namespace

int main(int argc, char** argv) {
  int total = argc > 1 ? std::atoi(argv[1]) : 2000;
  hawk::testing::TempDir dir;
  hawk::testing::Backend backend(dir, "app");
  int port = hawk::testing::FreeTcpPort();
  hawk::testing::HaproxyProcess haproxy(dir,
                                        hawk::testing::BasicHaproxyConfig(port, backend.port()));
  if (auto r = haproxy.Start(); !r) {
    std::fprintf(stderr, "haproxy: %s\n", r.error.c_str());
    return 1;
  }
  int pid = haproxy.CurrentWorkerPid();
  std::printf("HAProxy 2.6, %d commands per run, median of 5 runs, ms (ratio to baseline)\n",
              total);
  for (const char* verb : {"get weight be_app/SRV_1", "set weight be_app/SRV_1 7"}) {
    hawk::cli::Command command = hawk::cli::Command::ForWorker(pid, verb);
    std::vector<double> baseline, one, batched;
    for (int run = 0; run < 5; ++run) {
      baseline.push_back(
          RunOnePerConnection(haproxy.master_socket(), hawk::cli::MasterLine(command), total));
      one.push_back(RunClient(haproxy.master_socket(), command, total, 1));
      batched.push_back(RunClient(haproxy.master_socket(), command, total, 100));
    }
    double b = Median(baseline);
    std::printf("`%s`\n", verb);
    std::printf("  one connection per command (baseline)   %8.1f  (1.00)\n", b);
    std::printf("  prompt mode, one command in flight      %8.1f  (%.2f)\n", Median(one),
                Median(one) / b);
    std::printf("  prompt mode, batches of 100 pipelined   %8.1f  (%.2f)\n", Median(batched),
                Median(batched) / b);
  }
  return 0;
}

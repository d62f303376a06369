// Bulk (issue 12): 10,000 `set server be_app/SRV_i addr … port …` to a worker, against a real
// HAProxy per version given, every row in one run:
//   raw: pipelined on the worker's own stats socket in prompt mode (the physical limit);
//   raw: pipelined through the master, `@!<pid>` per command;
//   raw: through the master, `@@!<pid> c1; c2; …` lines of at most 15,000 bytes, one line in
//        flight (3.2+; the master has no `@@` before);
//   hawk: a whole-state PUT in which all 10,000 servers moved, request sent → answered with every
//        live worker APPLIED: through the master only, and with --worker-socket; with one worker,
//        then with a leaving worker in grace beside the current one (a slow request holds it).
// Each row is the median of --rounds runs (addresses alternate between two sets, so every command
// changes something). Prints markdown tables, ratios against the raw rows of the same run.
//
//   build/default/bench/bulk [--haproxy LABEL[=PATH][,…]] [--manifest FILE] [--rounds N]
//
// --haproxy: labels of scripts/haproxy-versions.sh's manifest, or LABEL=PATH; default 2.6,3.4.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_haproxy.h"
#include "bench/stats.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/http_client.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/wait_until.h"

namespace {

using hawk::bench::Haproxy;
using hawk::bench::Median;
using hawk::bench::Ms;
using hawk::bench::PromptCli;
using hawk::testing::Backend;
using hawk::testing::HaproxyProcess;
using hawk::testing::HawkProcess;
using hawk::testing::HttpResult;
using hawk::testing::InFlightRequest;
using hawk::testing::TempDir;
using hawk::testing::WaitUntil;
using hawk::testing::WorkersView;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kServers = 10000;
constexpr size_t kMaxLineBytes = 15000;  // what hawk allows a `@@` line, and the master takes

// Server i (1-based) in address set `set` (0 or 1).
std::string Address(int i, int set) {
  return "127." + std::to_string(2 + set) + "." + std::to_string(i / 250) + "." +
         std::to_string(i % 250 + 1);
}
int Port(int i) { return 8000 + i % 100; }
std::string SetServer(int i, int set) {
  return "set server be_app/SRV_" + std::to_string(i) + " addr " + Address(i, set) + " port " +
         std::to_string(Port(i));
}

std::string StateDocument(int set, int generation) {
  std::string json = R"({"version":"b)" + std::to_string(generation) + R"(","generation":)" +
                     std::to_string(generation) + R"(,"backends":[{"name":"be_app","servers":[)";
  for (int i = 1; i <= kServers; ++i) {
    json += (i > 1 ? "," : "") + std::string(R"({"name":"SRV_)") + std::to_string(i) +
            R"(","address":")" + Address(i, set) + R"(","port":)" + std::to_string(Port(i)) + "}";
  }
  return json + "]}]}";
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct Row {
  std::string path;
  int workers = 1;
  std::vector<double> ms;
};

class BulkRun {
 public:
  BulkRun(Haproxy haproxy, int rounds)
      : version_(std::move(haproxy)), rounds_(rounds), backend_(dir_, "app") {}

  bool Run() {
    if (!backend_.ok()) return Fail("backend: " + backend_.error());
    frontend_port_ = hawk::testing::FreeTcpPort();
    haproxy_ = std::make_unique<HaproxyProcess>(dir_, Config(), version_.binary);
    if (auto r = haproxy_->Start(seconds(30)); !r) return Fail("haproxy: " + r.error);
    worker_ = haproxy_->CurrentWorkerPid(seconds(10));
    if (worker_ <= 0) return Fail("no worker");
    whole_lines_ = haproxy_->version().AtLeast(3, 2);

    if (!RawWorkerSocket() || !RawMaster() || (whole_lines_ && !RawWholeLines())) return false;
    // hawk through the master, then with --worker-socket, one worker each.
    if (!HawkRows(false, 1) || !HawkRows(true, 1)) return false;
    // A leaving worker in grace beside the current one.
    slow_ = std::make_unique<InFlightRequest>(frontend_port_, "/slow?ms=600000", seconds(700));
    if (!slow_->WaitSent(seconds(5))) return Fail("the slow request was not sent");
    if (auto r = haproxy_->ReloadViaCli(); !r) return Fail("reload: " + r.error);
    if (haproxy_->WaitForNewWorker(worker_, seconds(30)) <= 0) return Fail("no new worker");
    return HawkRows(false, 2) && HawkRows(true, 2);
  }

  void Print() const {
    std::printf("### HAProxy %s\n\n`%s`\n\n", version_.label.c_str(),
                version_.version_line.c_str());
    std::printf(
        "10,000 `set server be_app/SRV_i addr … port …` to a worker (%d rounds per row, median; "
        "ms). Ratios against the raw rows of this run.\n\n",
        rounds_);
    std::printf("| path | workers | median ms | min | max | × raw stats socket | × raw `@!` |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (const Row& row : rows_) {
      double median = Median(row.ms);
      auto [min, max] = std::minmax_element(row.ms.begin(), row.ms.end());
      std::printf("| %s | %d | %.0f | %.0f | %.0f | %.2f | %.2f |\n", row.path.c_str(), row.workers,
                  median, *min, *max, median / raw_socket_ms_, median / raw_master_ms_);
    }
    std::printf("\n");
  }

  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& message) {
    error_ = message;
    return false;
  }

  std::string Config() const {
    std::string backend = "127.0.0.1:" + std::to_string(backend_.port());
    return "global\n"
           "    grace 600s\n"
           "    stats socket " +
           dir_.File("worker.sock") +
           " level admin\n"
           "defaults\n"
           "    mode http\n"
           "    timeout connect 1s\n"
           "    timeout client 700s\n"
           "    timeout server 700s\n"
           "frontend fe\n"
           "    bind 127.0.0.1:" +
           std::to_string(frontend_port_) +
           "\n"
           "    default_backend be_slow\n"
           "backend be_slow\n"
           "    server s1 " +
           backend +
           "\n"
           "backend be_app\n"
           "    server-template SRV_ " +
           std::to_string(kServers) + " " + backend + "\n";
  }

  // Times `rounds_` runs of `one(set)`; `one` returns "" or an error.
  bool Rounds(std::string path, int workers, const std::function<std::string(int set)>& one) {
    Row row{std::move(path), workers, {}};
    for (int r = 0; r < rounds_; ++r) {
      Clock::time_point start = Clock::now();
      std::string error = one(next_set_);
      double ms = Ms(Clock::now() - start);
      next_set_ = 1 - next_set_;
      if (!error.empty()) return Fail(row.path + ": " + error);
      row.ms.push_back(ms);
    }
    rows_.push_back(std::move(row));
    return true;
  }

  bool RawWorkerSocket() {
    PromptCli cli;
    std::string error;
    if (!cli.Open(dir_.File("worker.sock"), &error, /*worker=*/true)) return Fail(error);
    bool ok = Rounds("raw: the worker's stats socket, pipelined", 1, [&](int set) {
      std::string lines, reply, e;
      for (int i = 1; i <= kServers; ++i) lines += SetServer(i, set) + "\n";
      if (!cli.Send(lines, kServers, &reply, &e, seconds(120))) return e;
      return Count(reply, "IP changed from") == kServers ? std::string() : "unexpected replies";
    });
    if (ok) raw_socket_ms_ = Median(rows_.back().ms);
    return ok;
  }

  bool RawMaster() {
    PromptCli cli;
    std::string error;
    if (!cli.Open(haproxy_->master_socket(), &error)) return Fail(error);
    std::string prefix = "@!" + std::to_string(worker_) + " ";
    bool ok = Rounds("raw: the master, `@!<pid>` per command, pipelined", 1, [&](int set) {
      std::string lines, reply, e;
      for (int i = 1; i <= kServers; ++i) lines += prefix + SetServer(i, set) + "\n";
      if (!cli.Send(lines, kServers, &reply, &e, seconds(120))) return e;
      return Count(reply, "IP changed from") == kServers ? std::string() : "unexpected replies";
    });
    if (ok) raw_master_ms_ = Median(rows_.back().ms);
    return ok;
  }

  bool RawWholeLines() {
    PromptCli cli;
    std::string error;
    if (!cli.Open(haproxy_->master_socket(), &error)) return Fail(error);
    std::string prefix = "@@!" + std::to_string(worker_) + " ";
    return Rounds("raw: the master, `@@!<pid>` lines, one in flight", 1, [&](int set) {
      std::string line = prefix, reply, e;
      int changed = 0;
      auto flush = [&] {
        if (!cli.Send(line + "\n", 1, &reply, &e, seconds(30))) return false;
        changed += Count(reply, "IP changed from");
        line = prefix;
        return true;
      };
      for (int i = 1; i <= kServers; ++i) {
        std::string command = SetServer(i, set);
        if (line.size() + command.size() + 2 > kMaxLineBytes && !flush()) return e;
        line += (line.size() > prefix.size() ? "; " : "") + command;
      }
      if (!flush()) return e;
      return changed == kServers ? std::string() : "unexpected replies";
    });
  }

  bool HawkRows(bool worker_socket, size_t workers) {
    TempDir hawk_dir;
    std::vector<std::string> args = {"--log-level", "warn", "--resync-interval", "3600s"};
    if (worker_socket) {
      args.push_back("--worker-socket");
      args.push_back("unix:" + dir_.File("worker.sock"));
    }
    HawkProcess hawk(hawk_dir, haproxy_->master_socket(), args);
    if (!hawk.WaitServing(seconds(10)) ||
        !WaitUntil([&] { return hawk.Get("/readyz").status == 200; }, seconds(10))) {
      return Fail("hawk did not become ready:\n" + hawk.LogTail());
    }
    auto push = [&](int set) -> std::string {
      HttpResult r = hawk::testing::Fetch(hawk.api_address(), "PUT", "/v1/state?timeoutMs=60000",
                                          StateDocument(set, ++generation_), seconds(90));
      if (!r.ok || r.status != 200) return r.ok ? std::to_string(r.status) + " " + r.body : r.error;
      int applied = Count(r.body, "\"result\":\"APPLIED\"");
      if (static_cast<size_t>(applied) != workers) {
        return "answered with " + std::to_string(applied) + " of " + std::to_string(workers) +
               " workers APPLIED: " + r.body.substr(0, 400);
      }
      return "";
    };
    // The first push gives hawk its state (and every worker all of it): not measured.
    if (std::string e = push(next_set_); !e.empty()) return Fail("load: " + e);
    next_set_ = 1 - next_set_;
    if (!WaitUntil(
            [&] {
              WorkersView view = hawk.Workers();
              size_t synced = 0;
              for (const auto& w : view.workers) synced += w.in_sync ? 1 : 0;
              return view.ok && view.workers.size() == workers && synced == workers;
            },
            seconds(60))) {
      return Fail("workers not in sync: " + hawk.Workers().raw);
    }
    std::string path =
        std::string("hawk: PUT → APPLIED, ") +
        (worker_socket ? "--worker-socket (leaving workers: the master)" : "the master only") +
        (whole_lines_ ? ", `@@` lines" : ", `@!` per command");
    return Rounds(path, static_cast<int>(workers), push);
  }

  Haproxy version_;
  int rounds_;
  TempDir dir_;
  Backend backend_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<InFlightRequest> slow_;
  int frontend_port_ = -1;
  int worker_ = 0;
  bool whole_lines_ = false;
  int next_set_ = 0;
  int generation_ = 0;
  double raw_socket_ms_ = 1;
  double raw_master_ms_ = 1;
  std::vector<Row> rows_;
  std::string error_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string spec = "2.6,3.4";
  std::string manifest = HAWK_DEFAULT_HAPROXY_MANIFEST;
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--haproxy") {
      spec = value();
    } else if (arg == "--manifest") {
      manifest = value();
    } else if (arg == "--rounds") {
      rounds = std::max(1, std::atoi(value().c_str()));
    } else {
      std::fprintf(stderr, "unknown argument %s (see the header of bench/bulk.cc)\n", arg.c_str());
      return 2;
    }
  }
  std::vector<Haproxy> versions;
  if (!hawk::bench::ParseHaproxy(spec, manifest, &versions)) return 2;
  if (std::getenv("HAWK_BINARY") == nullptr) ::setenv("HAWK_BINARY", HAWK_DEFAULT_BINARY, 1);
  if (std::getenv("HAWK_TEST_BACKEND") == nullptr) {
    ::setenv("HAWK_TEST_BACKEND", HAWK_DEFAULT_TEST_BACKEND, 1);
  }
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + hawk::bench::ShellWord(argv[i]);
  std::printf("```\n%s   # hawk %s\n```\n\n", command.c_str(), std::getenv("HAWK_BINARY"));
  int status = 0;
  for (Haproxy& h : versions) {
    h.version_line = h.binary + ": " + hawk::bench::VersionLine(h.binary);
    BulkRun run(h, rounds);
    bool ok = run.Run();
    run.Print();
    if (!ok) {
      std::printf("**%s: the run stopped early**: %s\n\n", h.label.c_str(), run.error().c_str());
      status = 1;
    }
    std::fflush(stdout);
  }
  return status;
}

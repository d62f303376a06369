// A new worker born holding the desired maps: how soon after a reload it holds 100,000 map
// entries of desired state, with the map file hawk writes before the reload (--write-map-files,
// the default) and without it (--write-map-files=false: the file holds what the configuration
// shipped, an empty map, and the seed replaces the whole map over the CLI). Both in one run, on
// each HAProxy version given.
//
// Per version: HAProxy in master-worker mode with one backend and a map (StateHaproxyConfig),
// hawk, a PUT of 1 server + N map entries; then, for each mode (hawk restarted with the flag,
// its state loaded from --state-dir), R rounds of a PATCH of one map entry then POST
// /v1/reload, each timed from the reply (the new worker serves: on 3.1+ that is when it is
// ready, on 2.6 when it is listed) until hawk's report shows the new worker inSync, polled every
// 2 ms; with the files, R more rounds without the PATCH (the file is then not written again).
//
//   build/default/bench/born_seeded [--haproxy LABEL[=PATH][,…]] [--manifest FILE]
//                                   [--rounds R] [--entries N]
// --haproxy: labels of the manifest (scripts/haproxy-versions.sh writes it); default 2.6,3.4.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_haproxy.h"
#include "bench/stats.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/wait_until.h"

using hawk::bench::Haproxy;
using hawk::bench::Median;
using hawk::bench::Ms;
using hawk::testing::Backend;
using hawk::testing::FreeTcpPort;
using hawk::testing::HaproxyProcess;
using hawk::testing::HawkProcess;
using hawk::testing::HttpResult;
using hawk::testing::StateHaproxyConfig;
using hawk::testing::TempDir;
using hawk::testing::WaitUntil;
using hawk::testing::WorkersView;
using hawk::testing::WorkerView;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

struct ModeResult {
  std::vector<double> reload_ms;  // POST sent → answered
  std::vector<double> seed_ms;    // answered → the new worker inSync
  std::vector<double> write_ms;   // hawk's reload log: the map file written in … ms
  std::string error;
};

class BornSeededRun {
 public:
  BornSeededRun(const Haproxy& haproxy, int rounds, int entries)
      : haproxy_(haproxy), rounds_(rounds), entries_(entries) {}

  bool Run() {
    backend_ = std::make_unique<Backend>(dir_, "A");
    if (!backend_->ok()) return Fail(backend_->error());
    haproxy_process_ = std::make_unique<HaproxyProcess>(
        dir_, StateHaproxyConfig(dir_, FreeTcpPort(), backend_->port(), ""), haproxy_.binary);
    if (auto started = haproxy_process_->Start(); !started) return Fail(started.error);
    for (bool write_files : {false, true}) {
      ModeResult& result = write_files ? with_files_ : without_files_;
      if (!StartHawk(write_files)) return false;
      if (!put_done_) {
        std::string state = State();
        HttpResult put = hawk_->Put("/v1/state?timeoutMs=60000", state);
        if (put.status != 200) return Fail("PUT: " + put.body + put.error);
        put_done_ = true;
      }
      for (int round = 0; round < rounds_; ++round) {
        if (!Round(&result, /*change_one_entry=*/true)) return false;
      }
      if (write_files) {
        for (int round = 0; round < rounds_; ++round) {
          if (!Round(&with_unchanged_files_, /*change_one_entry=*/false)) return false;
        }
      }
    }
    return true;
  }

  void Print() const {
    std::printf("### %s, %d map entries, %d rounds per mode\n\n", haproxy_.version_line.c_str(),
                entries_, rounds_);
    std::printf(
        "| mode | POST → answered, median | of which hawk wrote the map file | answered → new "
        "worker inSync, median | min | max |\n|---|---|---|---|---|---|\n");
    auto row = [](const char* mode, const ModeResult& r) {
      if (r.seed_ms.empty()) return;
      std::string write = r.write_ms.empty() ? "-" : absl::StrCat(Median(r.write_ms), " ms");
      std::printf("| %s | %.1f ms | %s | **%.1f ms** | %.1f ms | %.1f ms |\n", mode,
                  Median(r.reload_ms), write.c_str(), Median(r.seed_ms),
                  *std::min_element(r.seed_ms.begin(), r.seed_ms.end()),
                  *std::max_element(r.seed_ms.begin(), r.seed_ms.end()));
    };
    row("without the map file (`--write-map-files=false`): the seed replaces the map",
        without_files_);
    row("with the map file hawk writes before the reload", with_files_);
    row("with the map file, nothing changed since the last reload (not written again)",
        with_unchanged_files_);
    if (!without_files_.seed_ms.empty() && !with_files_.seed_ms.empty()) {
      std::printf("\nratio with/without (medians): %.3f\n",
                  Median(with_files_.seed_ms) / Median(without_files_.seed_ms));
    }
    std::printf("\n");
  }

  const std::string& error() const { return error_; }

 private:
  bool Fail(std::string error) {
    error_ = std::move(error);
    return false;
  }

  std::string State() const {
    std::string json = absl::StrCat(
        R"({"version":"v1","generation":1,"backends":[{"name":"be_app","servers":[{"name":"SRV_1",)",
        R"("address":"127.0.0.1","port":)", backend_->port(), R"(,"weight":10}]}],)",
        R"("maps":[{"name":")", dir_.File("hosts.map"), R"(","entries":[)");
    for (int i = 0; i < entries_; ++i) {
      absl::StrAppend(&json, i ? "," : "", R"({"key":"host)", i, R"(.example.com","value":"be_)",
                      i % 7, R"("})");
    }
    absl::StrAppend(&json, "]}]}");
    return json;
  }

  bool StartHawk(bool write_files) {
    hawk_.reset();  // SIGTERM and wait: one hawk per master at a time
    hawk_ = std::make_unique<HawkProcess>(
        dir_, haproxy_process_->master_socket(),
        std::vector<std::string>{
            "--log-level", "warn", "--state-dir", dir_.File("state"), "--poll-interval", "60s",
            "--resync-interval", "3600s", "--table-files-dir", dir_.path(),
            absl::StrCat("--write-map-files=", write_files ? "true" : "false")});
    if (!hawk_->ok()) return Fail(hawk_->error());
    if (!hawk_->WaitServing()) return Fail("hawk did not serve: " + hawk_->LogTail());
    // A restarted hawk loads the state and observes the worker: wait until it holds it.
    int current = haproxy_process_->CurrentWorkerPid();
    if (put_done_ && !InSync(current, seconds(120))) {
      return Fail("the restarted hawk did not bring the worker in sync: " + hawk_->Workers().raw);
    }
    return true;
  }

  bool InSync(int pid, milliseconds timeout) {
    return WaitUntil(
        [&] {
          WorkersView view = hawk_->Workers();
          const WorkerView* w = view.Find(pid);
          return w != nullptr && w->in_sync && w->applied_version == "v1";
        },
        timeout, milliseconds(2));
  }

  // One reload; with `change_one_entry`, a PATCH of one map entry before it (a controller's
  // usual change between reloads; the file is then written again).
  bool Round(ModeResult* result, bool change_one_entry) {
    if (change_one_entry) {
      ++generation_;
      HttpResult patched = hawk_->Patch(
          "/v1/state",
          absl::StrCat(R"({"generation":)", generation_, R"(,"upsert":{"maps":[{"name":")",
                       dir_.File("hosts.map"), R"(","entries":[{"key":"host1.example.com",)",
                       R"("value":"be_round)", generation_, R"("}]}]}})"));
      if (patched.status != 200) return Fail("PATCH: " + patched.body + patched.error);
    }
    int old_worker = haproxy_process_->CurrentWorkerPid();
    Clock::time_point sent = Clock::now();
    HttpResult reload = hawk_->Post("/v1/reload", "");
    Clock::time_point answered = Clock::now();
    if (reload.status != 200) return Fail("POST /v1/reload: " + reload.body + reload.error);
    const std::string key = "\"newWorkerPid\":";
    size_t at = reload.body.find(key);
    int fresh = 0;
    if (at == std::string::npos ||
        !absl::SimpleAtoi(reload.body.substr(at + key.size(),
                                             reload.body.find_first_of(",}", at) - at - key.size()),
                          &fresh) ||
        fresh == old_worker) {
      return Fail("no new worker in the reload reply: " + reload.body);
    }
    if (!InSync(fresh, seconds(120))) {
      return Fail("the new worker was not in sync within 120 s: " + hawk_->Workers().raw);
    }
    // "… entries) in N ms; the new worker reads them", when hawk wrote the files.
    const std::string written = " entries) in ";
    if (size_t w = reload.body.find(written); w != std::string::npos) {
      double ms = 0;
      size_t from = w + written.size();
      if (absl::SimpleAtod(reload.body.substr(from, reload.body.find(' ', from) - from), &ms)) {
        result->write_ms.push_back(ms);
      }
    }
    result->reload_ms.push_back(Ms(answered - sent));
    result->seed_ms.push_back(Ms(Clock::now() - answered));
    // The leaving worker holds no connection and exits on its own; wait for it so that each
    // round starts from one worker.
    WaitUntil([&] { return hawk_->Workers().workers.size() == 1; }, seconds(30), milliseconds(5));
    return true;
  }

  Haproxy haproxy_;
  int rounds_;
  int entries_;
  TempDir dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<HaproxyProcess> haproxy_process_;
  std::unique_ptr<HawkProcess> hawk_;
  bool put_done_ = false;
  ModeResult without_files_;
  ModeResult with_files_;
  ModeResult with_unchanged_files_;
  int64_t generation_ = 1;
  std::string error_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string spec = "2.6,3.4";
  std::string manifest = HAWK_DEFAULT_HAPROXY_MANIFEST;
  int rounds = 5;
  int entries = 100000;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--haproxy") {
      spec = value();
    } else if (arg == "--manifest") {
      manifest = value();
    } else if (arg == "--rounds") {
      rounds = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--entries") {
      entries = std::max(1, std::atoi(value().c_str()));
    } else {
      std::fprintf(stderr, "unknown argument %s (see the header of bench/born_seeded.cc)\n",
                   arg.c_str());
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
    BornSeededRun run(h, rounds, entries);
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

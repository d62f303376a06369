#pragma once

// The child processes of the e2e scenarios (scenario.h, born_with.h): an origin
// (hawk_e2e_backend) and the load (hawk_load_client), each in the scenario's temp dir, stopped by
// pid when their owner goes.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace hawk::e2e {

// An hawk_e2e_backend process: the origin a server of a scenario points at.
struct Origin {
  std::unique_ptr<hawk::testing::Subprocess> process;  // null if it did not start
  int port = -1;
};
// Starts `binary` on a free port of 127.0.0.1 and waits until it listens; `lame_duck_ms` is its
// --lame-duck-ms. On failure `process` is null and `*error` says why.
Origin StartOrigin(const hawk::testing::TempDir& dir, const std::string& binary,
                   const std::string& name, int lame_duck_ms, std::string* error);

// One summary line of hawk_load_client.
struct LoadSummary {
  bool ok = false;  // the line parsed
  int64_t requests = 0, failures = 0, retries = 0;
  std::map<std::string, int64_t> failures_by_kind;  // "status_503", "connect_refused", …
  double rps = 0, p99_ms = 0;
};
LoadSummary ParseLoadSummary(const std::string& line);

struct LoadOptions {
  std::string binary;            // hawk_load_client
  int port = -1;                 // on 127.0.0.1
  int connections = 16;          // keep-alive load clients
  int one_shot_connections = 0;  // load clients with a new connection per request
  int prober_interval_ms = 200;  // 0: no prober
};

// hawk_load_client as a child process; its summaries are read from its stdout file, its events
// (failures and retries, JSON lines) from <dir>/load.events. One per temp dir. The destructor
// stops it (Subprocess's).
class LoadProcess {
 public:
  // Starts the load and waits until it takes SIGUSR1 (Snapshot's signal).
  bool Start(const hawk::testing::TempDir& dir, const LoadOptions& options, std::string* error);

  // The summary of the run so far (SIGUSR1, then the new line on stdout).
  LoadSummary Snapshot();
  // Stops the load; its final summary.
  LoadSummary Finish();

  // Failures logged since the last call whose X-Pid is neither 0 nor `current_pid` (0: every
  // failure with a pid); the first kMaxFailureEvents failure lines of any worker go to `*events`
  // (when not null).
  static constexpr size_t kMaxFailureEvents = 5;
  int64_t FailuresNotOn(int current_pid, std::vector<std::string>* events);
  // When each failure logged so far happened (t_ms, CLOCK_MONOTONIC ms), in order.
  std::vector<double> FailureTimesMs() const;

 private:
  std::unique_ptr<hawk::testing::Subprocess> process_;
  std::string stdout_path_, events_path_;
  size_t events_offset_ = 0;
};

// A steady_clock time in ms on CLOCK_MONOTONIC, the clock of the load client's t_ms (libstdc++'s
// steady_clock reads CLOCK_MONOTONIC).
int64_t MonotonicMs(std::chrono::steady_clock::time_point t);

// The value of the environment variable `variable` if set and not empty, else `fallback`.
std::string ProgramFromEnv(const char* variable, const std::string& fallback);

// "newWorkerPid" of a POST /v1/reload answer; 0 if absent.
int NewWorkerPid(const std::string& reload_body);
// "log" of a POST /v1/reload answer; "" if absent.
std::string ReloadLog(const std::string& reload_body);

}  // namespace hawk::e2e

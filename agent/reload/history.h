#pragma once

// The record of reloads: what one reload's record holds, the recent ones (newest first) and the
// counters of every reload since hawk started, whoever triggered it. No I/O, no clock.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/metrics/exposition.h"
#include "agent/reload/external_reload.h"

namespace hawk::reload {

enum class ReloadTrigger {
  kApi,       // POST /v1/reload
  kExternal,  // SIGUSR2, another tool on the master CLI, …
};
const char* ReloadTriggerName(ReloadTrigger trigger);  // "API", "EXTERNAL"

enum class ReloadResult {
  kSucceeded,    // a new worker serves
  kFailed,       // the configuration was rejected (by `haproxy -c` or by HAProxy): old worker kept
  kTimedOut,     // no verdict within reload_timeout
  kUnreachable,  // the master CLI could not be reached, or the reload could not be sent
};
const char* ReloadResultName(ReloadResult result);  // "SUCCEEDED", "FAILED", …

struct ReloadRecord {
  uint64_t id = 0;
  ReloadTrigger trigger = ReloadTrigger::kApi;
  ReloadResult result = ReloadResult::kFailed;
  absl::Time started_at = absl::InfinitePast();
  absl::Duration duration;  // start of the round (or detection) to the verdict
  int new_worker_pid = 0;
  int requests = 0;              // API requests this reload answered
  std::string log;               // HAProxy's startup log or `haproxy -c` output, when given
  std::string error;             // why it did not succeed
  bool config_written = false;   // a new configuration was written for it
  bool config_restored = false;  // … and the previous one was put back after the failure
};

// Every reload recorded since hawk started (the history keeps only the last few), for metrics.
struct ReloadCounters {
  // By trigger and result, indexed by their enum values.
  uint64_t reloads[2][4] = {};
  metrics::Histogram duration_seconds{metrics::LatencyBucketsSeconds()};
};

// What a record keeps of a round's log: its end, when it is long.
std::string LogExcerpt(absl::string_view log);

// The record of a reload hawk did not start, decided (external_reload.h).
ReloadRecord ExternalRecord(uint64_t id, const ExternalReload& external);

class ReloadHistory {
 public:
  explicit ReloadHistory(size_t size) : size_(size) {}

  // Counts `record` and keeps it among the recent ones.
  void Add(ReloadRecord record);

  // The recent reloads, newest first.
  std::vector<ReloadRecord> Recent() const {
    return std::vector<ReloadRecord>(recent_.begin(), recent_.end());
  }
  // Every reload since hawk started.
  const ReloadCounters& counters() const { return counters_; }

 private:
  size_t size_;
  std::deque<ReloadRecord> recent_;
  ReloadCounters counters_;
};

}  // namespace hawk::reload

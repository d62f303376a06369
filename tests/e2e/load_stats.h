#pragma once

// Counters and latency histogram of hawk_load_client, and their one-line JSON summary. Pure: no
// I/O, no clock (durations come in as parameters), so it tests without sockets.

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace hawk::e2e {

// Log-linear histogram of microsecond values: exact below 128 µs, then 64 buckets per power of
// two (at most 1/64 relative error), fixed size, so millions of samples cost no memory.
class LatencyHistogram {
 public:
  void Record(uint64_t micros);
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  // The value at quantile `q` in [0, 1] (the middle of its bucket, capped at max()); 0 if empty.
  uint64_t Quantile(double q) const;

 private:
  static constexpr int kSubBits = 6;                  // 64 sub-buckets per power of two
  static constexpr uint64_t kExact = 2u << kSubBits;  // values below are their own bucket
  static constexpr size_t kBuckets = kExact + (64 - kSubBits - 1) * (1u << kSubBits);

  static size_t Index(uint64_t micros);
  static uint64_t Middle(size_t index);

  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t max_ = 0;
};

struct LoadStats {
  uint64_t requests = 0;  // completed responses, 2xx or not
  uint64_t ok = 0;        // 2xx responses
  uint64_t failures = 0;  // non-2xx responses and transport errors (prober's included)
  std::map<std::string, uint64_t> failures_by_kind;  // "status_503", "eof", "reset", …
  uint64_t retries = 0;     // requests resent once after a reused connection closed unanswered
  uint64_t abandoned = 0;   // requests in flight when the run stopped
  uint64_t reconnects = 0;  // connections opened beyond each client's first one
  std::map<int64_t, uint64_t> by_pid;  // responses by X-Pid (0: no header)
  uint64_t prober_requests = 0;
  uint64_t prober_failures = 0;
  LatencyHistogram latency;  // send → complete response, µs, completed responses only

  void RecordResponse(bool prober, int status, int64_t pid, uint64_t latency_micros);
  void RecordFailure(bool prober, const std::string& kind);
};

// `{"requests":…,"ok":…,…}` without a trailing newline; keys in a fixed order, maps sorted.
// The four transport kinds (connect_refused, reset, eof, timeout) are always present.
std::string FormatSummary(const LoadStats& stats, double duration_ms);

}  // namespace hawk::e2e

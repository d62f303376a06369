#include "tests/e2e/load_stats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

#include "tests/support/json_quote.h"

namespace hawk::e2e {

size_t LatencyHistogram::Index(uint64_t micros) {
  if (micros < kExact) return static_cast<size_t>(micros);
  int msb = std::bit_width(micros) - 1;  // >= kSubBits + 1
  int shift = msb - kSubBits;
  uint64_t sub = micros >> shift;  // in [64, 128)
  return kExact + static_cast<size_t>(shift - 1) * (1u << kSubBits) +
         static_cast<size_t>(sub - (1u << kSubBits));
}

uint64_t LatencyHistogram::Middle(size_t index) {
  if (index < kExact) return index;
  size_t k = index - kExact;
  int shift = static_cast<int>(k >> kSubBits) + 1;
  uint64_t sub = (k & ((1u << kSubBits) - 1)) + (1u << kSubBits);
  return (sub << shift) + (uint64_t{1} << (shift - 1));
}

void LatencyHistogram::Record(uint64_t micros) {
  ++buckets_[Index(micros)];
  ++count_;
  max_ = std::max(max_, micros);
}

uint64_t LatencyHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::max<uint64_t>(rank, 1);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::min(Middle(i), max_);
  }
  return max_;
}

void LoadStats::RecordResponse(bool prober, int status, int64_t pid, uint64_t latency_micros) {
  ++requests;
  if (status >= 200 && status < 300) ++ok;
  if (prober) ++prober_requests;
  ++by_pid[pid];
  latency.Record(latency_micros);
}

void LoadStats::RecordFailure(bool prober, const std::string& kind) {
  ++failures;
  ++failures_by_kind[kind];
  if (prober) ++prober_failures;
}

namespace {

std::string Number(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f", value);
  return text;
}

std::string Millis(uint64_t micros) { return Number(static_cast<double>(micros) / 1000.0); }

}  // namespace

std::string FormatSummary(const LoadStats& stats, double duration_ms) {
  std::map<std::string, uint64_t> kinds = stats.failures_by_kind;
  for (const char* kind : {"connect_refused", "reset", "eof", "timeout"}) kinds.emplace(kind, 0);

  std::string out = "{\"requests\":" + std::to_string(stats.requests);
  out += ",\"ok\":" + std::to_string(stats.ok);
  out += ",\"failures\":" + std::to_string(stats.failures);
  out += ",\"failures_by_kind\":{";
  bool first = true;
  for (const auto& [kind, count] : kinds) {
    if (!first) out += ',';
    first = false;
    out += hawk::testing::JsonQuote(kind) + ":" + std::to_string(count);
  }
  out += "},\"retries\":" + std::to_string(stats.retries);
  out += ",\"abandoned\":" + std::to_string(stats.abandoned);
  out += ",\"reconnects\":" + std::to_string(stats.reconnects);
  out += ",\"duration_ms\":" + std::to_string(static_cast<uint64_t>(std::max(0.0, duration_ms)));
  double seconds = duration_ms / 1000.0;
  out += ",\"rps\":" + Number(seconds > 0 ? static_cast<double>(stats.requests) / seconds : 0.0);
  const LatencyHistogram& latency = stats.latency;
  out += ",\"latency_ms\":{\"p50\":" + Millis(latency.Quantile(0.50));
  out += ",\"p90\":" + Millis(latency.Quantile(0.90));
  out += ",\"p99\":" + Millis(latency.Quantile(0.99));
  out += ",\"max\":" + Millis(latency.max()) + "}";
  out += ",\"by_pid\":{";
  first = true;
  for (const auto& [pid, count] : stats.by_pid) {
    if (!first) out += ',';
    first = false;
    out += "\"" + std::to_string(pid) + "\":" + std::to_string(count);
  }
  out += "},\"prober\":{\"requests\":" + std::to_string(stats.prober_requests);
  out += ",\"failures\":" + std::to_string(stats.prober_failures) + "}}";
  return out;
}

}  // namespace hawk::e2e

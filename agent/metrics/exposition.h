#pragma once

// Pure: metric families and their Prometheus text exposition (format 0.0.4). No I/O, no clock:
// the API's /metrics handler collects the families from hawk's components and formats them.
//
// Output is deterministic: families sorted by name, samples by their labels. Label values are
// escaped as the format requires (backslash, double quote, newline), HELP text likewise
// (backslash, newline). Names are constants in hawk's code; the tests check them against the
// format's grammar.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace hawk::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Cumulative-on-output histogram with fixed upper bounds (seconds, bytes, …), O(buckets) to
// observe and no allocation after construction.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);

  const std::vector<double>& upper_bounds() const { return upper_bounds_; }
  // Per bucket, not cumulative; one more than upper_bounds() (the +Inf bucket).
  const std::vector<uint64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> upper_bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Bounds for latencies from 0.5 ms to 30 s.
std::vector<double> LatencyBucketsSeconds();

enum class MetricType { kCounter, kGauge, kHistogram };

struct Family {
  std::string name;  // counters end in _total
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<std::pair<Labels, double>> samples;               // counters and gauges
  std::vector<std::pair<Labels, const Histogram*>> histograms;  // kHistogram; not owned

  Family(std::string family_name, std::string help_text, MetricType family_type)
      : name(std::move(family_name)), help(std::move(help_text)), type(family_type) {}
  Family& Add(Labels labels, double value) {
    samples.emplace_back(std::move(labels), value);
    return *this;
  }
  Family& Add(Labels labels, const Histogram* histogram) {
    histograms.emplace_back(std::move(labels), histogram);
    return *this;
  }
};

// The text exposition of `families` (a family without samples is left out).
std::string FormatText(std::vector<Family> families);

// Whether `name` is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), and a label name
// ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__").
bool IsValidMetricName(absl::string_view name);
bool IsValidLabelName(absl::string_view name);

}  // namespace hawk::metrics

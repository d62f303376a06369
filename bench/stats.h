#pragma once

// Small statistics shared by the bench programs: milliseconds, percentiles (nearest rank: every
// figure printed is one that was measured), and one line per distribution (median, p90, max).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace hawk::bench {

inline double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// The nearest-rank percentile (q in [0, 1]) of sorted `values`; `values` must not be empty.
inline double PercentileOfSorted(const std::vector<double>& values, double q) {
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

inline double Percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return PercentileOfSorted(values, q);
}

inline double Median(std::vector<double> values) { return Percentile(std::move(values), 0.5); }

// `what  n=…  median=… ms  p90=… ms  max=… ms`; `values` must not be empty.
inline void PrintDistribution(const char* what, std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::printf("%-52s n=%zu  median=%.1f ms  p90=%.1f ms  max=%.1f ms\n", what, values.size(),
              PercentileOfSorted(values, 0.5), PercentileOfSorted(values, 0.9), values.back());
}

}  // namespace hawk::bench

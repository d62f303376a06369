#pragma once

// Small statistics shared by the bench programs: milliseconds, the median, and one line per
// distribution (median, p90, max).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace hawk::bench {

inline double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// `what  n=…  median=… ms  p90=… ms  max=… ms`; `values` must not be empty.
inline void PrintDistribution(const char* what, std::vector<double> values) {
  std::sort(values.begin(), values.end());
  auto at = [&](double q) { return values[static_cast<size_t>(q * (values.size() - 1))]; };
  std::printf("%-52s n=%zu  median=%.1f ms  p90=%.1f ms  max=%.1f ms\n", what, values.size(),
              at(0.5), at(0.9), values.back());
}

}  // namespace hawk::bench

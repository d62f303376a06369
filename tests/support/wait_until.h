#pragma once

// WaitUntil: polls a predicate until it holds or a deadline passes. For conditions that have no
// event to wait on (another process's state); the poll interval is the only sleep.

#include <chrono>
#include <functional>

namespace hawk::testing {

// Returns true as soon as `predicate()` is true (checked at least once, and once more at the
// deadline), false if the deadline passed first.
bool WaitUntil(const std::function<bool()>& predicate, std::chrono::milliseconds deadline,
               std::chrono::milliseconds poll = std::chrono::milliseconds(5));

// Whole milliseconds from `start` to now, for the timings tests print and bound.
inline long MsSince(std::chrono::steady_clock::time_point start) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count());
}

}  // namespace hawk::testing

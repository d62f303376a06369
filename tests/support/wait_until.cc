#include "tests/support/wait_until.h"

#include <algorithm>
#include <thread>

namespace hawk::testing {

bool WaitUntil(const std::function<bool()>& predicate, std::chrono::milliseconds deadline,
               std::chrono::milliseconds poll) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (true) {
    if (predicate()) return true;
    auto now = std::chrono::steady_clock::now();
    if (now >= end) return false;
    auto step = std::chrono::duration_cast<std::chrono::steady_clock::duration>(poll);
    std::this_thread::sleep_for(std::min(step, end - now));
  }
}

}  // namespace hawk::testing

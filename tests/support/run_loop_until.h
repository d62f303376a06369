#pragma once

// Runs a libuv loop until a condition holds or a deadline passes, for tests that drive hawk's
// I/O modules on a real loop. A guard timer keeps uv_run(UV_RUN_ONCE) from blocking past the
// deadline when nothing else is pending.

#include <uv.h>

#include <cstdint>
#include <functional>

#include "agent/uv/timer.h"

namespace hawk::testing {

// Returns done(): false when the deadline passed first.
inline bool RunLoopUntil(uv_loop_t* loop, const std::function<bool()>& done,
                         uint64_t timeout_ms = 5000) {
  uv::Timer guard(loop);
  bool expired = false;
  guard.Start(absl::Milliseconds(timeout_ms), [&] { expired = true; });
  while (!done() && !expired) uv_run(loop, UV_RUN_ONCE);
  guard.Stop();
  return done();
}

}  // namespace hawk::testing

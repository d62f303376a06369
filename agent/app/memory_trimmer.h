#pragma once

// MemoryTrimmer: gives the heap's free pages back to the system (malloc_trim) a quiet second
// after the last piece of whole-state work — a seed or an observation at ingress scale allocates
// tens of megabytes (a `show map` reply of 100,000 entries, the table parsed from it, the seed's
// commands) and frees them when it ends. main.cc keeps freed memory in the heap for speed, so
// without this a hawk that only seeded and observed would hold it for good. A burst (a reload's
// seed, then a resync) trims once. Loop thread only.

#include <uv.h>

#include "agent/uv/timer.h"

namespace hawk::app {

class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(uv_loop_t* loop);
  // Large work just ended: trim once none has ended for a second.
  void AfterLargeWork();

 private:
  uv::Timer timer_;
};

}  // namespace hawk::app

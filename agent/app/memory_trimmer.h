#pragma once

// MemoryTrimmer: hawk's one caller of malloc_trim. It gives the heap's free pages back to the
// system a quiet second after the last piece of large work: a seed or an observation at ingress
// scale (a `show map` reply of 100,000 entries, the table parsed from it, the seed's commands),
// a journal replayed at start, the parser of large PUT documents released. main.cc keeps freed
// memory in the heap for speed (fresh pages cost ~10 µs each to touch), so without this that
// memory would be held for good. A burst (a reload's seed, then a resync) trims once. Loop
// thread only.

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

#include "agent/app/memory_trimmer.h"

#include <malloc.h>

#include "absl/time/time.h"

namespace hawk::app {
namespace {

constexpr absl::Duration kQuietBeforeTrim = absl::Seconds(1);

}  // namespace

MemoryTrimmer::MemoryTrimmer(uv_loop_t* loop) : timer_(loop) {}

void MemoryTrimmer::AfterLargeWork() {
  timer_.Start(kQuietBeforeTrim, [] { ::malloc_trim(0); });
}

}  // namespace hawk::app

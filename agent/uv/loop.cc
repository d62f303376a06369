#include "agent/uv/loop.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace hawk::uv {

Loop::Loop() {
  if (uv_loop_init(&loop_) != 0) std::abort();  // only fails on resource exhaustion
}

Loop::~Loop() {
  if (!closed_) (void)RunDryAndClose();
}

absl::Status Loop::RunDryAndClose() {
  // Closing handles schedules their close callbacks; run until they have all fired.
  while (uv_run(&loop_, UV_RUN_DEFAULT) != 0) {
  }
  int rc = uv_loop_close(&loop_);
  if (rc != 0) {
    int open = 0;
    uv_walk(
        &loop_, [](uv_handle_t*, void* arg) { ++*static_cast<int*>(arg); }, &open);
    return absl::InternalError(
        absl::StrCat("uv_loop_close: ", uv_strerror(rc), " (", open, " handles still open)"));
  }
  closed_ = true;
  return absl::OkStatus();
}

}  // namespace hawk::uv

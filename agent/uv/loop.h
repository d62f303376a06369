#pragma once

// Owns a uv_loop_t. Close() must find every handle closed: a non-zero uv_loop_close() means a
// handle leaked, and hawk reports it instead of hiding it.

#include <uv.h>

#include <cstdint>

#include "absl/status/status.h"

namespace hawk::uv {

class Loop {
 public:
  Loop();
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  uv_loop_t* get() { return &loop_; }
  void Run() { uv_run(&loop_, UV_RUN_DEFAULT); }
  // Runs until no handle is active, then closes the loop. Returns an error naming the
  // number of handles still open if the loop could not be closed.
  absl::Status RunDryAndClose();
  // Milliseconds from libuv's cached monotonic clock.
  uint64_t NowMs() { return uv_now(&loop_); }

 private:
  uv_loop_t loop_;
  bool closed_ = false;
};

}  // namespace hawk::uv

#pragma once

// Owns one uv_timer_t (see handle.h for the lifetime rules). Single-threaded.

#include <uv.h>

#include <cstdint>
#include <functional>

#include "absl/time/time.h"

namespace hawk::uv {

class Timer {
 public:
  explicit Timer(uv_loop_t* loop);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // (Re)arms the timer to run `callback` once, `timeout` from now (zero or negative: on the next
  // loop iteration). libuv counts whole milliseconds: a timeout is rounded up, so that a deadline
  // never fires before it is due.
  void Start(absl::Duration timeout, std::function<void()> callback);
  // (Re)arms the timer to run `callback` `first` from now, then every `every`.
  void StartRepeating(absl::Duration first, absl::Duration every, std::function<void()> callback);
  void Stop();
  bool active() const;

 private:
  static void OnTimer(uv_timer_t* handle);
  void Arm(uint64_t timeout_ms, uint64_t repeat_ms, std::function<void()> callback);

  uv_timer_t* handle_;
  std::function<void()> callback_;
};

}  // namespace hawk::uv

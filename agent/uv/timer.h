#pragma once

// Owns one uv_timer_t (see handle.h for the lifetime rules). Single-threaded.

#include <uv.h>

#include <cstdint>
#include <functional>

namespace hawk::uv {

class Timer {
 public:
  explicit Timer(uv_loop_t* loop);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // (Re)arms the timer; `repeat_ms` 0 means one-shot.
  void Start(uint64_t timeout_ms, uint64_t repeat_ms, std::function<void()> callback);
  void Stop();
  bool active() const;

 private:
  static void OnTimer(uv_timer_t* handle);

  uv_timer_t* handle_;
  std::function<void()> callback_;
};

}  // namespace hawk::uv

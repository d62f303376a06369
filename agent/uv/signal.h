#pragma once

// Owns one uv_signal_t (see handle.h). Single-threaded.

#include <uv.h>

#include <functional>

namespace hawk::uv {

class Signal {
 public:
  explicit Signal(uv_loop_t* loop);
  ~Signal();
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;

  void Start(int signum, std::function<void(int)> callback);
  void Stop();

 private:
  static void OnSignal(uv_signal_t* handle, int signum);

  uv_signal_t* handle_;
  std::function<void(int)> callback_;
};

}  // namespace hawk::uv

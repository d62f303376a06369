#pragma once

// Hostile clients that hold a server's connections without ever completing a request, from a
// thread of their own: each opens a connection, sends the start of a request, then one more
// header byte every `interval` (a slowloris). A connection the server closes is opened again at
// that client's next tick, as an attacker keeps its connections; the clients' ticks are spread
// over the interval, so reconnections arrive steadily rather than in one burst. Stop() (or the
// destructor) closes every socket.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace hawk::testing {

class Tricklers {
 public:
  // `address`: unix:PATH or tcp:HOST:PORT (tests/support/socket_util.h).
  Tricklers(std::string address, int count, std::chrono::milliseconds interval);
  ~Tricklers();
  Tricklers(const Tricklers&) = delete;
  Tricklers& operator=(const Tricklers&) = delete;

  void Stop();
  // Connections open now.
  int open() const { return open_.load(); }
  // Connections the server closed (each reopened at the next tick) and connects that failed.
  uint64_t closed_by_server() const { return closed_.load(); }
  uint64_t failed_connects() const { return failed_.load(); }

 private:
  void Run();

  const std::string address_;
  const int count_;
  const std::chrono::milliseconds interval_;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_{0};
  std::atomic<uint64_t> closed_{0};
  std::atomic<uint64_t> failed_{0};
  std::thread thread_;
};

}  // namespace hawk::testing

#pragma once

// UnixRelay: a counting proxy between two unix sockets, so that a test can see how many
// connections a program holds to HAProxy's master socket. Listens on `listen_path`; for each
// accepted client it connects to `target_path` and copies bytes both ways, passing half-closes
// (shutdown(SHUT_WR)) and closes on in both directions. If the target refuses, the client is
// closed at once (as the master's refusal during a reload would look, minus the error code).
//
// Threading: one poll() thread owns every socket; the counters are atomics readable from any
// thread. Stop() (and the destructor) wakes the thread, joins it, closes everything and
// removes the listening socket file.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/result.h"
#include "tests/support/socket_util.h"

namespace hawk::testing {

class UnixRelay {
 public:
  UnixRelay(std::string listen_path, std::string target_path);
  ~UnixRelay();  // Stop()
  UnixRelay(const UnixRelay&) = delete;
  UnixRelay& operator=(const UnixRelay&) = delete;

  // Binds and listens on listen_path (replacing a stale file), then starts the thread.
  Result Start();
  void Stop();  // idempotent

  const std::string& path() const { return listen_path_; }
  // Clients accepted and not yet closed (including one whose target connect just failed).
  int current_connections() const { return current_.load(); }
  int max_concurrent_connections() const { return max_.load(); }
  int total_accepted() const { return total_.load(); }
  int failed_target_connects() const { return failed_.load(); }
  // Bytes and lines (LFs) the clients sent towards the target: for a master CLI client, every
  // command and payload line is one line.
  uint64_t bytes_to_target() const { return bytes_to_target_.load(); }
  uint64_t lines_to_target() const { return lines_to_target_.load(); }
  // Everything each client sent towards the target, one string per accepted connection in the
  // order they were accepted (kept after it closed): for reading the commands back
  // (tests/support/haproxy_cli_reader.h).
  std::vector<std::string> Transcripts() const;
  // Restarts the maximum from the current count.
  void ResetMax() { max_.store(current_.load()); }

 private:
  void Loop();

  std::string listen_path_;
  std::string target_path_;
  UniqueFd listen_fd_;
  UniqueFd wake_read_;
  UniqueFd wake_write_;
  std::thread thread_;
  std::atomic<int> current_{0};
  std::atomic<int> max_{0};
  std::atomic<int> total_{0};
  std::atomic<int> failed_{0};
  std::atomic<uint64_t> bytes_to_target_{0};
  std::atomic<uint64_t> lines_to_target_{0};
  mutable std::mutex transcripts_mutex_;
  std::vector<std::string> transcripts_;  // guarded by transcripts_mutex_
};

}  // namespace hawk::testing

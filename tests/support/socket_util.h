#pragma once

// Blocking-with-deadline socket helpers shared by the support library. Every socket is
// non-blocking and every wait is a poll() bounded by an absolute deadline, so nothing here can
// hang a test. Errors come back as text for test reports.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace hawk::testing {

using Clock = std::chrono::steady_clock;

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release();
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Milliseconds left until `deadline`, rounded up, never negative; suitable for poll().
int RemainingMs(Clock::time_point deadline);

bool SetNonBlocking(int fd);

// Connects a non-blocking socket. Returns an invalid fd and sets `*error` (which names the
// errno, e.g. "connect unix:/x: Connection refused") on failure; `*error_number` gets errno.
UniqueFd ConnectUnix(const std::string& path, Clock::time_point deadline, std::string* error,
                     int* error_number = nullptr);
UniqueFd ConnectTcp(const std::string& host, int port, Clock::time_point deadline,
                    std::string* error, int* error_number = nullptr);
// `unix:PATH`, `tcp:HOST:PORT`, `HOST:PORT` (numeric IPv4) or a path starting with '/'.
UniqueFd ConnectAddress(const std::string& address, Clock::time_point deadline, std::string* error,
                        int* error_number = nullptr);

// Waits until `fd` is ready for `events`. Returns the revents, 0 on timeout, -1 on poll error.
int PollFd(int fd, short events, Clock::time_point deadline);

// Writes everything (send with MSG_NOSIGNAL). False with `*error` on error or timeout.
bool WriteAll(int fd, const std::string& data, Clock::time_point deadline, std::string* error);

// Reads what is available, waiting up to the deadline. > 0 bytes read, 0 at EOF, -1 on error or
// timeout (`*error` is "timeout" for the latter).
ssize_t ReadSome(int fd, char* buffer, size_t capacity, Clock::time_point deadline,
                 std::string* error);

// "<what>: <strerror(errno_value)>".
std::string ErrnoMessage(const std::string& what, int errno_value);

}  // namespace hawk::testing

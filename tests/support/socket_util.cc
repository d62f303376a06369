#include "tests/support/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace hawk::testing {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) Reset(other.Release());
  return *this;
}

int UniqueFd::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

int RemainingMs(Clock::time_point deadline) {
  auto now = Clock::now();
  if (now >= deadline) return 0;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
  auto ms = (us + 999) / 1000;
  return ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
}

bool SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

std::string ErrnoMessage(const std::string& what, int errno_value) {
  return what + ": " + std::strerror(errno_value);
}

namespace {

void SetError(std::string* error, int* error_number, const std::string& message, int err) {
  if (error != nullptr) *error = message;
  if (error_number != nullptr) *error_number = err;
}

}  // namespace

UniqueFd ConnectUnix(const std::string& path, Clock::time_point deadline, std::string* error,
                     int* error_number) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    SetError(error, error_number, "unix socket path too long: " + path, ENAMETOOLONG);
    return UniqueFd();
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  // A full accept backlog makes a non-blocking unix connect fail with EAGAIN instead of
  // waiting; retry it until the deadline like a blocking connect would wait.
  while (true) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      int err = errno;
      SetError(error, error_number, ErrnoMessage("socket", err), err);
      return UniqueFd();
    }
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
      return fd;
    }
    int err = errno;
    if (err == EAGAIN && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    SetError(error, error_number, ErrnoMessage("connect unix:" + path, err), err);
    return UniqueFd();
  }
}

UniqueFd ConnectTcp(const std::string& host, int port, Clock::time_point deadline,
                    std::string* error, int* error_number) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (port <= 0 || port > 65535 || ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    SetError(error, error_number, "bad tcp address " + host + ":" + std::to_string(port), EINVAL);
    return UniqueFd();
  }
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    int err = errno;
    SetError(error, error_number, ErrnoMessage("socket", err), err);
    return UniqueFd();
  }
  std::string what = "connect tcp:" + host + ":" + std::to_string(port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
  if (errno != EINPROGRESS) {
    int err = errno;
    SetError(error, error_number, ErrnoMessage(what, err), err);
    return UniqueFd();
  }
  int revents = PollFd(fd.get(), POLLOUT, deadline);
  if (revents == 0) {
    SetError(error, error_number, what + ": timeout", ETIMEDOUT);
    return UniqueFd();
  }
  int so_error = 0;
  socklen_t len = sizeof(so_error);
  if (revents < 0 || ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) {
    so_error = errno;
  }
  if (so_error != 0) {
    SetError(error, error_number, ErrnoMessage(what, so_error), so_error);
    return UniqueFd();
  }
  return fd;
}

UniqueFd ConnectAddress(const std::string& address, Clock::time_point deadline, std::string* error,
                        int* error_number) {
  if (address.rfind("unix:", 0) == 0) {
    return ConnectUnix(address.substr(5), deadline, error, error_number);
  }
  if (!address.empty() && address[0] == '/')
    return ConnectUnix(address, deadline, error, error_number);
  std::string rest = address.rfind("tcp:", 0) == 0 ? address.substr(4) : address;
  auto colon = rest.rfind(':');
  if (colon == std::string::npos) {
    SetError(error, error_number, "bad address (want unix:PATH or tcp:HOST:PORT): " + address,
             EINVAL);
    return UniqueFd();
  }
  int port = 0;
  for (char c : rest.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) {
      port = -1;
      break;
    }
    port = port * 10 + (c - '0');
  }
  return ConnectTcp(rest.substr(0, colon), port, deadline, error, error_number);
}

int PollFd(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd pfd{fd, events, 0};
    int n = ::poll(&pfd, 1, RemainingMs(deadline));
    if (n > 0) return pfd.revents;
    if (n == 0) return 0;
    if (errno != EINTR) return -1;
  }
}

bool WriteAll(int fd, const std::string& data, Clock::time_point deadline, std::string* error) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int revents = PollFd(fd, POLLOUT, deadline);
      if (revents == 0) {
        if (error != nullptr) *error = "write: timeout";
        return false;
      }
      if (revents < 0) {
        if (error != nullptr) *error = ErrnoMessage("poll", errno);
        return false;
      }
      continue;
    }
    if (error != nullptr) *error = ErrnoMessage("write", errno);
    return false;
  }
  return true;
}

ssize_t ReadSome(int fd, char* buffer, size_t capacity, Clock::time_point deadline,
                 std::string* error) {
  while (true) {
    ssize_t n = ::recv(fd, buffer, capacity, 0);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      if (error != nullptr) *error = ErrnoMessage("read", errno);
      return -1;
    }
    int revents = PollFd(fd, POLLIN, deadline);
    if (revents == 0) {
      if (error != nullptr) *error = "timeout";
      return -1;
    }
    if (revents < 0) {
      if (error != nullptr) *error = ErrnoMessage("poll", errno);
      return -1;
    }
  }
}

}  // namespace hawk::testing

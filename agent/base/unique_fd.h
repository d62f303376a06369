#pragma once

// A file descriptor closed on scope exit, and writes that finish. Header-only, so that every
// library may use it without linking more.

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <utility>

#include "absl/strings/string_view.h"

namespace hawk::base {

// Owns one descriptor (or none: -1); move-only. The destructor closes it, ignoring the result:
// where a failed close can mean lost data, call Close() and look.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it.
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes now and returns close()'s errno (0 on success).
  int Close() {
    int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

// Writes all of `pieces` in order, with as few writev calls as IOV_MAX allows: 0, or the errno of
// the failed write. Short writes and EINTR continue where they stopped; `pieces` is consumed.
inline int WriteAll(int fd, iovec* pieces, size_t count) {
  size_t index = 0;
  while (index < count) {
    int batch = static_cast<int>(std::min<size_t>(count - index, IOV_MAX));
    ssize_t n = ::writev(fd, &pieces[index], batch);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // no progress on a regular file: do not spin
    size_t left = static_cast<size_t>(n);
    while (left > 0) {
      iovec& piece = pieces[index];
      if (left >= piece.iov_len) {
        left -= piece.iov_len;
        ++index;
      } else {
        piece.iov_base = static_cast<char*>(piece.iov_base) + left;
        piece.iov_len -= left;
        left = 0;
      }
    }
  }
  return 0;
}

// Writes all of `data`: 0, or the errno of the failed write.
inline int WriteAll(int fd, absl::string_view data) {
  iovec piece{const_cast<char*>(data.data()), data.size()};
  return WriteAll(fd, &piece, data.empty() ? 0 : 1);
}

}  // namespace hawk::base

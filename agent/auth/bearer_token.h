#pragma once

// Bearer-token authentication for hawk's TCP API listeners (--token-file).
//
// The token lives in a file, as a mounted Kubernetes Secret provides it: the kubelet rotates a
// Secret by swapping a symlink, so the file is re-read whenever what its path resolves to changes
// (device, inode, size or modification time). A rotated file that cannot be used (missing, empty,
// unreadable) leaves the last good token in force and is reported once per change: a broken
// rotation must not lock the controller out, nor let everybody in.
//
// The token is compared in constant time and never logged or echoed.

#include <sys/types.h>

#include <ctime>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::auth {

// True when `a` and `b` are equal, in a time that depends only on their lengths: a client that
// times its failures learns nothing about how much of a guess was right.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// The token of an `Authorization: Bearer <token>` header value (RFC 6750: the scheme in any case,
// one or more spaces), or nullopt when the value is not of that form.
absl::optional<absl::string_view> BearerTokenOf(absl::string_view authorization);

// A token file's text turned into the token: surrounding whitespace (a trailing newline, as
// `echo` writes) is dropped; what remains must be 1..4096 printable ASCII characters without
// blanks (RFC 6750's b64token is narrower; any such byte sequence is accepted). `path` names the
// file in errors.
absl::StatusOr<std::string> ParseTokenFile(absl::string_view text, absl::string_view path);

class TokenFile {
 public:
  // Reads the file now: a missing, empty or malformed token file is an error at start.
  static absl::StatusOr<std::unique_ptr<TokenFile>> Open(std::string path);

  // Whether a request with this Authorization header value (nullopt: no header) carries the
  // token. Re-reads the file first if it changed.
  bool Allows(absl::optional<absl::string_view> authorization);

  const std::string& path() const { return path_; }

 private:
  // What a file looked like when it was read: a change in any of these means "read it again".
  struct Identity {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec modified{};
    friend bool operator==(const Identity& a, const Identity& b) {
      return a.device == b.device && a.inode == b.inode && a.size == b.size &&
             a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec;
    }
  };

  explicit TokenFile(std::string path) : path_(std::move(path)) {}
  // Re-reads the file when its identity changed. A failure keeps the token held.
  absl::Status Refresh();

  std::string path_;
  std::string token_;
  absl::optional<Identity> read_;     // the identity token_ was read from
  absl::optional<Identity> refused_;  // the identity last found unusable (reported once)
};

}  // namespace hawk::auth

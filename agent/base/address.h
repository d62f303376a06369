#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::base {

// A local endpoint: `unix:/path/to.sock`, a bare `/path/to.sock`, or `tcp:HOST:PORT` with a
// numeric IPv4 host or a bracketed IPv6 host (`tcp:[::1]:9000`). HAProxy's `-S` accepts the same.
struct Address {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string path;   // kUnix
  std::string host;   // kTcp, numeric, without brackets
  uint16_t port = 0;  // kTcp

  std::string ToString() const;
  friend bool operator==(const Address&, const Address&) = default;
};

// A TCP address only this host can reach: 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. A unix
// socket counts as local too (its file mode guards it).
bool IsLoopback(const Address& address);

// `what` names the flag or field in error messages ("--listen").
absl::StatusOr<Address> ParseAddress(absl::string_view text, absl::string_view what);

}  // namespace hawk::base

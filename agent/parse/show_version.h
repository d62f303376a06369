#pragma once

// Parser of `show version` (master or worker): one line such as "2.6.12-1+deb12u4",
// "3.4.0-64a335366" or "3.5-dev5". hawk gates features on it (`hard-reload` exists from 2.9,
// `wait … srv-removable` from 3.0, `@@` from 3.2).

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::parse {

// The trimmed version string. InvalidArgument when the reply is empty, spans several lines,
// holds spaces or does not start with a digit (an error text or a help listing, say).
absl::StatusOr<std::string> ParseShowVersion(absl::string_view reply);

struct VersionNumbers {
  int major = 0;
  int minor = 0;
  int patch = 0;  // 0 when absent ("3.5-dev5")
};

// The leading `major.minor[.patch]` of a version string: "2.6.12-1+deb12u4" → {2, 6, 12}.
absl::StatusOr<VersionNumbers> ParseVersionNumbers(absl::string_view version);

// a < b in (major, minor, patch) order.
bool VersionLess(const VersionNumbers& a, const VersionNumbers& b);

}  // namespace hawk::parse

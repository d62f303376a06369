#pragma once

// HAProxy version strings as `show proc` and `show version` print them ("2.6.12-1+deb12u4",
// "3.4.0-64a335366", "3.5-dev5"). hawk gates features on them (`hard-reload` exists from 2.9,
// `wait … srv-removable` from 3.0, `@@` from 3.2).

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::parse {

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

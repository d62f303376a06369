#include "agent/parse/show_version.h"

#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/parse/text.h"

namespace hawk::parse {

absl::StatusOr<VersionNumbers> ParseVersionNumbers(absl::string_view version) {
  // The numeric prefix ends at the first character that is neither a digit nor a dot.
  size_t end = 0;
  while (end < version.size() &&
         (absl::ascii_isdigit(static_cast<unsigned char>(version[end])) || version[end] == '.')) {
    ++end;
  }
  std::vector<absl::string_view> parts = absl::StrSplit(version.substr(0, end), '.');
  VersionNumbers numbers;
  int* slots[] = {&numbers.major, &numbers.minor, &numbers.patch};
  bool ok = parts.size() >= 2 && parts.size() <= 3;
  for (size_t i = 0; ok && i < parts.size(); ++i) {
    ok = internal::ParseUnsignedInt(parts[i], slots[i]);
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("HAProxy version ", internal::Quote(version),
                                                   ": expected major.minor[.patch]"));
  }
  return numbers;
}

bool VersionLess(const VersionNumbers& a, const VersionNumbers& b) {
  return std::tie(a.major, a.minor, a.patch) < std::tie(b.major, b.minor, b.patch);
}

}  // namespace hawk::parse

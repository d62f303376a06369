#include "agent/parse/show_version.h"

#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/parse/text.h"

namespace hawk::parse {
namespace {

constexpr size_t kMaxVersionBytes = 128;

}  // namespace

absl::StatusOr<std::string> ParseShowVersion(absl::string_view reply) {
  absl::StatusOr<std::vector<internal::Line>> lines =
      internal::SplitReplyLines("show version", reply);
  if (!lines.ok()) return lines.status();
  if (lines->empty()) return absl::InvalidArgumentError("show version: empty reply");
  const internal::Line& line = lines->front();
  if (lines->size() > 1) {
    return internal::LineError("show version", line,
                               absl::StrCat("expected one line, got ", lines->size()));
  }
  absl::string_view version = absl::StripAsciiWhitespace(line.text);
  if (version.empty() || version.size() > kMaxVersionBytes ||
      !absl::ascii_isdigit(static_cast<unsigned char>(version.front()))) {
    return internal::LineError("show version", line, "expected a version like 3.4.0");
  }
  for (char c : version) {
    if (!absl::ascii_isgraph(static_cast<unsigned char>(c))) {
      return internal::LineError("show version", line, "expected a version like 3.4.0");
    }
  }
  return std::string(version);
}

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

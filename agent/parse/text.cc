#include "agent/parse/text.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hawk::parse::internal {
namespace {

constexpr size_t kMaxQuotedBytes = 160;
constexpr size_t kMaxDigits = 18;  // fits int64 without overflow checks
// 10^7 days is ~27,000 years: anything longer is garbage, and it keeps the sum in range.
constexpr int64_t kMaxDurationComponent = 10'000'000;

bool AllDigits(absl::string_view text) {
  if (text.empty() || text.size() > kMaxDigits) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

absl::string_view StripTrailingNewlines(absl::string_view text) {
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

absl::Status CheckReplySize(absl::string_view what, absl::string_view reply) {
  if (reply.size() > kMaxReplyBytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": reply of ", reply.size(),
                                                   " bytes is over the limit of ", kMaxReplyBytes));
  }
  return absl::OkStatus();
}

absl::Status CheckReplyLine(absl::string_view what, const Line& line) {
  if (line.text.size() > kMaxLineBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": line ", line.number, " is ", line.text.size(),
                     " bytes long, over the limit of ", kMaxLineBytes));
  }
  if (line.text.empty()) {
    return LineError(what, line,
                     "unexpected empty line before the end of the reply (two replies framed as "
                     "one?)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Line>> SplitReplyLines(absl::string_view what, absl::string_view reply) {
  std::vector<Line> lines;
  absl::Status status = ForEachReplyLine(what, reply, [&lines](const Line& line) {
    lines.push_back(line);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return lines;
}

std::vector<absl::string_view> SplitWords(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

std::string Quote(absl::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  bool cut = text.size() > kMaxQuotedBytes;
  if (cut) text = text.substr(0, kMaxQuotedBytes);
  std::string out = "\"";
  for (char c : text) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\t') {
      out.append("\\t");
    } else if (byte < 0x20 || byte >= 0x7f) {
      // Control bytes, and bytes that may not be valid UTF-8 (messages end up in JSON).
      out.append("\\x");
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  if (cut) out.append("...");
  out.push_back('"');
  return out;
}

absl::Status LineError(absl::string_view what, const Line& line, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": line ", line.number, " ", Quote(line.text), ": ", problem));
}

bool ParseUnsigned(absl::string_view text, int64_t* out) {
  if (!AllDigits(text)) return false;
  return absl::SimpleAtoi(text, out);
}

bool ParseSigned(absl::string_view text, int64_t* out) {
  bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  int64_t value = 0;
  if (!ParseUnsigned(text, &value)) return false;
  *out = negative ? -value : value;
  return true;
}

bool ParseUnsignedInt(absl::string_view text, int* out) {
  int64_t value = 0;
  if (!ParseUnsigned(text, &value) || value > std::numeric_limits<int>::max()) return false;
  *out = static_cast<int>(value);
  return true;
}

bool ParseSignedInt(absl::string_view text, int* out) {
  int64_t value = 0;
  if (!ParseSigned(text, &value) || value > std::numeric_limits<int>::max() ||
      value < std::numeric_limits<int>::min()) {
    return false;
  }
  *out = static_cast<int>(value);
  return true;
}

bool IsPointer(absl::string_view text) {
  if (!absl::ConsumePrefix(&text, "0x") || text.empty() || text.size() > 16) return false;
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

absl::optional<int64_t> ParseDuration(absl::string_view text) {
  static constexpr char kUnits[] = {'d', 'h', 'm', 's'};
  static constexpr int64_t kSeconds[] = {86400, 3600, 60, 1};
  if (text.empty()) return absl::nullopt;
  int64_t total = 0;
  size_t next_unit = 0;  // units must come in order, each at most once
  while (!text.empty()) {
    size_t digits = 0;
    while (digits < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[digits]))) {
      ++digits;
    }
    if (digits == 0 || digits == text.size()) return absl::nullopt;
    int64_t value = 0;
    if (!ParseUnsigned(text.substr(0, digits), &value) || value > kMaxDurationComponent) {
      return absl::nullopt;
    }
    char unit = text[digits];
    size_t index = next_unit;
    while (index < sizeof(kUnits) && kUnits[index] != unit) ++index;
    if (index == sizeof(kUnits)) return absl::nullopt;
    total += value * kSeconds[index];
    next_unit = index + 1;
    text.remove_prefix(digits + 1);
  }
  return total;
}

}  // namespace hawk::parse::internal

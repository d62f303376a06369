#pragma once

// Shared building blocks of the reply parsers: cutting a reply into lines, strict number and
// duration parsing, and error messages that quote the offending line. Pure; never logs.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::parse {

// The largest reply any parser accepts. The framer has the same cap; this one keeps a parser safe
// when it is handed text from elsewhere (a file, a test, a fuzzer).
inline constexpr size_t kMaxReplyBytes = 64 * 1024 * 1024;
// The longest line a table parser accepts. HAProxy's own lines are bounded by tune.bufsize
// (16 KB by default); map values loaded from files can be longer, so leave room.
inline constexpr size_t kMaxLineBytes = 1024 * 1024;

namespace internal {

struct Line {
  size_t number;           // 1-based, for error messages
  absl::string_view text;  // without its '\n'
};

// Splits the body of one reply into lines. The reply may end with the CLI's blank-line
// terminator ("\n\n"), with a single "\n" or with no newline at all: trailing newlines are
// dropped. An empty line before the end means a second reply was framed into this one, so it is
// an error, as are replies over kMaxReplyBytes and lines over kMaxLineBytes. `what` names the
// command in the error messages ("show proc").
absl::StatusOr<std::vector<Line>> SplitReplyLines(absl::string_view what, absl::string_view reply);

// The same rules, one line at a time: `on_line(const Line&)` returns a Status, and the first
// error (the parser's or the callback's) ends the walk. For replies of 100,000 lines, which
// SplitReplyLines would copy into a vector first.
template <typename OnLine>
absl::Status ForEachReplyLine(absl::string_view what, absl::string_view reply, OnLine&& on_line);

// Drops trailing '\n' characters only (never spaces: they can be data).
absl::string_view StripTrailingNewlines(absl::string_view text);

// Splits on runs of spaces and tabs.
std::vector<absl::string_view> SplitWords(absl::string_view line);

// `"…"` with quotes, backslashes, control and non-ASCII bytes escaped, cut to 160 bytes + "...".
std::string Quote(absl::string_view text);

// InvalidArgument `<what>: line <n> "<text>": <problem>`.
absl::Status LineError(absl::string_view what, const Line& line, absl::string_view problem);

// Decimal integers: an optional '-' (only where allowed) and 1–18 digits, nothing else (no '+',
// no spaces, no hex). absl::SimpleAtoi alone accepts surrounding whitespace and a '+'.
bool ParseUnsigned(absl::string_view text, int64_t* out);
bool ParseSigned(absl::string_view text, int64_t* out);
// The same, range-checked into an int.
bool ParseUnsignedInt(absl::string_view text, int* out);
bool ParseSignedInt(absl::string_view text, int* out);

// "0x" and 1–16 hex digits: a pointer printed with %p (map entries, streams).
bool IsPointer(absl::string_view text);

// HAProxy's durations: `<n>d`, `<n>h`, `<n>m`, `<n>s` components, each at most once, in that
// order, at least one. Covers `show proc`'s `%dd%02dh%02dm%02ds` ("0d00h01m52s") and
// human_time()'s short forms in `show sess` ("2s", "1m12s", "3d4h"). nullopt if malformed or
// absurdly large (over ~30,000 years).
absl::optional<int64_t> ParseDuration(absl::string_view text);

// Checks one line against the rules of SplitReplyLines.
absl::Status CheckReplyLine(absl::string_view what, const Line& line);
absl::Status CheckReplySize(absl::string_view what, absl::string_view reply);

template <typename OnLine>
absl::Status ForEachReplyLine(absl::string_view what, absl::string_view reply, OnLine&& on_line) {
  if (absl::Status size = CheckReplySize(what, reply); !size.ok()) return size;
  absl::string_view body = StripTrailingNewlines(reply);
  size_t number = 0;
  while (!body.empty()) {
    size_t nl = body.find('\n');
    Line line{++number, body.substr(0, nl)};
    body = nl == absl::string_view::npos ? absl::string_view() : body.substr(nl + 1);
    if (absl::Status ok = CheckReplyLine(what, line); !ok.ok()) return ok;
    if (absl::Status ok = on_line(line); !ok.ok()) return ok;
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace hawk::parse

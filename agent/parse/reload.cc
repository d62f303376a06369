#include "agent/parse/reload.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/parse/text.h"

namespace hawk::parse {
namespace {

constexpr absl::string_view kWhat = "reload";
constexpr absl::string_view kAnotherInProgress = "Another reload is still in progress.";

// Cuts the first line off `text`.
absl::string_view TakeLine(absl::string_view* text) {
  size_t newline = text->find('\n');
  absl::string_view line = text->substr(0, newline);
  text->remove_prefix(newline == absl::string_view::npos ? text->size() : newline + 1);
  return line;
}

}  // namespace

absl::StatusOr<ReloadReply> ParseReloadReply(absl::string_view reply) {
  if (reply.size() > kMaxReplyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("reload: reply of ", reply.size(),
                                                   " bytes is over the limit of ", kMaxReplyBytes));
  }
  ReloadReply result;
  absl::string_view rest = internal::StripTrailingNewlines(reply);
  if (absl::StripAsciiWhitespace(rest).empty()) return result;

  absl::string_view first = TakeLine(&rest);
  absl::string_view status = absl::StripTrailingAsciiWhitespace(first);
  if (status == "Success=1") {
    result.status = ReloadStatus::kSuccess;
  } else if (status == "Success=0") {
    result.status = ReloadStatus::kFailure;
  } else {
    return internal::LineError(kWhat, internal::Line{1, first},
                               "expected \"Success=1\" or \"Success=0\"");
  }
  if (rest.empty()) return result;
  absl::string_view separator = TakeLine(&rest);
  if (absl::StripTrailingAsciiWhitespace(separator) != "--") {
    return internal::LineError(kWhat, internal::Line{2, separator}, "expected \"--\"");
  }
  result.log = std::string(rest);
  result.another_in_progress =
      result.status == ReloadStatus::kFailure && absl::StrContains(rest, kAnotherInProgress);
  return result;
}

}  // namespace hawk::parse

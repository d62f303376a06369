#include "agent/cli/line_replies.h"

#include "absl/strings/str_cat.h"

namespace hawk::cli {

absl::StatusOr<std::vector<std::string>> SplitLineReplies(absl::string_view block,
                                                          size_t commands) {
  std::vector<std::string> replies;
  size_t start = 0;  // where the current reply begins
  size_t pos = 0;    // the start of the current line
  while (pos < block.size()) {
    size_t nl = block.find('\n', pos);
    if (nl == absl::string_view::npos) break;  // an unterminated last line: cut short
    bool empty_line = nl == pos;
    pos = nl + 1;
    if (!empty_line) continue;
    if (replies.size() == commands) {
      return absl::DataLossError(absl::StrCat("a whole-line reply holds more than the ", commands,
                                              " replies of its commands"));
    }
    replies.emplace_back(block.substr(start, pos - start));
    start = pos;
  }
  if (replies.size() == commands && start < block.size()) {
    return absl::DataLossError(absl::StrCat("a whole-line reply has ", block.size() - start,
                                            " bytes after the last of its ", commands, " replies"));
  }
  return replies;
}

}  // namespace hawk::cli

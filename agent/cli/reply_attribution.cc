#include "agent/cli/reply_attribution.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "agent/cli/line_replies.h"
#include "agent/parse/reply.h"

namespace hawk::cli {
namespace {

// The replies of commands [*next, end), sent as one `@@!<pid>` line.
bool AttributeLineReplies(const std::vector<Command>& commands, size_t end, int pid,
                          std::string text, size_t* next, std::vector<CommandResult>* results) {
  size_t begin = *next;
  *next = end;
  // A master error answers for the whole line: its worker is gone or unreachable.
  if (absl::optional<parse::ReplyCode> master_error = parse::ClassifyMasterError(text)) {
    for (size_t i = begin; i < end; ++i) {
      (*results)[i] = parse::ReplyCodeStatus(
          *master_error,
          absl::StrCat("`", MasterLine(commands[i]), "` (in one `@@!", pid,
                       "` line): master replied \"", absl::StripAsciiWhitespace(text), "\""));
    }
    // As after any master error: nothing more goes on this connection.
    for (size_t i = end; i < commands.size(); ++i) {
      (*results)[i] = absl::UnavailableError(absl::StrCat(
          "`", MasterLine(commands[i]), "`: not sent: an earlier line of the batch failed"));
    }
    *next = commands.size();
    return *next > end;
  }
  absl::StatusOr<std::vector<std::string>> replies = SplitLineReplies(text, end - begin);
  if (!replies.ok()) {
    for (size_t i = begin; i < commands.size(); ++i) {
      (*results)[i] = absl::UnavailableError(absl::StrCat(
          "`", MasterLine(commands[i]), "`: no usable reply: ", replies.status().message(),
          "; it may or may not have run"));
    }
    *next = commands.size();
    return true;
  }
  for (size_t i = begin; i < end; ++i) {
    size_t k = i - begin;
    if (k < replies->size()) {
      (*results)[i] = std::move((*replies)[k]);
    } else {
      (*results)[i] = absl::UnavailableError(absl::StrCat(
          "`", MasterLine(commands[i]),
          "`: no reply: the worker's CLI session ended before this command (did the worker exit?); "
          "it may or may not have run"));
    }
  }
  return false;
}

}  // namespace

bool AttributeReply(const std::vector<Command>& commands, const std::vector<Segment>& segments,
                    std::string text, size_t* next, std::vector<CommandResult>* results) {
  size_t index = *next;
  for (const Segment& segment : segments) {
    if (segment.whole && index >= segment.begin && index < segment.end) {
      return AttributeLineReplies(commands, segment.end, segment.pid, std::move(text), next,
                                  results);
    }
  }
  ++*next;
  const Command& command = commands[index];
  absl::optional<parse::ReplyCode> master_error = parse::ClassifyMasterError(text);
  if (!master_error.has_value()) {
    (*results)[index] = std::move(text);
    return false;
  }
  (*results)[index] = parse::ReplyCodeStatus(
      *master_error, absl::StrCat("`", MasterLine(command), "`: master replied \"",
                                  absl::StripAsciiWhitespace(text), "\""));
  if (*next == commands.size()) return false;
  for (size_t i = *next; i < commands.size(); ++i) {
    (*results)[i] = absl::UnavailableError(
        absl::StrCat("`", MasterLine(commands[i]),
                     "`: no reply: the master discards the commands sent after a failed one (`",
                     MasterLine(command), "`); it may not have run"));
  }
  *next = commands.size();
  return true;
}

}  // namespace hawk::cli

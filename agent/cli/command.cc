#include "agent/cli/command.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/cli/wire.h"

namespace hawk::cli {
namespace {

absl::Status CheckNoLineBreaks(absl::string_view text, absl::string_view what) {
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\0') {
      return absl::InvalidArgumentError(absl::StrCat(what, " contains a ",
                                                     c == '\0' ? "NUL" : "line break",
                                                     " byte, which would end the command early"));
    }
  }
  return absl::OkStatus();
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Whether HAProxy would read the lines after `line` (one command) as its payload, on any
// version. Each reader looks for the "<<" marker its own way (src/cli.c):
//   - 2.6, master and worker: the command ends with "<<", whatever comes before;
//   - 3.x worker: the text after the command's last blank, escaped or not, starts with "<<";
//   - 3.x master: the last word, read with escapes and trailing blanks skipped, starts with
//     "<<" (then "<<PAT" ends the payload at a line "PAT", 2.9+).
bool OpensPayload(absl::string_view line) {
  if (absl::EndsWith(line, "<<")) return true;
  size_t blank = line.find_last_of(" \t");
  absl::string_view raw_last = blank == absl::string_view::npos ? line : line.substr(blank + 1);
  if (absl::StartsWith(raw_last, "<<")) return true;
  absl::string_view last_word;
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    if (i == line.size()) break;
    size_t begin = i;
    while (i < line.size() && !IsBlank(line[i])) i += line[i] == '\\' ? 2 : 1;
    last_word = line.substr(begin, std::min(i, line.size()) - begin);
  }
  return absl::StartsWith(last_word, "<<");
}

}  // namespace

size_t Command::payload_lines() const {
  return static_cast<size_t>(std::count(payload.begin(), payload.end(), '\n'));
}

absl::Status ValidateCommand(const Command& command) {
  const std::string& line = command.text;
  if (line.empty()) return absl::InvalidArgumentError("empty command");
  if (absl::Status s = CheckNoLineBreaks(line, "command"); !s.ok()) return s;
  const size_t line_bytes = MasterLineBytes(command);
  if (line_bytes > kMaxLineBytes) {
    return absl::InvalidArgumentError(absl::StrCat("command is ", line_bytes,
                                                   " bytes; the master CLI accepts at most ",
                                                   kMaxLineBytes, " per line"));
  }
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\') {
      if (i + 1 == line.size()) {
        return absl::InvalidArgumentError("command ends with a lone backslash");
      }
      ++i;  // the escaped byte is literal
    } else if (line[i] == ';') {
      return absl::InvalidArgumentError(
          "command contains an unescaped ';', which the master treats as a second command");
    }
  }
  if (OpensPayload(line)) {
    return absl::InvalidArgumentError(
        "command ends with '<<' or its last word starts with it, which opens HAProxy's payload "
        "mode: payloads are attached with Command::payload, '<' in a value is escaped");
  }
  if (command.payload.empty()) return absl::OkStatus();
  const std::string& payload = command.payload;
  if (payload.back() != '\n') {
    return absl::InvalidArgumentError("payload does not end its last line with LF");
  }
  if (payload.front() == '\n' || payload.find("\n\n") != std::string::npos) {
    return absl::InvalidArgumentError("payload line is empty (an empty line ends the payload)");
  }
  for (char c : payload) {
    if (c == '\r' || c == '\0') {
      return absl::InvalidArgumentError(absl::StrCat("payload line contains a ",
                                                     c == '\0' ? "NUL" : "line break",
                                                     " byte, which would end the command early"));
    }
  }
  size_t total = line_bytes + 4 + payload.size() + 1;  // " <<\n", the lines, the empty line
  if (total > kMaxCommandWithPayloadBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("command with payload is ", total, " bytes; keep it within ",
                     kMaxCommandWithPayloadBytes, " (split it inside one transaction)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> EscapeWord(absl::string_view word) {
  if (absl::Status s = CheckNoLineBreaks(word, "value"); !s.ok()) return s;
  std::string out;
  out.reserve(word.size());
  for (char c : word) {
    // '<' so that no value can end a line with "<<" or start its last word with it (payload).
    if (c == '\\' || c == ' ' || c == '\t' || c == ';' || c == '<') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace hawk::cli

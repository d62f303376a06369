#include "agent/cli/wire.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hawk::cli {

bool SplitWorkerPrefix(absl::string_view line, int* pid, absl::string_view* rest) {
  if (!absl::ConsumePrefix(&line, "@!")) return false;
  size_t space = line.find(' ');
  if (space == absl::string_view::npos || !absl::SimpleAtoi(line.substr(0, space), pid)) {
    return false;
  }
  *rest = line.substr(space + 1);
  return true;
}

std::vector<Segment> Segments(const std::vector<Command>& commands, bool whole_lines) {
  std::vector<Segment> out;
  auto pipelined = [&out](size_t i) {
    if (out.empty() || out.back().whole) out.push_back(Segment{i, i, false, 0});
    out.back().end = i + 1;
  };
  size_t line_bytes = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    const Command& command = commands[i];
    int pid = 0;
    absl::string_view rest;
    bool plain = whole_lines && command.payload.empty() && !command.closes_connection &&
                 SplitWorkerPrefix(command.line, &pid, &rest);
    if (!plain) {
      pipelined(i);
      continue;
    }
    // "@@!<pid> " + c1 + "; " + c2 …
    size_t prefix = command.line.size() - rest.size() + 1;
    bool joins = !out.empty() && out.back().whole && out.back().pid == pid &&
                 line_bytes + 2 + rest.size() <= kMaxLineBytes;
    if (joins) {
      out.back().end = i + 1;
      line_bytes += 2 + rest.size();
    } else {
      out.push_back(Segment{i, i + 1, true, pid});
      line_bytes = prefix + rest.size();
    }
  }
  // A whole line of one command gains nothing over `@!<pid>`.
  for (Segment& segment : out) {
    if (segment.whole && segment.end - segment.begin == 1) segment.whole = false;
  }
  return out;
}

std::string SegmentBytes(const std::vector<Command>& commands, const Segment& segment,
                         bool worker_socket) {
  std::string bytes;
  if (segment.whole) {
    bytes = absl::StrCat("@@!", segment.pid, " ");
    for (size_t i = segment.begin; i < segment.end; ++i) {
      int pid = 0;
      absl::string_view rest;
      SplitWorkerPrefix(commands[i].line, &pid, &rest);
      if (i > segment.begin) bytes.append("; ");
      bytes.append(rest.data(), rest.size());
    }
    bytes.push_back('\n');
    return bytes;
  }
  for (size_t i = segment.begin; i < segment.end; ++i) {
    int pid = 0;
    absl::string_view rest;
    if (worker_socket && SplitWorkerPrefix(commands[i].line, &pid, &rest)) {
      // The worker's own socket takes the command without the master's `@!<pid>` prefix.
      Command local = commands[i];
      local.line = std::string(rest);
      absl::StrAppend(&bytes, Serialize(local));
    } else {
      absl::StrAppend(&bytes, Serialize(commands[i]));
    }
  }
  return bytes;
}

}  // namespace hawk::cli

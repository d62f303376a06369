#include "agent/cli/wire.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "agent/parse/show_version.h"

namespace hawk::cli {
namespace {

size_t Digits(int n) {
  size_t digits = n < 0 ? 2 : 1;
  for (; n >= 10 || n <= -10; n /= 10) ++digits;
  return digits;
}

// "@!<pid> ": the bytes the master reads before a relayed command's text.
size_t RelayPrefixBytes(int pid) { return pid == 0 ? 0 : 2 + Digits(pid) + 1; }

void AppendLine(const Command& command, bool prefixed, std::string* out) {
  if (prefixed && command.pid != 0) absl::StrAppend(out, "@!", command.pid, " ");
  out->append(command.text);
  if (command.payload.empty()) {
    out->push_back('\n');
    return;
  }
  // 2.6 starts a payload only when the line ends exactly with "<<".
  absl::StrAppend(out, " <<\n", command.payload, "\n");
}

}  // namespace

Dialect MasterDialectFor(absl::string_view master_version) {
  absl::StatusOr<parse::VersionNumbers> version = parse::ParseVersionNumbers(master_version);
  bool whole = version.ok() && !parse::VersionLess(*version, parse::VersionNumbers{3, 2, 0});
  return whole ? Dialect::kMasterWholeLines : Dialect::kMaster;
}

size_t MasterLineBytes(const Command& command) {
  return RelayPrefixBytes(command.pid) + command.text.size();
}

std::string MasterLine(const Command& command) {
  if (command.pid == 0) return command.text;
  return absl::StrCat("@!", command.pid, " ", command.text);
}

std::string CommandBytes(const Command& command, Dialect dialect) {
  std::string bytes;
  AppendLine(command, dialect != Dialect::kWorkerSocket, &bytes);
  return bytes;
}

std::vector<Segment> Segments(const std::vector<Command>& commands, Dialect dialect) {
  std::vector<Segment> out;
  auto pipelined = [&out](size_t i) {
    if (out.empty() || out.back().whole) out.push_back(Segment{i, i, false, 0});
    out.back().end = i + 1;
  };
  size_t line_bytes = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    const Command& command = commands[i];
    bool plain = dialect == Dialect::kMasterWholeLines && command.payload.empty() &&
                 !command.closes_connection && command.pid != 0;
    if (!plain) {
      pipelined(i);
      continue;
    }
    // "@@!<pid> " + c1 + "; " + c2 …
    const std::string& text = command.text;
    bool joins = !out.empty() && out.back().whole && out.back().pid == command.pid &&
                 line_bytes + 2 + text.size() <= kMaxLineBytes;
    if (joins) {
      out.back().end = i + 1;
      line_bytes += 2 + text.size();
    } else {
      out.push_back(Segment{i, i + 1, true, command.pid});
      line_bytes = 1 + MasterLineBytes(command);
    }
  }
  // A whole line of one command gains nothing over `@!<pid>`.
  for (Segment& segment : out) {
    if (segment.whole && segment.end - segment.begin == 1) segment.whole = false;
  }
  return out;
}

std::string SegmentBytes(const std::vector<Command>& commands, const Segment& segment,
                         Dialect dialect) {
  std::string bytes;
  if (segment.whole) {
    bytes = absl::StrCat("@@!", segment.pid, " ");
    for (size_t i = segment.begin; i < segment.end; ++i) {
      if (i > segment.begin) bytes.append("; ");
      bytes.append(commands[i].text);
    }
    bytes.push_back('\n');
    return bytes;
  }
  // The worker's own socket takes the command without the master's `@!<pid>` prefix.
  bool prefixed = dialect != Dialect::kWorkerSocket;
  for (size_t i = segment.begin; i < segment.end; ++i) AppendLine(commands[i], prefixed, &bytes);
  return bytes;
}

std::string BatchBytes(const std::vector<Command>& commands, Dialect dialect) {
  std::string bytes;
  for (const Segment& segment : Segments(commands, dialect)) {
    bytes += SegmentBytes(commands, segment, dialect);
  }
  return bytes;
}

}  // namespace hawk::cli

#include "tests/support/haproxy_cli_reader.h"

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hawk::testing {
namespace {

constexpr absl::string_view kMarker = "<<";

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

size_t MaxTerminator(CliVersion version) { return version == CliVersion::k3_0 ? 7 : 64; }

// The end of the command that starts at `pos`: its unescaped ';' or LF, or npos.
size_t CommandEnd(absl::string_view bytes, size_t pos) {
  for (size_t i = pos; i < bytes.size(); ++i) {
    if (bytes[i] == '\\') {
      ++i;
      continue;
    }
    if (bytes[i] == ';' || bytes[i] == '\n') return i;
  }
  return absl::string_view::npos;
}

// Words at unescaped blanks, escapes kept (the master's split, and the worker's before it
// unescapes).
std::vector<std::string> RawWords(absl::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (true) {
    while (i < text.size() && IsBlank(text[i])) ++i;
    if (i >= text.size()) break;
    size_t begin = i;
    while (i < text.size() && !IsBlank(text[i])) i += text[i] == '\\' ? 2 : 1;
    if (i > text.size()) i = text.size();
    words.emplace_back(text.substr(begin, i - begin));
  }
  return words;
}

std::string Unescape(absl::string_view word) {
  std::string out;
  for (size_t k = 0; k < word.size(); ++k) {
    if (word[k] == '\\') {
      if (k + 1 < word.size() && word[k + 1] == '\\') {
        ++k;
      } else {
        continue;
      }
    }
    out.push_back(word[k]);
  }
  return out;
}

// Reads payload lines from `bytes` at *pos until the line `terminator`. False when it never ends.
bool ReadPayload(absl::string_view bytes, size_t* pos, absl::string_view terminator,
                 std::string* payload) {
  while (*pos < bytes.size()) {
    size_t lf = bytes.find('\n', *pos);
    if (lf == absl::string_view::npos) return false;
    absl::string_view line = bytes.substr(*pos, lf - *pos);
    *pos = lf + 1;
    if (line == terminator) return true;
    absl::StrAppend(payload, line, "\n");
  }
  return false;
}

// One worker CLI session reading `bytes` (a stats socket, or what the master forwarded).
ReadResult ReadWorker(absl::string_view bytes, CliVersion version, int pid) {
  ReadResult result;
  size_t pos = 0;
  // 3.x: the commands of one line so far (';'-separated); the payload goes to the last one.
  std::vector<ReadCommand> line;
  while (pos < bytes.size()) {
    size_t end = CommandEnd(bytes, pos);
    if (end == absl::string_view::npos) {
      result.error = absl::StrCat("a command without its LF: \"", bytes.substr(pos), "\"");
      return result;
    }
    absl::string_view text = bytes.substr(pos, end - pos);
    bool at_line_end = bytes[end] == '\n';
    pos = end + 1;
    if (absl::EndsWith(text, "\r")) text.remove_suffix(1);
    std::string terminator;
    bool payload = false;
    if (version == CliVersion::k2_6) {
      // Every command, at ';' as at LF: a command that ends with "<<".
      payload = absl::EndsWith(text, kMarker);
    } else if (at_line_end) {
      // The text after the last blank of the line's last command.
      size_t blank = text.find_last_of(" \t");
      absl::string_view last = blank == absl::string_view::npos ? text : text.substr(blank + 1);
      if (absl::StartsWith(last, kMarker) &&
          last.size() - kMarker.size() <= MaxTerminator(version)) {
        payload = true;
        terminator = std::string(last.substr(kMarker.size()));
        text = text.substr(0, text.size() - last.size());
      }
    }
    ReadCommand command;
    command.pid = pid;
    for (const std::string& word : RawWords(text)) command.words.push_back(Unescape(word));
    if (payload && version == CliVersion::k2_6 && !command.words.empty() &&
        command.words.back() == kMarker) {
      command.words.pop_back();  // a "<<" word of its own; else it stays part of the last word
    }
    if (payload) {
      command.has_payload = true;
      if (!ReadPayload(bytes, &pos, terminator, &command.payload)) {
        result.error = absl::StrCat("a payload that never ends, after \"", text, "\"");
        return result;
      }
    }
    if (!command.words.empty() || command.has_payload) line.push_back(std::move(command));
    if (version == CliVersion::k2_6 || at_line_end || payload) {
      for (ReadCommand& c : line) result.commands.push_back(std::move(c));
      line.clear();
    }
  }
  for (ReadCommand& c : line) result.commands.push_back(std::move(c));
  return result;
}

// The master's view of one command's text: does a payload follow, and with which terminator.
bool MasterSeesPayload(absl::string_view text, CliVersion version, std::string* terminator) {
  if (version == CliVersion::k2_6) {
    size_t first = text.find(kMarker);
    return first != absl::string_view::npos && first + kMarker.size() == text.size();
  }
  std::vector<std::string> words = RawWords(text);
  if (words.empty() || !absl::StartsWith(words.back(), kMarker)) return false;
  if (words.back().size() - kMarker.size() > MaxTerminator(version)) return false;
  *terminator = words.back().substr(kMarker.size());
  return true;
}

}  // namespace

std::vector<std::string> WorkerWords(absl::string_view command) {
  std::vector<std::string> words;
  for (const std::string& word : RawWords(command)) words.push_back(Unescape(word));
  return words;
}

ReadResult ReadWorkerSocket(absl::string_view bytes, CliVersion version) {
  return ReadWorker(bytes, version, 0);
}

ReadResult ReadMasterConnection(absl::string_view bytes, CliVersion version) {
  ReadResult result;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (absl::StartsWith(bytes.substr(pos), "@@")) {
      if (version != CliVersion::k3_4) {
        result.error = "`@@` before 3.2: the master refuses the prefix";
        return result;
      }
      // The whole line, ';' included, goes to one worker session.
      size_t lf = bytes.find('\n', pos);
      if (lf == absl::string_view::npos) {
        result.error = "an `@@` line without its LF";
        return result;
      }
      absl::string_view line = bytes.substr(pos, lf - pos);
      pos = lf + 1;
      size_t blank = line.find_first_of(" \t");
      int pid = 0;
      if (blank == absl::string_view::npos || !absl::ConsumePrefix(&line, "@@!") ||
          !absl::SimpleAtoi(line.substr(0, blank - 3), &pid)) {
        result.error = absl::StrCat("not an `@@!<pid> <line>`: \"", line, "\"");
        return result;
      }
      ReadResult worker = ReadWorker(absl::StrCat(line.substr(blank - 2), "\n"), version, pid);
      if (!worker.ok()) {
        result.error = absl::StrCat("worker ", pid, ": ", worker.error);
        return result;
      }
      for (ReadCommand& c : worker.commands) {
        if (c.has_payload) {
          result.error = absl::StrCat("worker ", pid, " waits for a payload after an `@@` line");
          return result;
        }
        result.commands.push_back(std::move(c));
      }
      continue;
    }
    size_t end = CommandEnd(bytes, pos);
    if (end == absl::string_view::npos) {
      result.error = absl::StrCat("a command without its LF: \"", bytes.substr(pos), "\"");
      return result;
    }
    absl::string_view text = bytes.substr(pos, end - pos);
    pos = end + 1;
    std::string terminator;
    bool payload = MasterSeesPayload(text, version, &terminator);
    std::string payload_lines;
    if (payload && !ReadPayload(bytes, &pos, terminator, &payload_lines)) {
      result.error = absl::StrCat("a payload that never ends, after \"", text, "\"");
      return result;
    }
    std::vector<std::string> words = RawWords(text);
    if (words.empty()) continue;
    int pid = 0;
    if (absl::string_view first = words[0]; absl::StartsWith(first, "@")) {
      if (!absl::ConsumePrefix(&first, "@!") || !absl::SimpleAtoi(first, &pid) || pid <= 0) {
        result.error = absl::StrCat("a prefix hawk never sends: \"", words[0], "\"");
        return result;
      }
      if (words.size() == 1) {
        result.error = absl::StrCat("a prefix alone changes the default target: \"", text, "\"");
        return result;
      }
    }
    if (pid == 0) {
      ReadCommand command;
      for (const std::string& word : words) command.words.push_back(Unescape(word));
      command.has_payload = payload;
      command.payload = payload_lines;
      result.commands.push_back(std::move(command));
      continue;
    }
    // The master forwards the command without its prefix, then the payload it collected.
    size_t after_prefix = text.find(words[0]) + words[0].size();
    std::string forwarded = absl::StrCat(text.substr(after_prefix), "\n");
    if (payload) absl::StrAppend(&forwarded, payload_lines, terminator, "\n");
    ReadResult worker = ReadWorker(forwarded, version, pid);
    if (!worker.ok() || worker.commands.size() != 1 || worker.commands[0].has_payload != payload) {
      result.error = absl::StrCat(
          "master and worker ", pid, " disagree on \"", text,
          "\": ", payload ? "the master sends a payload" : "no payload for the master",
          worker.ok() ? "" : absl::StrCat(", the worker: ", worker.error),
          worker.ok() ? absl::StrCat(", the worker runs ", worker.commands.size(), " command(s)")
                      : "");
      return result;
    }
    result.commands.push_back(std::move(worker.commands[0]));
  }
  return result;
}

}  // namespace hawk::testing

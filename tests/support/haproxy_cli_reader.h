#pragma once

// How HAProxy reads the bytes a client writes to its CLI: an oracle for tests and the wire fuzz
// target, written from HAProxy's src/cli.c (2.6.0, 3.0.0 and 3.4.0: pcli_parse_request for the
// master, cli_io_handler and cli_parse_request for a worker), independent of hawk's agent/ code.
//
// Both readers end a command at an unescaped ';' or LF ('\' escapes the next byte), and split it
// into words at unescaped blanks. A worker then drops every backslash that escapes a byte (`\x`
// is x, `\\` is \); the master passes the text on as it came. Each looks for the payload marker
// its own way:
//   - 2.6 master: the first "<<" of the command is at its end;
//   - 2.6 worker: the command ends with "<<";
//   - 3.x master: the last word (escapes kept) starts with "<<"; the rest is the terminator;
//   - 3.x worker: the text after the line's last blank, escaped or not, starts with "<<".
// A payload then runs to an empty line, or to a line equal to its terminator (3.x). A custom
// terminator longer than 7 bytes (3.0) or 64 (3.4) leaves the line an ordinary command.
//
// The master forwards `@!<pid> <command>` to that worker as one command, and `@@!<pid> <line>`
// (3.2+) as the whole line, ';' included. Where the master and the worker disagree on whether a
// payload follows, the reader reports a desync: one of them would take the next bytes for what
// they are not.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace hawk::testing {

enum class CliVersion {
  k2_6,
  k3_0,  // 3.0 to 3.3 (custom terminators of at most 7 bytes)
  k3_4,  // 3.4 (custom terminators of at most 64 bytes), `@@` lines (3.2+)
};

struct ReadCommand {
  int pid = 0;                     // the worker that runs it; 0: the master, or the socket's worker
  std::vector<std::string> words;  // as the worker's parser hands them to the command
  bool has_payload = false;
  std::string payload;  // the payload lines, each with its LF, without the terminator line

  friend bool operator==(const ReadCommand&, const ReadCommand&) = default;
};

struct ReadResult {
  std::vector<ReadCommand> commands;
  std::string error;  // a desync, or bytes left without an end (no LF, an unterminated payload)
  bool ok() const { return error.empty(); }
};

// The commands HAProxy runs for `bytes` written on a master CLI connection.
ReadResult ReadMasterConnection(absl::string_view bytes, CliVersion version);
// The commands a worker runs for `bytes` written on its own stats socket.
ReadResult ReadWorkerSocket(absl::string_view bytes, CliVersion version);

// The words of one command as a worker's parser splits and unescapes them (no payload marker
// handling): what hawk means by a command line.
std::vector<std::string> WorkerWords(absl::string_view command);

}  // namespace hawk::testing

#pragma once

// The encoder, pure: how a batch of commands (cli::Command: a pid, a text, a payload) goes out
// on a connection of each dialect. The only code that writes the master's `@!<pid>` and
// `@@!<pid>` prefixes; nothing parses them back. The MasterClient writes its bytes; the wire
// fuzz target reads them back the way each HAProxy version would.
//
//   kMaster, one command per line:      `@!<pid> c1\n@!<pid> c2\n`, pipelined
//   kMasterWholeLines (3.2+):           `@@!<pid> c1; c2; …\n`, one such line in flight
//   kWorkerSocket, a worker's own socket: `c1\nc2\n`, pipelined, without the `@!<pid>` prefix
// A payload command goes out as its own line followed by its payload lines and an empty line,
// in every dialect. Commands for the master itself (pid 0) go without a prefix.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/cli/command.h"

namespace hawk::cli {

enum class Dialect {
  kMaster,            // the master CLI, `@!<pid>` per command
  kMasterWholeLines,  // the master CLI of 3.2+: runs for one worker as `@@!<pid>` lines
  kWorkerSocket,      // a worker's own `stats socket`: no prefix, the worker runs them itself
};

// The master's dialect for its version as `show proc` prints it: whole lines from 3.2 on (one
// worker CLI session per line instead of one per command); kMaster for a version that does not
// parse.
Dialect MasterDialectFor(absl::string_view master_version);

// A batch is sent as segments, in order: a run of commands pipelined one line each, or one whole
// line (`@@!<pid> c1; c2; …`) that is alone in flight.
struct Segment {
  size_t begin = 0;
  size_t end = 0;      // commands[begin, end)
  bool whole = false;  // one `@@!<pid>` line
  int pid = 0;         // whole: the worker
};

// The batch's segments for `dialect`: on kMasterWholeLines, runs of plain commands (no payload,
// not closing the connection) for one worker become `@@!<pid>` lines of at most kMaxLineBytes;
// everything else is pipelined one command per line.
std::vector<Segment> Segments(const std::vector<Command>& commands, Dialect dialect);

// The bytes of one segment of Segments(commands, dialect), LFs included.
std::string SegmentBytes(const std::vector<Command>& commands, const Segment& segment,
                         Dialect dialect);

// The bytes of the whole batch: every segment's, in order.
std::string BatchBytes(const std::vector<Command>& commands, Dialect dialect);

// The bytes of one command sent on its own line (its payload and the empty line after it
// included).
std::string CommandBytes(const Command& command, Dialect dialect);

// The length of the command's line on the master, `@!<pid> ` included, without LF: what counts
// against kMaxLineBytes.
size_t MasterLineBytes(const Command& command);

// The command as the master CLI reads it, `@!<pid> <text>` (the text alone for the master's own
// commands): how messages, logs and held connections name it.
std::string MasterLine(const Command& command);

}  // namespace hawk::cli

#pragma once

// The bytes of a batch on the wire, pure: how commands (cli::Command, each `@!<pid> …` or a master
// command) go out on a connection of each dialect. The MasterClient writes them; the wire fuzz
// target reads them back the way each HAProxy version would.
//
//   master, one command per line:   `@!<pid> c1\n@!<pid> c2\n`, pipelined
//   master, whole lines (3.2+):      `@@!<pid> c1; c2; …\n`, one such line in flight
//   a worker's own stats socket:     `c1\nc2\n`, pipelined, without the `@!<pid>` prefix
// A payload command goes out as its own line followed by its payload lines and an empty line
// (Serialize), in every dialect.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/cli/command.h"

namespace hawk::cli {

// `@!<pid> <rest>` → pid and rest; false for any other line (a master command).
bool SplitWorkerPrefix(absl::string_view line, int* pid, absl::string_view* rest);

// A batch is sent as segments, in order: a run of commands pipelined one line each, or one whole
// line (`@@!<pid> c1; c2; …`) that is alone in flight.
struct Segment {
  size_t begin = 0;
  size_t end = 0;      // commands[begin, end)
  bool whole = false;  // one `@@!<pid>` line
  int pid = 0;         // whole: the worker
};

// The batch's segments: with `whole_lines`, runs of plain `@!<pid>` commands for one worker
// become `@@!<pid>` lines of at most kMaxLineBytes; everything else is pipelined one command per
// line.
std::vector<Segment> Segments(const std::vector<Command>& commands, bool whole_lines);

// The bytes of one segment. `worker_socket`: the commands go to a worker's own socket, without
// their `@!<pid>` prefix (whole segments never occur there: Segments without whole_lines).
std::string SegmentBytes(const std::vector<Command>& commands, const Segment& segment,
                         bool worker_socket);

}  // namespace hawk::cli

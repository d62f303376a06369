#pragma once

// Which command a reply answers, pure. The master answers a batch's commands in order: one
// prompt-framed reply per command, or one block per whole `@@!<pid>` line that splits into its
// commands' replies (line_replies.h). A master-side error (`Can't find the target PID…`) makes
// the master discard what it had buffered behind it, so the commands after it get an error
// result (they may or may not have run); so does a whole line's block that does not match its
// commands.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/cli/command.h"
#include "agent/cli/wire.h"

namespace hawk::cli {

// A command's result: its reply text (which may be a worker-level error such as `Proxy is
// disabled.`: the caller classifies it), or a Status (MasterClient lists them).
using CommandResult = absl::StatusOr<std::string>;

// Stores `text`, the next reply read for the batch `commands` sent as `segments`, as the result
// of commands[*next] (or of every command of the whole line that starts there), and advances
// *next. Returns true when the connection must be closed because what it sends next cannot be
// attributed: after a master error with commands still behind it, or a whole line's block that
// does not split into its commands' replies. The commands behind then hold their error result
// and *next is commands.size().
bool AttributeReply(const std::vector<Command>& commands, const std::vector<Segment>& segments,
                    std::string text, size_t* next, std::vector<CommandResult>* results);

}  // namespace hawk::cli

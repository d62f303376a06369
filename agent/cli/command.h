#pragma once

// Pure helpers for master-CLI command text. Every line hawk sends passes ValidateCommand(),
// the last line of defence against a second command smuggled into one line: the master splits
// commands on unescaped ';' and on LF, so one stray byte would shift every later reply onto the
// wrong command.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::cli {

// The master replaces a line longer than ~15,360 bytes (tune.bufsize − maxrewrite) with `help`
// and reports no error (2.6 to 3.4); 15,000 leaves room for the `@!<pid> ` prefix, which counts
// against it (MasterLineBytes, wire.h).
inline constexpr size_t kMaxLineBytes = 15000;
// 2.6 silently applies nothing past ~21 KB of payload and 3.4.0 runs the tail of a ~32 KB payload
// as commands: a command plus its payload stays within 12 KiB on every version.
inline constexpr size_t kMaxCommandWithPayloadBytes = 12 * 1024;

// One command for HAProxy's CLI, as data: who runs it and what it says. How it is addressed on
// the wire (`@!<pid> `, `@@!<pid> `, nothing on a worker's own socket) is the encoder's business
// (wire.h). A non-empty `payload` is sent after `text <<` and ended by an empty line: one entry
// per line, each line ended by its LF (one string, not a string per line: a map replace sends
// 100,000 lines). Payload lines are never unescaped by HAProxy and must not be empty (an empty
// line ends the payload).
struct Command {
  int pid = 0;          // the worker the master relays it to; 0: the master itself
  std::string text;     // the command, without prefix or LF
  std::string payload;  // "entry 1\nentry 2\n", or empty
  // The master closes the connection after this command (`reload`): EOF completes its reply.
  bool closes_connection = false;

  // A command for the master itself (`show proc`, `reload`).
  static Command Master(std::string text) { return Command{0, std::move(text), {}, false}; }
  // A command the master relays to worker `pid` (`@!<pid>`: `@1` is relative, the worker with
  // the fewest reloads, and before 3.4 may name a worker still initialising during a reload).
  static Command ForWorker(int pid, std::string text) {
    return Command{pid, std::move(text), {}, false};
  }
  // `payload`: the lines, each ended by LF.
  static Command ForWorkerWithPayload(int pid, std::string text, std::string payload) {
    return Command{pid, std::move(text), std::move(payload), false};
  }
  // The number of payload lines (the master echoes a `+ ` prompt for each).
  size_t payload_lines() const;
};

// Checks the framing invariants: no LF/CR/NUL, no unescaped ';', no trailing lone backslash, no
// text that any HAProxy version would take as opening a payload (ending with "<<", or a last
// word starting with it; the encoder appends the one marker hawk means), sizes within the limits
// above (the master's line, `@!<pid> ` included), payload lines non-empty and free of LF/CR/NUL.
absl::Status ValidateCommand(const Command& command);

// Escapes a word for the worker CLI's tokenizer: '\\', ' ', '\t', ';' and '<' get a backslash
// (the worker drops a backslash before any byte but another backslash). Fails on bytes that
// cannot be escaped (LF, CR, NUL).
absl::StatusOr<std::string> EscapeWord(absl::string_view word);

}  // namespace hawk::cli

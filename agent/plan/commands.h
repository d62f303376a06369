#pragma once

// Actions (plan.h) → master-CLI commands for one worker, `@!<pid> …` (which reaches the current
// worker and leaving ones alike). Pure. Every command returned passes cli::ValidateCommand.
//
// Escaping: the master passes escapes through unchanged; the worker splits a line into words on
// unescaped spaces and tabs and then drops every backslash that escapes a byte (`\x` → x,
// `\\` → \). Words go through cli::EscapeWord (space, tab, ';', '\' and '<' escaped): 2.6 starts
// a payload when a line merely ends with "<<" (`add map m k a<<` hangs waiting for one, seen on
// 2.6.12) and 2.9+ when its last word starts with "<<", so no word may show a bare "<<".
//
// Map transactions (2.4+; each worker numbers its own versions): `prepare map <name>` answers
// "New version created: N"; then TransactionCommands adds the entries to version N and commits
// it. A fresh version is empty, so no `clear map @N`. Entries go in `add map @N <name> <<`
// payloads when they are payload-safe, else one by one as `add map @N <name> <key> <value>` with
// escaped words:
//   - A payload line is never unescaped. HAProxy's payload parser (src/map.c
//     cli_parse_add_map) takes the key up to the first space or tab, skips one separator and
//     then every space and tab, and takes the rest of the line as the value. So a key is
//     payload-safe when it is not empty and holds no space or tab (and, conservatively, does not
//     start with '#'), and a value when it neither starts nor ends with a space or tab. An empty
//     value is sent as the line "key " (the only form that can carry it: a CLI word cannot be
//     empty).
//   - Each payload command stays within cli::kMaxCommandWithPayloadBytes (12 KiB, prefix, " <<",
//     every LF and the final empty line included): 2.6 silently applies nothing past ~21 KB and
//     3.4.0 runs the tail of a ~32 KB payload as commands. Entries are sent sorted by key; an
//     escaped entry closes the payload before it.
//   - An entry whose payload line would not fit in 12 KiB is sent escaped, as a single line of
//     at most cli::kMaxLineBytes; longer than that, TransactionCommands fails.
// ACLs get no payload: `add acl` refuses one ("'add acl' expects two parameters: ACL identifier
// and pattern." on 2.6.12; the same check is in later src/map.c), so every pattern is one
// escaped `add acl @N <name> <pattern>`.
//
// Per-entry commands (EntryCommand) change the live map or ACL, one entry each: `set map <name>
// <key> <value>`, `add map <name> <key> <value>`, `del map <name> <key>`, `add|del acl <name>
// <pattern>`. Their replies (same on 2.6 and 3.4): "" on success, "entry not found." for `set
// map` on a key the map lacks, "Key not found." for `del` of what is not there. 2.6's `del map`
// removes every entry with that key, 3.4's only the first one: hawk never creates duplicates.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/cli/command.h"
#include "agent/model/desired.h"
#include "agent/plan/plan.h"

namespace hawk::plan {

// The command of a server action: `set server <b>/<s> addr <ip> [port <p>]`, `… fqdn <name>`,
// `… weight <w>`, `… state ready|drain|maint`. Empty for a map or ACL action, and for a name or
// address no escape can carry (LF, CR, NUL), which PlanWorker never hands out (it reports such
// objects as StaleItems).
std::vector<cli::Command> ServerCommands(int pid, const Action& action);

// The server actions the planner withheld from a frozen worker (Plan::withheld), reported as
// refused with `freeze_reply`, the reply that froze it: they are stale already and not sent again.
void AppendWithheld(int pid, const Plan& plan, const std::string& freeze_reply,
                    std::vector<model::Refusal>* refusals);

// `prepare map <name>` / `prepare acl <name>` for a kReplaceMap / kReplaceAcl action. For any
// other action, or a name no escape can carry, a Command with an empty line, which
// cli::ValidateCommand (and so the client) refuses: nothing wrong is ever sent.
cli::Command PrepareCommand(int pid, const Action& action);

// The rest of the transaction once `prepare` answered version `version`: the `add map|acl @N`
// commands for Action::content, then `commit map|acl @N <name>`. InvalidArgument for an action
// that is not a replace, a negative version, an empty key or pattern, an empty value whose key is
// not payload-safe, a byte no escape can carry, or an entry longer than cli::kMaxLineBytes once
// escaped.
absl::StatusOr<std::vector<cli::Command>> TransactionCommands(int pid, const Action& action,
                                                              int64_t version);

// The command of a per-entry action (kUpsertMapEntry: its `set map`). InvalidArgument for other
// actions, and for entries no command can carry (an empty value with `set map`: the planner
// sends those as del + add).
absl::StatusOr<cli::Command> EntryCommand(int pid, const Action& action);
// `add map <map> <key> <value>` (an empty value goes as the payload line "key "): kAddMapEntry,
// and the second step of kUpsertMapEntry after "entry not found.".
absl::StatusOr<cli::Command> AddMapEntryCommand(int pid, absl::string_view map,
                                                absl::string_view key, absl::string_view value);

// The first batch of a plan for worker `pid`, exactly as the reconciler sends it (and a dry run
// shows it): each server action's commands, each replace's `prepare`, each entry action's
// command, in plan order. Plan::withheld is not in it.
struct PlannedCommands {
  std::vector<cli::Command> commands;
  std::vector<size_t> action_of;  // commands[i] is for plan.actions[action_of[i]]
  // Entry actions no command can carry (EntryCommand's error): {action index, reason}.
  std::vector<std::pair<size_t, std::string>> unsendable;
};
PlannedCommands FirstBatch(int pid, const Plan& plan);

// The payload-safety rules above.
bool IsPayloadSafeKey(absl::string_view key);
bool IsPayloadSafeValue(absl::string_view value);

}  // namespace hawk::plan

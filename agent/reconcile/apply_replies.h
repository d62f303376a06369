#pragma once

// An apply's replies, judged: what HAProxy's answers to the commands of one phase of an apply
// mean for the worker (refusals, what stays stale, a freeze, the servers created and deleted)
// and, after the first phase, what the second sends (each replaced table's transaction entries
// and commit, the `add map` of an upsert that found no entry, the creation of a desired server
// the worker answered "No such server." for). Pure: no I/O, no clock; the reconciler applies the
// verdict.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/types/optional.h"
#include "agent/cli/command.h"
#include "agent/model/desired.h"
#include "agent/model/workers.h"
#include "agent/plan/plan.h"
#include "agent/reconcile/command_result.h"

namespace hawk::reconcile {

// Commands and what each was sent for: commands[i] is for plan.actions[action_of[i]].
struct SentCommands {
  std::vector<cli::Command> commands;
  std::vector<size_t> action_of;
};

struct Judged {
  std::vector<model::Refusal> refusals;
  std::vector<model::StaleObject> stale;
  absl::optional<std::string> frozen_by;  // the first reply that froze the worker's servers
  bool refused_unexpectedly = false;      // HAProxy refused something for no reason hawk knows
  SentCommands next;                      // the first phase's: what the second phase sends
  // The first phase's: actions the second phase adds to the plan (`next` names them by their
  // index after the plan's own): kAddServer of the servers the worker lacks.
  std::vector<plan::Action> next_actions;
  std::vector<plan::ServerKey> created;  // `add server` answered "New server registered."
  std::vector<plan::ServerKey> gone;     // deleted, or found gone already
  std::vector<plan::ServerKey> in_use;   // `del server` refused while connections remain
  // Created, then refused enabling (`Proxy is disabled.`: the leaving worker's grace ended
  // meanwhile): held in maintenance there, to be deleted again.
  std::vector<plan::ServerKey> undo;
};

// `plan`'s actions that no command can carry, refused with `reason` before anything is sent.
void JudgeUnsendable(const plan::Action& action, std::string command, std::string reason,
                     Judged* judged);

// The replies to the first phase, `results[i]` answering `sent.commands[i]` (the batch reached
// HAProxy: TransportFailure ruled it out). `leaving`: the worker is LEAVING. A server command
// answered "No such server." for a server `desired` holds, which `add server` can create
// (plan::WhyNotCreatable), has it created by the second phase instead of reported; without
// `create_servers` (a leaving worker past its grace) it is reported as not created there.
Judged JudgeFirstPhase(int pid, const plan::Plan& plan, const SentCommands& sent,
                       const std::vector<CommandResult>& results, bool leaving,
                       const model::DesiredState& desired, bool create_servers = true);
// The replies to the second phase: a server's creation as in the first phase, every other
// command as an add (a transaction's `add map @N` lines, the follow-up `add map`), the commit as
// the transaction's outcome. `plan` holds the first phase's next_actions.
Judged JudgeSecondPhase(const plan::Plan& plan, const SentCommands& sent,
                        const std::vector<CommandResult>& results, bool leaving);

}  // namespace hawk::reconcile

#pragma once

// An apply's replies, judged: what HAProxy's answers to the commands of one phase of an apply
// mean for the worker (refusals, what stays stale, a freeze) and, after the first phase, what
// the second sends (each replaced table's transaction entries and commit, the `add map` of an
// upsert that found no entry). Pure: no I/O, no clock; the reconciler applies the verdict.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/types/optional.h"
#include "agent/cli/command.h"
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
};

// `plan`'s actions that no command can carry, refused with `reason` before anything is sent.
void JudgeUnsendable(const plan::Action& action, std::string command, std::string reason,
                     Judged* judged);

// The replies to the first phase, `results[i]` answering `sent.commands[i]` (the batch reached
// HAProxy: TransportFailure ruled it out). `leaving`: the worker is LEAVING.
Judged JudgeFirstPhase(int pid, const plan::Plan& plan, const SentCommands& sent,
                       const std::vector<CommandResult>& results, bool leaving);
// The replies to the second phase: every command there is judged as an add (a transaction's
// `add map @N` lines, the follow-up `add map`), the commit as the transaction's outcome.
Judged JudgeSecondPhase(const plan::Plan& plan, const SentCommands& sent,
                        const std::vector<CommandResult>& results, bool leaving);

}  // namespace hawk::reconcile

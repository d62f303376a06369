#include "agent/reconcile/apply_replies.h"

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "agent/parse/reply.h"
#include "agent/plan/commands.h"
#include "agent/reconcile/reply_verdict.h"

namespace hawk::reconcile {
namespace {

// Records what the reply to `command` (sent for `action`) means. Returns the verdict.
ReplyVerdict Record(const plan::Action& action, const cli::Command& command,
                    const CommandResult& result, bool as_add, bool leaving, Judged* judged) {
  ActionReply reply = ClassifyActionReply(action, result, as_add, leaving);
  switch (reply.verdict) {
    case ReplyVerdict::kOk:
    case ReplyVerdict::kNeedsAdd:
      return reply.verdict;
    case ReplyVerdict::kFrozen:
      if (!judged->frozen_by.has_value()) judged->frozen_by = reply.text;
      break;
    case ReplyVerdict::kMissing:
      break;
    case ReplyVerdict::kRefused:
      if (reply.unexpected) judged->refused_unexpectedly = true;
      break;
  }
  judged->refusals.push_back(model::Refusal{action.object(), command.text, reply.text});
  if (reply.stale) judged->stale.push_back(*std::move(reply.stale));
  return reply.verdict;
}

}  // namespace

void JudgeUnsendable(const plan::Action& action, std::string command, std::string reason,
                     Judged* judged) {
  judged->stale.push_back(model::StaleObject{action.object(), action.field(), "", "",
                                             absl::StrCat("cannot be sent: ", reason)});
  judged->refusals.push_back(
      model::Refusal{action.object(), std::move(command), std::move(reason)});
}

Judged JudgeFirstPhase(int pid, const plan::Plan& plan, const SentCommands& sent,
                       const std::vector<CommandResult>& results, bool leaving) {
  Judged judged;
  for (size_t i = 0; i < sent.commands.size(); ++i) {
    size_t a = sent.action_of[i];
    const plan::Action& action = plan.actions[a];
    const cli::Command& command = sent.commands[i];
    if (plan::IsReplaceAction(action.kind)) {
      absl::StatusOr<int64_t> version =
          results[i].ok() ? parse::ParseNewVersion(*results[i]) : results[i].status();
      if (!version.ok()) {
        Record(action, command, results[i], /*as_add=*/false, leaving, &judged);
        continue;
      }
      absl::StatusOr<std::vector<cli::Command>> transaction =
          plan::TransactionCommands(pid, action, *version);
      if (!transaction.ok()) {
        JudgeUnsendable(action, command.text, std::string(transaction.status().message()), &judged);
        continue;
      }
      for (cli::Command& next : *transaction) {
        judged.next.commands.push_back(std::move(next));
        judged.next.action_of.push_back(a);
      }
      continue;
    }
    ReplyVerdict verdict = Record(action, command, results[i], /*as_add=*/false, leaving, &judged);
    if (verdict == ReplyVerdict::kNeedsAdd) {
      absl::StatusOr<cli::Command> add =
          plan::AddMapEntryCommand(pid, action.map_or_acl, action.key, action.value);
      if (!add.ok()) {
        JudgeUnsendable(action, "", std::string(add.status().message()), &judged);
        continue;
      }
      judged.next.commands.push_back(*std::move(add));
      judged.next.action_of.push_back(a);
    }
  }
  return judged;
}

Judged JudgeSecondPhase(const plan::Plan& plan, const SentCommands& sent,
                        const std::vector<CommandResult>& results, bool leaving) {
  Judged judged;
  for (size_t i = 0; i < sent.commands.size(); ++i) {
    Record(plan.actions[sent.action_of[i]], sent.commands[i], results[i], /*as_add=*/true, leaving,
           &judged);
  }
  return judged;
}

}  // namespace hawk::reconcile

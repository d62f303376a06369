#include "agent/reconcile/apply_replies.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
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
    case ReplyVerdict::kInUse:
      break;
    case ReplyVerdict::kRefused:
      if (reply.unexpected) judged->refused_unexpectedly = true;
      break;
  }
  judged->refusals.push_back(model::Refusal{action.object(), command.text, reply.text});
  if (reply.stale) judged->stale.push_back(*std::move(reply.stale));
  return reply.verdict;
}

bool IsLifecycle(plan::ActionKind kind) {
  return kind == plan::ActionKind::kAddServer || kind == plan::ActionKind::kDelServer;
}

// The replies to one kAddServer or kDelServer action's commands, sent[first, end), in
// plan::ServerCommands' order: `add server` then its state; maintenance then `del server`.
void JudgeLifecycle(const plan::Action& action, const SentCommands& sent,
                    const std::vector<CommandResult>& results, size_t first, size_t end,
                    bool leaving, Judged* judged) {
  plan::ServerKey key{action.backend, action.server};
  for (size_t i = first; i < end; ++i) {
    const cli::Command& command = sent.commands[i];
    bool last = i + 1 == end;  // `del server` (after the maintenance step, unless only_del)
    if (action.kind == plan::ActionKind::kAddServer) {
      ReplyVerdict verdict = Record(action, command, results[i], /*as_add=*/false, leaving, judged);
      if (verdict == ReplyVerdict::kFrozen && i != first) judged->undo.push_back(key);
      if (verdict != ReplyVerdict::kOk) {
        return;  // not created (or its state refused): what follows would fail the same way
      }
      if (i == first) judged->created.push_back(key);
      continue;
    }
    // kDelServer: a server already gone is what was wanted, at either step.
    ActionReply reply = ClassifyActionReply(action, results[i], /*as_add=*/false, leaving);
    if (reply.verdict == ReplyVerdict::kMissing) {
      judged->gone.push_back(key);
      return;
    }
    if (reply.verdict == ReplyVerdict::kInUse) {
      judged->in_use.push_back(key);
      return;
    }
    if (reply.verdict != ReplyVerdict::kOk) {
      Record(action, command, results[i], /*as_add=*/false, leaving, judged);
      return;
    }
    if (last) judged->gone.push_back(key);
  }
}

// The end of the run of commands sent for the same action as sent.commands[first].
size_t ActionEnd(const SentCommands& sent, size_t first) {
  size_t end = first + 1;
  while (end < sent.commands.size() && sent.action_of[end] == sent.action_of[first]) ++end;
  return end;
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
                       const std::vector<CommandResult>& results, bool leaving,
                       const model::DesiredState& desired, bool create_servers) {
  Judged judged;
  absl::flat_hash_set<std::string> creating;  // objects the second phase creates
  for (size_t i = 0; i < sent.commands.size(); ++i) {
    size_t a = sent.action_of[i];
    const plan::Action& action = plan.actions[a];
    const cli::Command& command = sent.commands[i];
    if (IsLifecycle(action.kind)) {
      size_t end = ActionEnd(sent, i);
      JudgeLifecycle(action, sent, results, i, end, leaving, &judged);
      i = end - 1;
      continue;
    }
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
    if (plan::IsServerAction(action.kind) && results[i].ok() &&
        parse::ClassifyMutationReply(*results[i]).code == parse::ReplyCode::kNoSuchServer) {
      const model::ServerSpec* spec = desired.FindServer(action.backend, action.server);
      if (spec != nullptr && plan::WhyNotCreatable(*spec).empty() && !create_servers) {
        if (creating.insert(action.object()).second) {
          judged.stale.push_back(model::StaleObject{action.object(), "", "present", "absent",
                                                    plan::kNoCreateAfterGraceReason});
        }
        continue;
      }
      if (spec != nullptr && plan::WhyNotCreatable(*spec).empty()) {
        // The worker lacks a server the desired state holds: create it, once, whatever field
        // this command set (the creation carries them all).
        if (creating.insert(action.object()).second) {
          plan::Action create;
          create.kind = plan::ActionKind::kAddServer;
          create.backend = action.backend;
          create.server = action.server;
          create.spec = *spec;
          size_t index = plan.actions.size() + judged.next_actions.size();
          for (cli::Command& next : plan::ServerCommands(pid, create)) {
            judged.next.commands.push_back(std::move(next));
            judged.next.action_of.push_back(index);
          }
          judged.next_actions.push_back(std::move(create));
        }
        continue;
      }
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
    const plan::Action& action = plan.actions[sent.action_of[i]];
    if (IsLifecycle(action.kind)) {
      size_t end = ActionEnd(sent, i);
      JudgeLifecycle(action, sent, results, i, end, leaving, &judged);
      i = end - 1;
      continue;
    }
    Record(action, sent.commands[i], results[i], /*as_add=*/true, leaving, &judged);
  }
  return judged;
}

}  // namespace hawk::reconcile

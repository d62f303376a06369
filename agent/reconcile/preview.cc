#include "agent/reconcile/preview.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/plan/commands.h"

namespace hawk::reconcile {

const char* PreviewBasisName(PreviewBasis basis) {
  switch (basis) {
    case PreviewBasis::kIncremental:
      return "INCREMENTAL";
    case PreviewBasis::kSeed:
      return "SEED";
    case PreviewBasis::kObserve:
      return "OBSERVE";
  }
  return "INCREMENTAL";
}

void DescribePlan(int pid, plan::Plan plan, const std::string& freeze_reply,
                  WorkerPreview* preview) {
  plan::AppendWithheld(pid, plan, freeze_reply, &preview->refused);
  plan::PlannedCommands batch = plan::FirstBatch(pid, plan);
  for (const auto& [a, reason] : batch.unsendable) {
    preview->refused.push_back(model::Refusal{plan.actions[a].object(), "", reason});
  }
  for (const cli::Command& command : batch.commands) {
    std::string text = command.text;
    if (!command.payload.empty()) absl::StrAppend(&text, " <<\n", command.payload);
    preview->commands.push_back(std::move(text));
  }
  for (const plan::Action& action : plan.actions) {
    if (plan::IsReplaceAction(action.kind) && action.content != nullptr) {
      preview->replaces.push_back(
          PreviewReplace{action.object(), static_cast<int64_t>(action.content->size())});
    }
  }
  preview->stale = std::move(plan.stale);
}

}  // namespace hawk::reconcile

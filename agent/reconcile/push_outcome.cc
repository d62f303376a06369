#include "agent/reconcile/push_outcome.h"

#include "absl/strings/str_cat.h"

namespace hawk::reconcile {

const char* PushResultName(PushResult result) {
  switch (result) {
    case PushResult::kApplied:
      return "APPLIED";
    case PushResult::kPartial:
      return "PARTIAL";
    case PushResult::kPending:
      return "PENDING";
  }
  return "PENDING";
}

WorkerOutcome OutcomeOnWorker(int pid, model::WorkerRole role, bool reached, bool busy,
                              const model::WorkerSync& sync, const StaleSet& stale) {
  WorkerOutcome outcome;
  outcome.pid = pid;
  outcome.role = role;
  if (reached) {
    outcome.result = sync.in_sync ? PushResult::kApplied : PushResult::kPartial;
    outcome.refused = sync.refused;
    outcome.stale = stale.Sorted();
  } else {
    outcome.reason = !sync.error.empty() ? absl::StrCat("retrying: ", sync.error)
                     : busy              ? "still applying"
                                         : "not started";
  }
  return outcome;
}

}  // namespace hawk::reconcile

#pragma once

// A push's outcome on each target worker, as Reconciler::WaitForPush answers it. Pure.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/optional.h"
#include "agent/model/workers.h"
#include "agent/reconcile/stale_set.h"

namespace hawk::reconcile {

// A push's outcome, per target worker (Reconciler::WaitForPush).
enum class PushResult {
  kApplied,  // the worker holds every desired object
  kPartial,  // the reconcile finished, but some objects are stale there (see refused/stale)
  kPending,  // not finished before the deadline
};
const char* PushResultName(PushResult result);

struct WorkerOutcome {
  int pid = 0;
  model::WorkerRole role = model::WorkerRole::kUnknown;
  PushResult result = PushResult::kPending;
  std::string reason;  // kPending: why the worker has not finished (busy, unreachable, …)
  std::vector<model::Refusal> refused;
  std::vector<model::StaleObject> stale;
};

struct PushOutcome {
  std::string version;
  absl::optional<int64_t> generation;
  std::vector<WorkerOutcome> workers;
};

// The outcome of a push on one target worker. `reached`: the worker's last completed reconcile
// covers the push (its `sync` and `stale` then say how it went); otherwise the reason says why
// not yet: `sync.error` (the last reconcile failed and is retried), `busy` (one is running), or
// none started.
WorkerOutcome OutcomeOnWorker(int pid, model::WorkerRole role, bool reached, bool busy,
                              const model::WorkerSync& sync, const StaleSet& stale);

}  // namespace hawk::reconcile

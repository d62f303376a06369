#pragma once

// What one push would do on each target worker, without doing it: the answer of a dry run
// (`PUT|PATCH /v1/state?dryRun=true`). Built by Reconciler::Preview with the same planner, the
// same planning options and the same command builder (plan::FirstBatch) as a real reconcile, so
// the commands listed are the ones the push would send while nothing else changes in between.

#include <cstdint>
#include <string>
#include <vector>

#include "agent/model/workers.h"
#include "agent/plan/plan.h"

namespace hawk::reconcile {

// What hawk knows of the worker, which decides how the push would reach it.
enum class PreviewBasis {
  kIncremental,  // it held the state before the pushes since: only the changes are sent
  kSeed,         // born from the configuration file after hawk started: the whole state is sent
  kObserve,      // what it holds is unknown: observed first, so the commands depend on that
};
const char* PreviewBasisName(PreviewBasis basis);  // "INCREMENTAL", "SEED", "OBSERVE"

// A table the push would replace in one transaction: after `prepare`, the entries go to the
// version the worker answers, then `commit`.
struct PreviewReplace {
  std::string object;  // "map/<name>", "acl/<name>" as StaleObject names them
  int64_t entries = 0;
};

struct WorkerPreview {
  int pid = 0;
  model::WorkerRole role = model::WorkerRole::kUnknown;
  PreviewBasis basis = PreviewBasis::kIncremental;
  // kIncremental, kSeed: the first batch as it would be sent, without the `@!<pid>` prefix; a
  // payload command as "<line> <<\n<payload>".
  std::vector<std::string> commands;
  std::vector<PreviewReplace> replaces;
  // What would be refused without being sent: a frozen worker's server changes (with the reply
  // that froze it), and entries no command can carry.
  std::vector<model::Refusal> refused;
  std::vector<model::StaleObject> stale;  // what would stay stale, and why
};

// Fills `preview` with what `plan` would send to worker `pid` first (plan::FirstBatch), what it
// would refuse unsent (the withheld server changes of a worker frozen by `freeze_reply`, entries no
// command can carry), the tables it would replace and what would stay stale.
void DescribePlan(int pid, plan::Plan plan, const std::string& freeze_reply,
                  WorkerPreview* preview);

}  // namespace hawk::reconcile

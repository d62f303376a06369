#pragma once

// Plans one server for the entry points of plan.h, following its rules for servers, whatever hawk
// knows of what the worker holds: the actions that set the managed fields it may lack, in their
// safe order, the StaleItems of what no command fixes, and (the one place that decides it) what
// a frozen worker is not sent. Pure.

#include <variant>

#include "absl/strings/string_view.h"
#include "agent/model/desired.h"
#include "agent/plan/observed.h"
#include "agent/plan/plan.h"

namespace hawk::plan {

// What the worker has of a server, as far as hawk knows. The references must outlive the call.
//   - a full observation showed it (`show servers state`): the fields that differ are set;
struct HasObserved {
  const ObservedServer& server;
};
//   - it held this spec before the pending changes (what hawk applied): the fields that changed
//     since are set;
struct HasPrevious {
  const model::ServerSpec& spec;
};
//   - nothing is known (a worker born from the configuration file, a server newly managed, an
//     apply that failed or was cut short): every managed field is set.
struct HasUnknown {};
using ServerHas = std::variant<HasObserved, HasPrevious, HasUnknown>;

// Appends to `plan` what makes server `backend`/`server` of a worker that has `has` hold `want`:
// its actions (Plan::withheld instead when `frozen`) and its StaleItems.
void PlanServer(absl::string_view backend, absl::string_view server, const model::ServerSpec& want,
                const ServerHas& has, bool frozen, Plan* plan);

// Appends to `plan` the creation of server `backend`/`server`, which the worker lacks, as `want`
// says (kAddServer; withheld when `frozen`), or the StaleItem of why it is not created
// (WhyNotCreatable; kNoCreateAfterGraceReason without `create`).
void PlanServerCreate(absl::string_view backend, absl::string_view server,
                      const model::ServerSpec& want, bool frozen, Plan* plan, bool create = true);

// Appends to `plan` the deletion of server `backend`/`server` (kDelServer; on a `frozen` worker
// `del server` alone, never withheld).
void PlanServerDelete(absl::string_view backend, absl::string_view server, bool frozen, Plan* plan);

}  // namespace hawk::plan

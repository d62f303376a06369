#pragma once

// Plans one map or ACL for the entry points of plan.h, following its rules for tables: per-entry
// commands for a few changed entries, a replace transaction otherwise. Pure.

#include <string>

#include "absl/strings/string_view.h"
#include "agent/model/string_table.h"
#include "agent/plan/observed.h"
#include "agent/plan/pending.h"
#include "agent/plan/plan.h"

namespace hawk::plan {

// A kReplaceMap (kReplaceAcl when `acl`) carrying `content`, a copy taken now.
Action ReplaceTable(bool acl, absl::string_view name, const model::StringTable& content);

// Makes the table `name` hold `want` on a worker where a full observation showed `have` (nullptr:
// not observed, taken as absent, a StaleItem).
void PlanObservedTable(bool acl, const std::string& name, const model::StringTable& want,
                       const ObservedTable* have, const PlanOptions& options, Plan* plan);

// The commands for the keys of `pending` on a worker that held the table before those changes;
// `want` is its desired content now (nullptr, or `pending.dropped`: no longer managed, nothing).
void PlanPendingTable(bool acl, const std::string& name, const PendingTable& pending,
                      const model::StringTable* want, const PlanOptions& options, Plan* plan);

}  // namespace hawk::plan

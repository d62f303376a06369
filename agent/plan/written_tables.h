#pragma once

// WrittenTables: what the map and ACL files hawk wrote before a reload hold — the entries written
// per table — and every change to the desired state since, merged as for a worker that holds what
// the files hold. A worker born after the write read those files when it started: its seed sends
// those tables only the changes since (TablesAtBirth) instead of their whole content. Pure.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/plan/pending.h"

namespace hawk::plan {

class WrittenTables {
 public:
  // File name → entries written.
  using Counts = absl::flat_hash_map<std::string, int64_t>;

  WrittenTables(Counts maps, Counts acls) : maps_(std::move(maps)), acls_(std::move(acls)) {}

  // The desired state changed as `summary` says (`desired` holds it). False when the changes
  // since the write grew past `max_objects`: the files are then too far behind to be worth it.
  bool Merge(const model::ChangeSummary& summary, const model::DesiredState& desired,
             size_t max_objects);
  // Whether the write named this table and nothing changed it since.
  bool Unchanged(bool acl, const std::string& name) const;
  bool empty() const { return maps_.empty() && acls_.empty(); }
  const Counts& maps() const { return maps_; }
  const Counts& acls() const { return acls_; }
  const PendingChanges& since() const { return since_; }

 private:
  Counts maps_;
  Counts acls_;
  PendingChanges since_;
};

}  // namespace hawk::plan

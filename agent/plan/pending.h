#pragma once

// PendingChanges: what one worker still lacks of the desired state, merged from the change
// summaries of every push since its last reconcile (model/delta.h). Pure.
//
// For each object only the value before the first change counts: a worker that held the state
// before those pushes holds exactly that, whatever happened in between. The desired value is
// looked up when planning, so an object changed ten times costs one command. A table whose
// pending keys grow past the replace threshold becomes one replace: memory stays bounded by the
// threshold, not by the pushes.

#include <cstddef>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/types/optional.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/string_table.h"

namespace hawk::plan {

struct PendingServer {
  absl::optional<model::ServerSpec> before;  // nullopt: not managed before the first change
};

struct PendingTable {
  bool replace = false;           // replace the whole content
  bool dropped = false;           // no longer managed (nothing to send)
  model::StringTable existed;     // key → value before the first change
  model::StringTable was_absent;  // keys absent before the first change

  size_t keys() const { return existed.size() + was_absent.size(); }
};

class PendingChanges {
 public:
  // Merges `summary`; `desired` is the state after it (for the tables' sizes).
  void Merge(const model::ChangeSummary& summary, const model::DesiredState& desired);
  // Merges changes that came after these (an apply cut short puts back what it carried, then the
  // pushes that arrived meanwhile): the earlier before-values win.
  void MergeLater(const PendingChanges& later, const model::DesiredState& desired);
  void Clear();
  bool empty() const { return servers_.empty() && maps_.empty() && acls_.empty(); }
  // Objects held: servers, table keys, and one per replaced or dropped table.
  size_t size() const;

  using ServerKey = std::pair<std::string, std::string>;  // backend, server
  const absl::flat_hash_map<ServerKey, PendingServer>& servers() const { return servers_; }
  const absl::flat_hash_map<std::string, PendingTable>& maps() const { return maps_; }
  const absl::flat_hash_map<std::string, PendingTable>& acls() const { return acls_; }

 private:
  absl::flat_hash_map<ServerKey, PendingServer> servers_;
  absl::flat_hash_map<std::string, PendingTable> maps_;
  absl::flat_hash_map<std::string, PendingTable> acls_;
};

}  // namespace hawk::plan

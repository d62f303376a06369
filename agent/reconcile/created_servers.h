#pragma once

// CreatedServers: the servers hawk created on one worker — with `add server`, or written into the
// configuration the worker may have started from (birth/servers_in_config.h) — which are the only
// servers hawk ever deletes there; those of them the desired state no longer holds (to delete:
// plan::PlanOptions::delete_servers); and those HAProxy refused to delete while connections remain
// (draining). Pure: the Worker owns one and feeds it the changes and the judged replies.

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/plan/plan.h"
#include "agent/reconcile/apply_replies.h"

namespace hawk::reconcile {

class CreatedServers {
 public:
  using Key = plan::ServerKey;

  // `from_config`: the servers in hawk's blocks of the configuration file.
  explicit CreatedServers(absl::flat_hash_set<Key> from_config = {});

  // The desired state changed as `summary` says: a created server it no longer holds is to be
  // deleted, one it holds again is not. O(servers in the summary).
  void Changed(const model::ChangeSummary& summary);
  // The desired state was replaced whole by `desired`. O(created servers).
  void Replaced(const model::DesiredState& desired);
  // What an apply's replies said: servers created, deleted (or gone already), refused deletion
  // while connections remain, or created and then refused enabling (a leaving worker whose grace
  // ended meanwhile: deleted again). True when a delete is due at once.
  bool Take(const Judged& judged);

  const absl::flat_hash_set<Key>& to_delete() const { return deleting_; }
  bool draining() const { return !draining_.empty(); }
  // "<backend>/<server>", sorted.
  std::vector<std::string> CreatedNames() const { return Names(created_); }
  std::vector<std::string> DrainingNames() const { return Names(draining_); }

 private:
  static std::vector<std::string> Names(const absl::flat_hash_set<Key>& keys);

  absl::flat_hash_set<Key> created_;
  absl::flat_hash_set<Key> deleting_;  // ⊆ created_
  absl::flat_hash_set<Key> draining_;  // ⊆ deleting_
};

}  // namespace hawk::reconcile

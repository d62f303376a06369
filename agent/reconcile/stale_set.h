#pragma once

// What stays stale on one worker (StaleSet), and the live streams still served by its stale
// servers. Pure: no I/O, no clock.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/model/workers.h"
#include "agent/plan/pending.h"

namespace hawk::reconcile {

// The objects that stay stale on one worker, by object and field ("" for the whole object).
// Kept across incremental reconciles: an object leaves it when a later change plans it again,
// or when a full reconcile recomputes everything.
class StaleSet {
 public:
  void Add(model::StaleObject item);
  void AddAll(const std::vector<model::StaleObject>& items);
  void Clear() { by_object_.clear(); }
  bool empty() const { return by_object_.empty(); }
  // Forgets what `taken` is about to replan: changed servers, replaced or dropped tables, and the
  // changed entries of the others.
  void ForgetChanged(const plan::PendingChanges& taken);
  // Forgets everything about `object` ("backend/<b>" of a backend no longer managed, …).
  void ForgetObject(const std::string& object) { by_object_.erase(object); }
  // "backend/<b>/server/<s>" of every stale server.
  absl::flat_hash_set<std::string> Servers() const;
  bool HasServers() const;
  // Sorted by object, then field.
  std::vector<model::StaleObject> Sorted() const;
  size_t size() const;

 private:
  absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, model::StaleObject>> by_object_;
};

// Live streams (`show sess`, CLI sessions excluded) whose server is stale in `stale`.
absl::StatusOr<int64_t> CountSessionsOnStaleServers(absl::string_view show_sess,
                                                    const StaleSet& stale);

}  // namespace hawk::reconcile

#include "agent/reconcile/created_servers.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hawk::reconcile {

CreatedServers::CreatedServers(absl::flat_hash_set<Key> from_config)
    : created_(std::move(from_config)) {}

void CreatedServers::Changed(const model::ChangeSummary& summary) {
  if (created_.empty()) return;
  for (const model::ServerChange& change : summary.servers) {
    Key key{change.backend, change.server};
    if (!created_.contains(key)) continue;
    if (change.managed_after) {
      deleting_.erase(key);  // desired again before it was deleted
      draining_.erase(key);
    } else {
      deleting_.insert(std::move(key));
    }
  }
}

void CreatedServers::Replaced(const model::DesiredState& desired) {
  deleting_.clear();
  for (const Key& key : created_) {
    if (desired.FindServer(key.first, key.second) == nullptr) deleting_.insert(key);
  }
  absl::erase_if(draining_, [&](const Key& key) { return !deleting_.contains(key); });
}

bool CreatedServers::Take(const Judged& judged) {
  for (const Key& key : judged.created) created_.insert(key);
  for (const Key& key : judged.gone) {
    created_.erase(key);
    deleting_.erase(key);
    draining_.erase(key);
  }
  for (const Key& key : judged.in_use) draining_.insert(key);
  // Held in maintenance on a worker that refuses to enable it: it goes again at once (a frozen
  // worker still takes `del server` of a server in maintenance), and stays reported stale.
  for (const Key& key : judged.undo) deleting_.insert(key);
  return !judged.undo.empty();
}

std::vector<std::string> CreatedServers::Names(const absl::flat_hash_set<Key>& keys) {
  std::vector<std::string> names;
  names.reserve(keys.size());
  for (const auto& [backend, server] : keys) names.push_back(absl::StrCat(backend, "/", server));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace hawk::reconcile

#include "agent/plan/pending.h"

#include <algorithm>

namespace hawk::plan {
namespace {

void MergeTables(const std::vector<model::TableChange>& changes,
                 const absl::flat_hash_map<std::string, model::StringTable>& desired,
                 absl::flat_hash_map<std::string, PendingTable>* pending) {
  for (const model::TableChange& change : changes) {
    PendingTable& table = (*pending)[change.name];
    if (change.dropped) {
      table = PendingTable{};
      table.dropped = true;
      continue;
    }
    if (table.dropped || change.replace) {
      // Dropped then managed again, or replaced now: what the worker holds is unknown.
      table = PendingTable{};
      table.replace = true;
      continue;
    }
    if (table.replace) continue;  // a replace sends the latest content anyway
    change.existed.ForEach([&table](absl::string_view key, absl::string_view before) {
      if (!table.existed.Contains(key) && !table.was_absent.Contains(key)) {
        table.existed.Set(key, before);
      }
    });
    change.was_absent.ForEach([&table](absl::string_view key, absl::string_view) {
      if (!table.existed.Contains(key) && !table.was_absent.Contains(key)) {
        table.was_absent.Set(key, "");
      }
    });
    auto found = desired.find(change.name);
    size_t size = found == desired.end() ? 0 : found->second.size();
    if (model::ReplaceIsCheaper(table.keys(), size)) {
      table = PendingTable{};
      table.replace = true;
    }
  }
}

}  // namespace

void PendingChanges::Merge(const model::ChangeSummary& summary,
                           const model::DesiredState& desired) {
  for (const model::ServerChange& change : summary.servers) {
    // try_emplace keeps the first before-value.
    servers_.try_emplace(ServerKey(change.backend, change.server), PendingServer{change.before});
  }
  MergeTables(summary.maps, desired.maps, &maps_);
  MergeTables(summary.acls, desired.acls, &acls_);
}

void PendingChanges::MergeLater(const PendingChanges& later, const model::DesiredState& desired) {
  for (const auto& [key, server] : later.servers_) servers_.try_emplace(key, server);
  auto tables = [](const absl::flat_hash_map<std::string, PendingTable>& from,
                   const absl::flat_hash_map<std::string, model::StringTable>& sizes,
                   absl::flat_hash_map<std::string, PendingTable>* into) {
    std::vector<model::TableChange> as_changes;
    for (const auto& [name, table] : from) {
      model::TableChange change;
      change.name = name;
      change.dropped = table.dropped;
      change.replace = table.replace;
      change.existed = table.existed;
      change.was_absent = table.was_absent;
      as_changes.push_back(std::move(change));
    }
    MergeTables(as_changes, sizes, into);
  };
  tables(later.maps_, desired.maps, &maps_);
  tables(later.acls_, desired.acls, &acls_);
}

void PendingChanges::Clear() {
  servers_.clear();
  maps_.clear();
  acls_.clear();
}

size_t PendingChanges::size() const {
  size_t n = servers_.size();
  for (const auto& [name, table] : maps_) n += std::max<size_t>(1, table.keys());
  for (const auto& [name, table] : acls_) n += std::max<size_t>(1, table.keys());
  return n;
}

}  // namespace hawk::plan

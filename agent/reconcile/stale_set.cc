#include "agent/reconcile/stale_set.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_split.h"
#include "agent/parse/show_sess.h"
#include "agent/plan/plan.h"

namespace hawk::reconcile {
namespace {

// "backend/<be>/server/<srv>" → (be, srv); names cannot hold '/' (validated).
bool SplitServerObject(absl::string_view object, std::string* backend, std::string* server) {
  std::vector<std::string> parts = absl::StrSplit(object, '/');
  if (parts.size() != 4 || parts[0] != "backend" || parts[2] != "server") return false;
  *backend = parts[1];
  *server = parts[3];
  return true;
}

}  // namespace

void StaleSet::Add(model::StaleObject item) {
  auto& fields = by_object_[item.object];
  std::string field = item.field;
  fields[field] = std::move(item);
}

void StaleSet::AddAll(const std::vector<model::StaleObject>& items) {
  for (const model::StaleObject& item : items) Add(item);
}

void StaleSet::ForgetChanged(const plan::PendingChanges& taken) {
  if (by_object_.empty()) return;
  for (const auto& [key, unused] : taken.servers()) {
    by_object_.erase(plan::ServerObject(key.first, key.second));
  }
  auto tables = [this](absl::string_view kind,
                       const absl::flat_hash_map<std::string, plan::PendingTable>& pending) {
    for (const auto& [name, table] : pending) {
      std::string object = absl::StrCat(kind, "/", name);
      if (table.replace || table.dropped) {
        by_object_.erase(object);
        continue;
      }
      auto it = by_object_.find(object);
      if (it == by_object_.end()) continue;
      absl::string_view prefix = kind == "map" ? "entries/" : "patterns/";
      auto forget = [&](absl::string_view key, absl::string_view) {
        it->second.erase(absl::StrCat(prefix, key));
      };
      table.existed.ForEach(forget);
      table.was_absent.ForEach(forget);
      if (it->second.empty()) by_object_.erase(it);
    }
  };
  tables("map", taken.maps());
  tables("acl", taken.acls());
}

absl::flat_hash_set<std::string> StaleSet::Servers() const {
  absl::flat_hash_set<std::string> out;
  for (const auto& [object, fields] : by_object_) {
    if (absl::StartsWith(object, "backend/") && absl::StrContains(object, "/server/")) {
      out.insert(object);
    }
  }
  return out;
}

bool StaleSet::HasServers() const {
  return std::any_of(by_object_.begin(), by_object_.end(),
                     [](const auto& entry) { return absl::StartsWith(entry.first, "backend/"); });
}

std::vector<model::StaleObject> StaleSet::Sorted() const {
  std::vector<model::StaleObject> out;
  out.reserve(size());
  for (const auto& [object, fields] : by_object_) {
    for (const auto& [field, item] : fields) out.push_back(item);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.object, a.field) < std::tie(b.object, b.field);
  });
  return out;
}

size_t StaleSet::size() const {
  size_t n = 0;
  for (const auto& [object, fields] : by_object_) n += fields.size();
  return n;
}

absl::StatusOr<int64_t> CountSessionsOnStaleServers(absl::string_view show_sess,
                                                    const StaleSet& stale) {
  absl::StatusOr<std::vector<parse::SessionRow>> rows = parse::ParseShowSess(show_sess);
  if (!rows.ok()) return rows.status();
  absl::flat_hash_set<std::pair<std::string, std::string>> servers;
  for (const std::string& object : stale.Servers()) {
    std::string backend, server;
    if (SplitServerObject(object, &backend, &server)) servers.emplace(backend, server);
  }
  int64_t count = 0;
  for (const parse::SessionRow& row : *rows) {
    if (row.is_cli()) continue;
    if (servers.contains(std::make_pair(row.backend, row.server))) ++count;
  }
  return count;
}

}  // namespace hawk::reconcile

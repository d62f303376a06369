#include "tests/support/model_oracle.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace hawk::model {
namespace {

using Tables = absl::flat_hash_map<std::string, StringTable>;

template <typename V>
std::vector<std::string> SortedKeysOf(const absl::flat_hash_map<std::string, V>& items) {
  std::vector<std::string> keys;
  keys.reserve(items.size());
  for (const auto& [key, value] : items) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

// The delta that turns table `from` (nullptr: not managed) into `to`.
absl::optional<TableDelta> DiffTable(const std::string& name, const StringTable* from,
                                     StringTable to) {
  TableDelta delta;
  delta.name = name;
  if (from == nullptr) {
    delta.create = true;
    delta.set = std::move(to);
    return delta;
  }
  to.ForEach([&](absl::string_view key, absl::string_view value) {
    absl::optional<absl::string_view> have = from->Find(key);
    if (!have || *have != value) delta.set.Set(key, value);
  });
  from->ForEach([&](absl::string_view key, absl::string_view) {
    if (!to.Contains(key)) delta.erase.Set(key, "");
  });
  if (delta.set.empty() && delta.erase.empty()) return absl::nullopt;
  return delta;
}

std::vector<TableDelta> DiffTables(const Tables& from, Tables to) {
  std::vector<TableDelta> out;
  for (const std::string& name : SortedKeysOf(from)) {
    if (!to.contains(name)) {
      TableDelta drop;
      drop.name = name;
      drop.drop = true;
      out.push_back(std::move(drop));
    }
  }
  for (const std::string& name : SortedKeysOf(to)) {
    auto have = from.find(name);
    absl::optional<TableDelta> delta =
        DiffTable(name, have == from.end() ? nullptr : &have->second, std::move(to[name]));
    if (delta) out.push_back(*std::move(delta));
  }
  return out;
}

}  // namespace

Delta DiffStates(const DesiredState& from, DesiredState to) {
  Delta delta;
  delta.version = to.version;
  delta.generation = to.generation;
  for (const std::string& name : SortedKeysOf(from.backends)) {
    if (!to.backends.contains(name)) {
      BackendDelta drop;
      drop.name = name;
      drop.drop = true;
      delta.backends.push_back(std::move(drop));
    }
  }
  for (const std::string& name : SortedKeysOf(to.backends)) {
    auto have = from.backends.find(name);
    auto& want = to.backends[name].servers;
    BackendDelta backend;
    backend.name = name;
    backend.create = have == from.backends.end();
    for (const std::string& server : SortedKeysOf(want)) {
      const ServerSpec* before = backend.create ? nullptr : from.FindServer(name, server);
      if (before == nullptr || !(*before == want[server])) {
        backend.servers.emplace_back(server, std::move(want[server]));
      }
    }
    if (!backend.create) {
      for (const std::string& server : SortedKeysOf(have->second.servers)) {
        if (!want.contains(server)) backend.servers.emplace_back(server, absl::nullopt);
      }
    }
    if (backend.create || !backend.servers.empty()) delta.backends.push_back(std::move(backend));
  }
  delta.maps = DiffTables(from.maps, std::move(to.maps));
  delta.acls = DiffTables(from.acls, std::move(to.acls));
  return delta;
}

DesiredState StateFromDelta(const Delta& delta) {
  DesiredState state;
  ApplyDelta(delta, &state);
  return state;
}

Delta DeltaFromState(const DesiredState& state) { return DiffStates(DesiredState{}, state); }

bool SameContent(const DesiredState& a, const DesiredState& b) {
  return a.backends == b.backends && a.maps == b.maps && a.acls == b.acls;
}

}  // namespace hawk::model

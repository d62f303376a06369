#pragma once

// The desired runtime state a controller pushes (PUT/PATCH /v1/state), as hawk holds it: indexed
// by name and key, so that a change of one object costs O(1) to apply, to diff and to plan, and
// stored compactly (map and ACL contents in StringTables). Plain data, validated by
// desired_json.h before anything uses it. hawk manages exactly the backends' servers, maps and
// ACLs listed here and leaves everything else alone.
//
// Hash maps have no order: whatever is written out or planned goes through Sorted*() first, so
// output and plans stay deterministic.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/model/string_table.h"

namespace hawk::model {

enum class ServerState {
  kReady,  // in rotation: `set server b/s state ready`
  kDrain,  // no new sessions except persistent ones: `state drain`
  kMaint,  // out of rotation: `state maint`
};

// What hawk manages of one server.
struct ServerSpec {
  // An IPv4 or IPv6 literal (`set server b/s addr`), or a hostname (`set server b/s fqdn`, which
  // needs a resolvers section in HAProxy's config).
  std::string address;
  absl::optional<int> port;           // 1..65535; unmanaged when absent
  absl::optional<int> weight;         // 0..256; unmanaged when absent
  absl::optional<ServerState> state;  // unmanaged when absent

  friend bool operator==(const ServerSpec&, const ServerSpec&) = default;
};

struct DesiredBackend {
  absl::flat_hash_map<std::string, ServerSpec> servers;  // by server name

  friend bool operator==(const DesiredBackend&, const DesiredBackend&) = default;
};

struct DesiredState {
  std::string version;                 // the controller's label, reported back as appliedVersion
  absl::optional<int64_t> generation;  // monotonic when present (see ordering in the API)
  absl::flat_hash_map<std::string, DesiredBackend> backends;  // by backend name
  // By the map's file path, as `show map` lists it: key → value. Replaced or edited per entry.
  absl::flat_hash_map<std::string, StringTable> maps;
  // By the ACL's file path, as `show acl` lists it: pattern → "" (a set of patterns).
  absl::flat_hash_map<std::string, StringTable> acls;

  friend bool operator==(const DesiredState&, const DesiredState&) = default;

  // Lookups: nullptr when the object is not managed.
  const ServerSpec* FindServer(absl::string_view backend, absl::string_view server) const;
  const StringTable* FindMap(absl::string_view name) const;
  const StringTable* FindAcl(absl::string_view name) const;

  size_t server_count() const;
  size_t map_entry_count() const;
  size_t acl_pattern_count() const;

  // Where the bytes go, for the memory report: heap bytes of each part (approximate: container
  // capacities and string heap blocks, not malloc's own overhead).
  struct Memory {
    size_t servers = 0;
    size_t map_entries = 0;
    size_t acl_patterns = 0;
    size_t total() const { return servers + map_entries + acl_patterns; }
  };
  Memory MemoryUsage() const;
};

const char* ServerStateName(ServerState state);  // "READY", "DRAIN", "MAINT"
// The inverse of ServerStateName (exact, case-sensitive names); nullopt for anything else.
absl::optional<ServerState> ServerStateFromName(absl::string_view name);

// The entries of a hash map by name, sorted by name: pointers into `items`.
template <typename V>
std::vector<std::pair<const std::string*, const V*>> SortedByName(
    const absl::flat_hash_map<std::string, V>& items) {
  std::vector<std::pair<const std::string*, const V*>> sorted;
  sorted.reserve(items.size());
  for (const auto& [name, value] : items) sorted.emplace_back(&name, &value);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  return sorted;
}

}  // namespace hawk::model

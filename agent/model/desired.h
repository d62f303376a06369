#pragma once

// The desired runtime state a controller pushes (PUT /v1/state): plain data, validated by
// desired_json.h before anything uses it. hawk manages exactly the backends' servers, maps and
// ACLs listed here and leaves everything else alone.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::model {

enum class ServerState {
  kReady,  // in rotation: `set server b/s state ready`
  kDrain,  // no new sessions except persistent ones: `state drain`
  kMaint,  // out of rotation: `state maint`
};

struct DesiredServer {
  std::string name;
  // An IPv4 or IPv6 literal (`set server b/s addr`), or a hostname (`set server b/s fqdn`, which
  // needs a resolvers section in HAProxy's config).
  std::string address;
  absl::optional<int> port;           // 1..65535; unmanaged when absent
  absl::optional<int> weight;         // 0..256; unmanaged when absent
  absl::optional<ServerState> state;  // unmanaged when absent

  friend bool operator==(const DesiredServer&, const DesiredServer&) = default;
};

struct DesiredBackend {
  std::string name;
  std::vector<DesiredServer> servers;  // sorted by name, names unique

  friend bool operator==(const DesiredBackend&, const DesiredBackend&) = default;
};

struct MapEntry {
  std::string key;
  std::string value;

  friend bool operator==(const MapEntry&, const MapEntry&) = default;
  friend bool operator<(const MapEntry& a, const MapEntry& b) { return a.key < b.key; }
};

// The whole content of one map: replaced atomically on every worker.
struct DesiredMap {
  std::string name;               // the map's file path, as `show map` lists it
  std::vector<MapEntry> entries;  // sorted by key, keys unique

  friend bool operator==(const DesiredMap&, const DesiredMap&) = default;
};

struct DesiredAcl {
  std::string name;                   // the ACL's file path, as `show acl` lists it
  std::vector<std::string> patterns;  // sorted, unique

  friend bool operator==(const DesiredAcl&, const DesiredAcl&) = default;
};

struct DesiredState {
  std::string version;                   // the controller's label, reported back as appliedVersion
  absl::optional<int64_t> generation;    // monotonic when present (see ordering in the API)
  std::vector<DesiredBackend> backends;  // sorted by name, names unique
  std::vector<DesiredMap> maps;          // sorted by name
  std::vector<DesiredAcl> acls;          // sorted by name

  friend bool operator==(const DesiredState&, const DesiredState&) = default;
  // Same objects and values, whatever the version label and generation.
  bool SameContent(const DesiredState& other) const {
    return backends == other.backends && maps == other.maps && acls == other.acls;
  }
};

const char* ServerStateName(ServerState state);  // "READY", "DRAIN", "MAINT"
// The inverse of ServerStateName (exact, case-sensitive names); nullopt for anything else.
absl::optional<ServerState> ServerStateFromName(absl::string_view name);

}  // namespace hawk::model

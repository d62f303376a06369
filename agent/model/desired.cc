#include "agent/model/desired.h"

namespace hawk::model {
namespace {

// A std::string's heap block, if it has one (libstdc++ keeps up to 15 bytes inline).
size_t StringHeapBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

// A flat_hash_map's slots and control bytes.
template <typename M>
size_t TableBytes(const M& m) {
  return m.capacity() * (sizeof(typename M::value_type) + 1);
}

}  // namespace

const char* ServerStateName(ServerState state) {
  switch (state) {
    case ServerState::kReady:
      return "READY";
    case ServerState::kDrain:
      return "DRAIN";
    case ServerState::kMaint:
      return "MAINT";
  }
  return "UNKNOWN";  // not reached: every enumerator is handled above
}

absl::optional<ServerState> ServerStateFromName(absl::string_view name) {
  for (ServerState state : {ServerState::kReady, ServerState::kDrain, ServerState::kMaint}) {
    if (name == ServerStateName(state)) return state;
  }
  return absl::nullopt;
}

const ServerSpec* DesiredState::FindServer(absl::string_view backend,
                                           absl::string_view server) const {
  auto b = backends.find(backend);
  if (b == backends.end()) return nullptr;
  auto s = b->second.servers.find(server);
  return s == b->second.servers.end() ? nullptr : &s->second;
}

const StringTable* DesiredState::FindMap(absl::string_view name) const {
  auto it = maps.find(name);
  return it == maps.end() ? nullptr : &it->second;
}

const StringTable* DesiredState::FindAcl(absl::string_view name) const {
  auto it = acls.find(name);
  return it == acls.end() ? nullptr : &it->second;
}

size_t DesiredState::server_count() const {
  size_t n = 0;
  for (const auto& [name, backend] : backends) n += backend.servers.size();
  return n;
}

size_t DesiredState::map_entry_count() const {
  size_t n = 0;
  for (const auto& [name, table] : maps) n += table.size();
  return n;
}

size_t DesiredState::acl_pattern_count() const {
  size_t n = 0;
  for (const auto& [name, table] : acls) n += table.size();
  return n;
}

DesiredState::Memory DesiredState::MemoryUsage() const {
  Memory m;
  m.servers = TableBytes(backends);
  for (const auto& [name, backend] : backends) {
    m.servers += StringHeapBytes(name) + TableBytes(backend.servers);
    for (const auto& [server, spec] : backend.servers) {
      m.servers += StringHeapBytes(server) + StringHeapBytes(spec.address);
    }
  }
  m.map_entries = TableBytes(maps);
  for (const auto& [name, table] : maps)
    m.map_entries += StringHeapBytes(name) + table.MemoryBytes();
  m.acl_patterns = TableBytes(acls);
  for (const auto& [name, table] : acls) {
    m.acl_patterns += StringHeapBytes(name) + table.MemoryBytes();
  }
  return m;
}

}  // namespace hawk::model

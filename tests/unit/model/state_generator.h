#pragma once

// Random desired states and deltas valid against them, for property tests of the model. Small
// name pools, so that random states and deltas keep running into each other.

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/string_table.h"

namespace hawk::model {

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  DesiredState State() {
    DesiredState state;
    state.version = Coin() ? absl::StrCat("v", Int(0, 99)) : "";
    if (Coin()) state.generation = Int(0, 99);
    for (int b = 0; b < kBackends; ++b) {
      if (!Coin()) continue;
      DesiredBackend& backend = state.backends[BackendName(b)];
      for (int s = 0; s < kServers; ++s) {
        if (Coin()) backend.servers[ServerName(s)] = RandomSpec();
      }
    }
    for (int t = 0; t < kTables; ++t) {
      if (Coin()) state.maps[TableName(t)] = RandomTable(/*acl=*/false);
      if (Coin()) state.acls[TableName(t)] = RandomTable(/*acl=*/true);
    }
    return state;
  }

  // A delta valid against `state`, as a PATCH, a PUT's diff or a journal record would be: one
  // entry per object, no key both set and erased, removals only of what could be held.
  Delta DeltaFor(const DesiredState& state) {
    Delta delta;
    delta.version = Coin() ? absl::StrCat("v", Int(0, 99)) : state.version;
    delta.generation = Coin() ? absl::optional<int64_t>(Int(0, 99)) : state.generation;
    for (int b = 0; b < kBackends; ++b) {
      if (Int(0, 2) == 0) continue;
      BackendDelta backend;
      backend.name = BackendName(b);
      bool held = state.backends.contains(backend.name);
      int action = Int(0, 9);
      if (action == 0) {
        backend.drop = true;  // a no-op when not held
      } else {
        backend.create = !held;
        for (int s = 0; s < kServers; ++s) {
          if (!Coin()) continue;
          const ServerSpec* have = state.FindServer(backend.name, ServerName(s));
          absl::optional<ServerSpec> spec;
          int kind = Int(0, 3);
          if (kind == 0 && held) {
            spec = absl::nullopt;  // no longer managed (a no-op when not held)
          } else if (kind == 1 && have != nullptr) {
            spec = *have;  // the same again: a no-op
          } else {
            spec = RandomSpec();
          }
          backend.servers.emplace_back(ServerName(s), std::move(spec));
        }
      }
      delta.backends.push_back(std::move(backend));
    }
    for (bool acl : {false, true}) {
      for (int t = 0; t < kTables; ++t) {
        if (Int(0, 2) == 0) continue;
        const StringTable* have = acl ? state.FindAcl(TableName(t)) : state.FindMap(TableName(t));
        TableDelta table;
        table.name = TableName(t);
        int action = Int(0, 9);
        if (action == 0) {
          table.drop = true;  // a no-op when not held
        } else if (have == nullptr || action == 1) {
          table.create = true;  // on a held table: it holds exactly `set` afterwards
          table.set = RandomTable(acl);
        } else {
          std::set<std::string> touched;
          for (int n = Int(0, 12); n > 0; --n) {
            std::string key = Key(acl);
            if (!touched.insert(key).second) continue;
            absl::optional<absl::string_view> now = have->Find(key);
            int kind = Int(0, 3);
            if (kind == 0) {
              table.erase.Set(key, "");  // a no-op when absent
            } else if (kind == 1 && now) {
              table.set.Set(key, *now);  // the same value again: a no-op
            } else {
              table.set.Set(key, acl ? "" : Value());
            }
          }
        }
        (acl ? delta.acls : delta.maps).push_back(std::move(table));
      }
    }
    return delta;
  }

  // Another state sharing much with `state`.
  DesiredState Mutated(const DesiredState& state) {
    DesiredState out = state;
    ApplyDelta(DeltaFor(state), &out);
    if (Coin()) ApplyDelta(DeltaFor(out), &out);
    return out;
  }

  bool Coin() { return Int(0, 1) == 1; }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  static constexpr int kBackends = 5;
  static constexpr int kServers = 6;
  static constexpr int kTables = 4;
  static constexpr int kKeys = 40;

  static std::string BackendName(int i) { return absl::StrCat("be", i); }
  static std::string ServerName(int i) { return absl::StrCat("s", i); }
  static std::string TableName(int i) { return absl::StrCat("/etc/haproxy/t", i); }

  ServerSpec RandomSpec() {
    ServerSpec spec;
    spec.address = absl::StrCat("10.0.0.", Int(1, 3));
    if (Coin()) spec.port = Int(80, 82);
    if (Coin()) spec.weight = Int(0, 2);
    if (Coin()) spec.state = static_cast<ServerState>(Int(0, 2));
    return spec;
  }
  std::string Key(bool acl) {
    return absl::StrCat(acl ? "10.0." : "k ", Int(0, kKeys - 1), Coin() ? "" : ";\\x");
  }
  std::string Value() { return absl::StrCat("be_", Int(0, 3)); }
  StringTable RandomTable(bool acl) {
    StringTable table;
    for (int n = Int(0, 25); n > 0; --n) table.Set(Key(acl), acl ? "" : Value());
    return table;
  }

  std::mt19937 rng_;
};

}  // namespace hawk::model

#pragma once

// Small helpers to write desired states in tests: model::DesiredState is indexed (hash maps of
// backends → servers, maps and ACLs in StringTables), which is verbose to fill by hand.
//
//   model::DesiredState desired = Desired()
//       .Server("be_app", "web1", Spec("10.0.0.1", 8080, 10, model::ServerState::kReady))
//       .Map("/etc/haproxy/hosts.map", {{"a.example.com", "be_app"}})
//       .Acl("/etc/haproxy/blocked.acl", {"10.0.0.0/8"});

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/model/desired.h"
#include "agent/model/string_table.h"

namespace hawk::plan::testing {

inline model::ServerSpec Spec(std::string address, absl::optional<int> port = absl::nullopt,
                              absl::optional<int> weight = absl::nullopt,
                              absl::optional<model::ServerState> state = absl::nullopt) {
  return model::ServerSpec{std::move(address), port, weight, state};
}

inline model::StringTable Table(
    std::initializer_list<std::pair<absl::string_view, absl::string_view>> entries) {
  model::StringTable table;
  for (const auto& [key, value] : entries) table.Set(key, value);
  return table;
}

inline model::StringTable Table(const std::vector<std::pair<std::string, std::string>>& entries) {
  model::StringTable table;
  for (const auto& [key, value] : entries) table.Set(key, value);
  return table;
}

inline model::StringTable Patterns(std::initializer_list<absl::string_view> patterns) {
  model::StringTable table;
  for (absl::string_view pattern : patterns) table.Set(pattern, "");
  return table;
}

class Desired {
 public:
  Desired& Version(std::string version) {
    state_.version = std::move(version);
    return *this;
  }
  // A managed backend without servers (or nothing more, when it is already there).
  Desired& Backend(const std::string& backend) {
    state_.backends[backend];
    return *this;
  }
  Desired& Server(const std::string& backend, const std::string& server, model::ServerSpec spec) {
    state_.backends[backend].servers[server] = std::move(spec);
    return *this;
  }
  Desired& Map(const std::string& name, model::StringTable entries) {
    state_.maps[name] = std::move(entries);
    return *this;
  }
  Desired& Map(const std::string& name,
               std::initializer_list<std::pair<absl::string_view, absl::string_view>> entries) {
    return Map(name, Table(entries));
  }
  Desired& Acl(const std::string& name, model::StringTable patterns) {
    state_.acls[name] = std::move(patterns);
    return *this;
  }
  Desired& Acl(const std::string& name, std::initializer_list<absl::string_view> patterns) {
    return Acl(name, Patterns(patterns));
  }

  model::DesiredState Build() const { return state_; }
  operator model::DesiredState() const { return state_; }  // NOLINT: a builder

 private:
  model::DesiredState state_;
};

}  // namespace hawk::plan::testing

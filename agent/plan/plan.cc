#include "agent/plan/plan.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/parse/servers_state.h"

namespace hawk::plan {
namespace {

constexpr char kFqdnPortReason[] =
    "the port of an FQDN server can only change with its address: HAProxy has no port-only "
    "`set server` command";
constexpr char kUnsendableReason[] =
    "cannot be sent on a CLI line: the name or address holds LF, CR or NUL";

// An IP address in binary form: AF_INET or AF_INET6 and its bytes (4 or 16 used).
struct IpAddress {
  int family = 0;
  std::array<unsigned char, 16> bytes{};
  friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

absl::optional<IpAddress> ParseIp(absl::string_view text) {
  // inet_pton reads a C string: an embedded NUL would hide the bytes after it.
  char buffer[INET6_ADDRSTRLEN];
  if (text.empty() || text.size() >= sizeof(buffer) || text.find('\0') != absl::string_view::npos) {
    return absl::nullopt;
  }
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  IpAddress ip;
  if (inet_pton(AF_INET, buffer, ip.bytes.data()) == 1) {
    ip.family = AF_INET;
    return ip;
  }
  if (inet_pton(AF_INET6, buffer, ip.bytes.data()) == 1) {
    ip.family = AF_INET6;
    return ip;
  }
  return absl::nullopt;
}

// Bytes that end a CLI line and that no escape can carry (cli::EscapeWord refuses them).
bool Sendable(absl::string_view text) {
  return text.find_first_of(absl::string_view("\n\r\0", 3)) == absl::string_view::npos;
}

std::string ServerObject(absl::string_view backend, absl::string_view server) {
  return absl::StrCat("backend/", backend, "/server/", server);
}

// What the admin bits amount to: "MAINT (srv_admin_state 0x05: FMAINT CMAINT)", "READY".
std::string DescribeAdmin(int admin) {
  const char* effective = (admin & parse::kAdminMaintMask)   ? "MAINT"
                          : (admin & parse::kAdminDrainMask) ? "DRAIN"
                                                             : "READY";
  if (admin == 0) return effective;
  std::vector<std::string> names;
  constexpr std::pair<int, const char*> kBits[] = {
      {parse::kAdminFMaint, "FMAINT"}, {parse::kAdminIMaint, "IMAINT"},
      {parse::kAdminCMaint, "CMAINT"}, {parse::kAdminFDrain, "FDRAIN"},
      {parse::kAdminIDrain, "IDRAIN"}, {parse::kAdminRMaint, "RMAINT"}};
  for (const auto& [bit, name] : kBits) {
    if (admin & bit) names.emplace_back(name);
  }
  return absl::StrCat(effective, " (srv_admin_state 0x", absl::Hex(admin, absl::kZeroPad2),
                      names.empty() ? "" : ": ", absl::StrJoin(names, " "), ")");
}

// Whether the admin bits already give `state` as hawk sets it.
bool StateHolds(model::ServerState state, int admin) {
  bool fmaint = (admin & parse::kAdminFMaint) != 0;
  bool fdrain = (admin & parse::kAdminFDrain) != 0;
  switch (state) {
    case model::ServerState::kReady:
      return !fmaint && !fdrain;
    case model::ServerState::kDrain:
      return !fmaint && fdrain;
    case model::ServerState::kMaint:
      return fmaint;
  }
  return false;
}

template <typename T>
std::vector<const T*> SortedByName(const std::vector<T>& items) {
  std::vector<const T*> sorted;
  sorted.reserve(items.size());
  for (const T& item : items) sorted.push_back(&item);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const T* a, const T* b) { return a->name < b->name; });
  return sorted;
}

Action ServerAction(ActionKind kind, absl::string_view backend, absl::string_view server) {
  Action action;
  action.kind = kind;
  action.backend = std::string(backend);
  action.server = std::string(server);
  return action;
}

// Appends the server's actions in their safe order: state first when it stops traffic (MAINT,
// DRAIN), last when it lets traffic in (READY), after the address and weight changes.
void AppendInOrder(const model::DesiredServer& want, std::vector<Action> changes,
                   absl::optional<Action> state, Plan* plan) {
  bool state_first = state && want.state && *want.state != model::ServerState::kReady;
  if (state_first) plan->actions.push_back(std::move(*state));
  for (Action& action : changes) plan->actions.push_back(std::move(action));
  if (state && !state_first) plan->actions.push_back(std::move(*state));
}

void PlanServer(absl::string_view backend, const model::DesiredServer& want,
                const ObservedServer& have, bool frozen, Plan* plan) {
  std::string object = ServerObject(backend, want.name);
  auto stale = [&](absl::string_view field, std::string desired, std::string actual,
                   absl::string_view reason) {
    plan->stale.push_back(StaleItem{object, std::string(field), std::move(desired),
                                    std::move(actual), std::string(reason)});
  };
  std::vector<Action> changes;  // address or fqdn, then weight
  absl::optional<Action> state;

  if (absl::optional<IpAddress> ip = ParseIp(want.address)) {
    bool address_differs = ParseIp(have.address) != ip;
    bool port_differs = want.port && *want.port != have.port;
    if (frozen) {
      if (address_differs) stale("address", want.address, have.address, kFrozenReason);
      if (port_differs) {
        stale("port", absl::StrCat(*want.port), absl::StrCat(have.port), kFrozenReason);
      }
    } else if (address_differs || port_differs) {
      Action action = ServerAction(ActionKind::kSetAddress, backend, want.name);
      action.address = want.address;
      action.port = want.port;  // when managed, always sent along: `addr <ip> port <p>`
      changes.push_back(std::move(action));
    }
  } else {
    if (!absl::EqualsIgnoreCase(want.address, have.fqdn)) {
      if (frozen) {
        stale("fqdn", want.address, have.fqdn, kFrozenReason);
      } else {
        Action action = ServerAction(ActionKind::kSetFqdn, backend, want.name);
        action.fqdn = want.address;
        changes.push_back(std::move(action));
      }
    }
    if (want.port && *want.port != have.port) {
      stale("port", absl::StrCat(*want.port), absl::StrCat(have.port), kFqdnPortReason);
    }
  }

  if (want.weight && *want.weight != have.user_weight) {
    if (frozen) {
      stale("weight", absl::StrCat(*want.weight), absl::StrCat(have.user_weight), kFrozenReason);
    } else {
      Action action = ServerAction(ActionKind::kSetWeight, backend, want.name);
      action.weight = *want.weight;
      changes.push_back(std::move(action));
    }
  }

  if (want.state) {
    int admin = have.admin_state;
    if (!StateHolds(*want.state, admin)) {
      if (frozen) {
        stale("state", model::ServerStateName(*want.state), DescribeAdmin(admin), kFrozenReason);
      } else {
        state = ServerAction(ActionKind::kSetState, backend, want.name);
        state->state = *want.state;
      }
    }
    // Bits no CLI command clears: the server stays out of rotation (or draining) whatever hawk
    // sends. `actual` is what remains once hawk's own bits are right, so the item reads the same
    // before and after the apply.
    if (*want.state != model::ServerState::kMaint) {
      std::vector<std::string> causes;
      if (admin & parse::kAdminIMaint) {
        causes.push_back("maintenance inherited from a tracked server (IMAINT)");
      }
      if (admin & parse::kAdminRMaint) causes.push_back("DNS resolution failed (RMAINT)");
      if (*want.state == model::ServerState::kReady && (admin & parse::kAdminIDrain)) {
        causes.push_back("drain inherited from a tracked server (IDRAIN)");
      }
      if (!causes.empty()) {
        bool maint = (admin & (parse::kAdminIMaint | parse::kAdminRMaint)) != 0;
        stale("state", model::ServerStateName(*want.state), maint ? "MAINT" : "DRAIN",
              absl::StrCat("hawk cannot clear ", absl::StrJoin(causes, "; ")));
      }
    }
  }
  AppendInOrder(want, std::move(changes), std::move(state), plan);
}

void PlanBackends(const model::DesiredState& desired, const ObservedWorker& observed, bool frozen,
                  Plan* plan) {
  for (const model::DesiredBackend* backend : SortedByName(desired.backends)) {
    std::string backend_object = absl::StrCat("backend/", backend->name);
    if (!Sendable(backend->name)) {
      plan->stale.push_back(StaleItem{backend_object, "", "present", "unknown", kUnsendableReason});
      continue;
    }
    auto found = observed.backends.find(backend->name);
    if (found == observed.backends.end() || !found->second.present) {
      plan->stale.push_back(StaleItem{backend_object, "", "present", "absent",
                                      absl::StrCat("worker has no backend ", backend->name)});
      continue;
    }
    const ObservedBackend& have = found->second;
    for (const model::DesiredServer* server : SortedByName(backend->servers)) {
      std::string object = ServerObject(backend->name, server->name);
      if (!Sendable(server->name) || !Sendable(server->address)) {
        plan->stale.push_back(StaleItem{object, "", "present", "unknown", kUnsendableReason});
        continue;
      }
      auto have_server = have.servers.find(server->name);
      if (have_server == have.servers.end()) {
        plan->stale.push_back(
            StaleItem{object, "", "present", "absent",
                      absl::StrCat("worker has no server ", backend->name, "/", server->name)});
        continue;
      }
      PlanServer(backend->name, *server, have_server->second, frozen, plan);
    }
  }
}

std::vector<std::string> SortedLines(const std::vector<model::MapEntry>& entries) {
  std::vector<std::string> lines;
  lines.reserve(entries.size());
  for (const model::MapEntry& entry : entries) {
    lines.push_back(absl::StrCat(entry.key, " ", entry.value));
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::vector<std::string> SortedSet(std::vector<std::string> items) {
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  return items;
}

Action ReplaceMap(const model::DesiredMap& map) {
  Action action;
  action.kind = ActionKind::kReplaceMap;
  action.map_or_acl = map.name;
  action.entries = map.entries;
  return action;
}

Action ReplaceAcl(const model::DesiredAcl& acl) {
  Action action;
  action.kind = ActionKind::kReplaceAcl;
  action.map_or_acl = acl.name;
  action.patterns = acl.patterns;
  return action;
}

// The map or ACL's StaleItem when it cannot be planned on this worker, or nullopt.
template <typename Observed>
absl::optional<StaleItem> MissingPatternRef(absl::string_view kind, const std::string& name,
                                            const absl::flat_hash_map<std::string, Observed>& have,
                                            const Observed** found) {
  std::string object = absl::StrCat(kind, "/", name);
  if (!Sendable(name)) return StaleItem{object, "", "present", "unknown", kUnsendableReason};
  auto it = have.find(name);
  if (it == have.end() || !it->second.present) {
    return StaleItem{object, "", "present", "absent",
                     absl::StrCat("worker has no ", kind, " ", name)};
  }
  *found = &it->second;
  return absl::nullopt;
}

void PlanPatternRefs(const model::DesiredState& desired, const ObservedWorker& observed,
                     Plan* plan) {
  for (const model::DesiredMap* map : SortedByName(desired.maps)) {
    const ObservedMap* have = nullptr;
    if (absl::optional<StaleItem> missing =
            MissingPatternRef("map", map->name, observed.maps, &have)) {
      plan->stale.push_back(std::move(*missing));
      continue;
    }
    std::vector<std::string> have_lines = have->lines;
    std::sort(have_lines.begin(), have_lines.end());
    if (have_lines != SortedLines(map->entries)) plan->actions.push_back(ReplaceMap(*map));
  }
  for (const model::DesiredAcl* acl : SortedByName(desired.acls)) {
    const ObservedAcl* have = nullptr;
    if (absl::optional<StaleItem> missing =
            MissingPatternRef("acl", acl->name, observed.acls, &have)) {
      plan->stale.push_back(std::move(*missing));
      continue;
    }
    if (SortedSet(have->patterns) != SortedSet(acl->patterns)) {
      plan->actions.push_back(ReplaceAcl(*acl));
    }
  }
}

}  // namespace

std::string Action::object() const {
  switch (kind) {
    case ActionKind::kSetAddress:
    case ActionKind::kSetFqdn:
    case ActionKind::kSetWeight:
    case ActionKind::kSetState:
      return ServerObject(backend, server);
    case ActionKind::kReplaceMap:
      return absl::StrCat("map/", map_or_acl);
    case ActionKind::kReplaceAcl:
      return absl::StrCat("acl/", map_or_acl);
  }
  return "";
}

std::string Action::field() const {
  switch (kind) {
    case ActionKind::kSetAddress:
      return "address";
    case ActionKind::kSetFqdn:
      return "fqdn";
    case ActionKind::kSetWeight:
      return "weight";
    case ActionKind::kSetState:
      return "state";
    case ActionKind::kReplaceMap:
      return "entries";
    case ActionKind::kReplaceAcl:
      return "patterns";
  }
  return "";
}

bool IsIpLiteral(absl::string_view text) { return ParseIp(text).has_value(); }

Plan PlanWorker(const model::DesiredState& desired, const ObservedWorker& observed,
                const PlanOptions& options) {
  Plan plan;
  PlanBackends(desired, observed, options.servers_frozen, &plan);
  PlanPatternRefs(desired, observed, &plan);
  return plan;
}

Plan PlanFullSeed(const model::DesiredState& desired) {
  Plan plan;
  for (const model::DesiredBackend* backend : SortedByName(desired.backends)) {
    if (!Sendable(backend->name)) {
      plan.stale.push_back(StaleItem{absl::StrCat("backend/", backend->name), "", "present",
                                     "unknown", kUnsendableReason});
      continue;
    }
    for (const model::DesiredServer* server : SortedByName(backend->servers)) {
      if (!Sendable(server->name) || !Sendable(server->address)) {
        plan.stale.push_back(StaleItem{ServerObject(backend->name, server->name), "", "present",
                                       "unknown", kUnsendableReason});
        continue;
      }
      std::vector<Action> changes;
      if (IsIpLiteral(server->address)) {
        Action action = ServerAction(ActionKind::kSetAddress, backend->name, server->name);
        action.address = server->address;
        action.port = server->port;
        changes.push_back(std::move(action));
      } else {
        Action action = ServerAction(ActionKind::kSetFqdn, backend->name, server->name);
        action.fqdn = server->address;
        changes.push_back(std::move(action));
      }
      if (server->weight) {
        Action action = ServerAction(ActionKind::kSetWeight, backend->name, server->name);
        action.weight = *server->weight;
        changes.push_back(std::move(action));
      }
      absl::optional<Action> state;
      if (server->state) {
        state = ServerAction(ActionKind::kSetState, backend->name, server->name);
        state->state = *server->state;
      }
      AppendInOrder(*server, std::move(changes), std::move(state), &plan);
    }
  }
  for (const model::DesiredMap* map : SortedByName(desired.maps)) {
    if (!Sendable(map->name)) {
      plan.stale.push_back(
          StaleItem{absl::StrCat("map/", map->name), "", "present", "unknown", kUnsendableReason});
      continue;
    }
    plan.actions.push_back(ReplaceMap(*map));
  }
  for (const model::DesiredAcl* acl : SortedByName(desired.acls)) {
    if (!Sendable(acl->name)) {
      plan.stale.push_back(
          StaleItem{absl::StrCat("acl/", acl->name), "", "present", "unknown", kUnsendableReason});
      continue;
    }
    plan.actions.push_back(ReplaceAcl(*acl));
  }
  return plan;
}

}  // namespace hawk::plan

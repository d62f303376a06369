// The planner's entry points (plan.h): which objects to plan, in which order, against what hawk
// knows of the worker. One map or ACL is planned by table_plan.cc.

#include "agent/plan/plan.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/model/cli_safety.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/table_plan.h"

namespace hawk::plan {
namespace {

constexpr char kFqdnPortReason[] =
    "the port of an FQDN server can only change with its address: HAProxy has no port-only "
    "`set server` command";

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

Action ServerAction(ActionKind kind, absl::string_view backend, absl::string_view server) {
  Action action;
  action.kind = kind;
  action.backend = std::string(backend);
  action.server = std::string(server);
  return action;
}

// Sends `action`, or withholds it from a frozen worker: it would be refused ("Proxy is
// disabled."), and the field stays stale for that reason whatever else the plan found about it.
void Send(Action action, bool frozen, Plan* plan) {
  if (!frozen) {
    plan->actions.push_back(std::move(action));
    return;
  }
  StaleItem item = FrozenItem(action);
  auto first = plan->stale.end();  // this server's items are the last ones
  while (first != plan->stale.begin() && std::prev(first)->object == item.object) --first;
  plan->stale.erase(std::remove_if(first, plan->stale.end(),
                                   [&item](const StaleItem& s) { return s.field == item.field; }),
                    plan->stale.end());
  plan->stale.push_back(std::move(item));
  plan->withheld.push_back(std::move(action));
}

// Appends the server's actions in their safe order: state first when it stops traffic (MAINT,
// DRAIN), last when it lets traffic in (READY), after the address and weight changes.
void AppendInOrder(const model::ServerSpec& want, std::vector<Action> changes,
                   absl::optional<Action> state, bool frozen, Plan* plan) {
  bool state_first = state && want.state && *want.state != model::ServerState::kReady;
  if (state_first) Send(std::move(*state), frozen, plan);
  for (Action& action : changes) Send(std::move(action), frozen, plan);
  if (state && !state_first) Send(std::move(*state), frozen, plan);
}

void PlanServer(absl::string_view backend, absl::string_view name, const model::ServerSpec& want,
                const ObservedServer& have, bool frozen, Plan* plan) {
  std::string object = ServerObject(backend, name);
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
    if (address_differs || port_differs) {
      Action action = ServerAction(ActionKind::kSetAddress, backend, name);
      action.address = want.address;
      action.port = want.port;  // when managed, always sent along: `addr <ip> port <p>`
      changes.push_back(std::move(action));
    }
  } else {
    if (!absl::EqualsIgnoreCase(want.address, have.fqdn)) {
      Action action = ServerAction(ActionKind::kSetFqdn, backend, name);
      action.fqdn = want.address;
      changes.push_back(std::move(action));
    }
    if (want.port && *want.port != have.port) {
      stale("port", absl::StrCat(*want.port), absl::StrCat(have.port), kFqdnPortReason);
    }
  }

  if (want.weight && *want.weight != have.user_weight) {
    Action action = ServerAction(ActionKind::kSetWeight, backend, name);
    action.weight = *want.weight;
    changes.push_back(std::move(action));
  }

  if (want.state) {
    int admin = have.admin_state;
    if (!StateHolds(*want.state, admin)) {
      state = ServerAction(ActionKind::kSetState, backend, name);
      state->state = *want.state;
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
  AppendInOrder(want, std::move(changes), std::move(state), frozen, plan);
}

// Every managed field of a server, for a worker whose state is unknown.
void PlanServerFully(absl::string_view backend, absl::string_view name,
                     const model::ServerSpec& spec, bool frozen, Plan* plan) {
  std::vector<Action> changes;
  if (model::IsIpLiteral(spec.address)) {
    Action action = ServerAction(ActionKind::kSetAddress, backend, name);
    action.address = spec.address;
    action.port = spec.port;
    changes.push_back(std::move(action));
  } else {
    Action action = ServerAction(ActionKind::kSetFqdn, backend, name);
    action.fqdn = spec.address;
    changes.push_back(std::move(action));
  }
  if (spec.weight) {
    Action action = ServerAction(ActionKind::kSetWeight, backend, name);
    action.weight = *spec.weight;
    changes.push_back(std::move(action));
  }
  absl::optional<Action> state;
  if (spec.state) {
    state = ServerAction(ActionKind::kSetState, backend, name);
    state->state = *spec.state;
  }
  AppendInOrder(spec, std::move(changes), std::move(state), frozen, plan);
}

std::string OptionalText(const absl::optional<int>& value) {
  return value ? absl::StrCat(*value) : "unmanaged";
}

// The fields of a server that changed from `before` to `now`, for a worker that held `before`.
void PlanServerChange(absl::string_view backend, absl::string_view name,
                      const model::ServerSpec& before, const model::ServerSpec& now, bool frozen,
                      Plan* plan) {
  std::string object = ServerObject(backend, name);
  auto stale = [&](absl::string_view field, std::string desired, std::string actual,
                   absl::string_view reason) {
    plan->stale.push_back(StaleItem{object, std::string(field), std::move(desired),
                                    std::move(actual), std::string(reason)});
  };
  std::vector<Action> changes;
  absl::optional<Action> state;
  bool ip = model::IsIpLiteral(now.address);
  bool address_changed = before.address != now.address;
  bool port_changed = now.port && now.port != before.port;
  if (ip && (address_changed || port_changed)) {
    Action action = ServerAction(ActionKind::kSetAddress, backend, name);
    action.address = now.address;
    action.port = now.port;
    changes.push_back(std::move(action));
  } else if (!ip) {
    if (address_changed) {
      Action action = ServerAction(ActionKind::kSetFqdn, backend, name);
      action.fqdn = now.address;
      changes.push_back(std::move(action));
    }
    if (port_changed) {
      stale("port", OptionalText(now.port), OptionalText(before.port), kFqdnPortReason);
    }
  }
  if (now.weight && now.weight != before.weight) {
    Action action = ServerAction(ActionKind::kSetWeight, backend, name);
    action.weight = *now.weight;
    changes.push_back(std::move(action));
  }
  if (now.state && now.state != before.state) {
    state = ServerAction(ActionKind::kSetState, backend, name);
    state->state = *now.state;
  }
  AppendInOrder(now, std::move(changes), std::move(state), frozen, plan);
}

}  // namespace

bool IsServerAction(ActionKind kind) {
  return kind == ActionKind::kSetAddress || kind == ActionKind::kSetFqdn ||
         kind == ActionKind::kSetWeight || kind == ActionKind::kSetState;
}

bool IsReplaceAction(ActionKind kind) {
  return kind == ActionKind::kReplaceMap || kind == ActionKind::kReplaceAcl;
}

std::string ServerObject(absl::string_view backend, absl::string_view server) {
  return absl::StrCat("backend/", backend, "/server/", server);
}

std::string Action::object() const {
  switch (kind) {
    case ActionKind::kSetAddress:
    case ActionKind::kSetFqdn:
    case ActionKind::kSetWeight:
    case ActionKind::kSetState:
      return ServerObject(backend, server);
    case ActionKind::kReplaceMap:
    case ActionKind::kSetMapEntry:
    case ActionKind::kAddMapEntry:
    case ActionKind::kUpsertMapEntry:
    case ActionKind::kDelMapEntry:
      return absl::StrCat("map/", map_or_acl);
    case ActionKind::kReplaceAcl:
    case ActionKind::kAddAclPattern:
    case ActionKind::kDelAclPattern:
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
    case ActionKind::kSetMapEntry:
    case ActionKind::kAddMapEntry:
    case ActionKind::kUpsertMapEntry:
    case ActionKind::kDelMapEntry:
      return absl::StrCat("entries/", key);
    case ActionKind::kAddAclPattern:
    case ActionKind::kDelAclPattern:
      return absl::StrCat("patterns/", key);
  }
  return "";
}

std::string Action::desired() const {
  switch (kind) {
    case ActionKind::kSetAddress:
      return port ? absl::StrCat(address, ":", *port) : address;
    case ActionKind::kSetFqdn:
      return fqdn;
    case ActionKind::kSetWeight:
      return absl::StrCat(weight);
    case ActionKind::kSetState:
      return model::ServerStateName(state);
    case ActionKind::kReplaceMap:
    case ActionKind::kReplaceAcl:
      return absl::StrCat(content ? content->size() : 0, " entries");
    case ActionKind::kSetMapEntry:
    case ActionKind::kAddMapEntry:
    case ActionKind::kUpsertMapEntry:
      return value;
    case ActionKind::kDelMapEntry:
    case ActionKind::kDelAclPattern:
      return "absent";
    case ActionKind::kAddAclPattern:
      return "present";
  }
  return "";
}

bool operator==(const Action& a, const Action& b) {
  bool same_content = a.content == b.content ||
                      (a.content != nullptr && b.content != nullptr && *a.content == *b.content);
  return a.kind == b.kind && a.backend == b.backend && a.server == b.server &&
         a.address == b.address && a.port == b.port && a.fqdn == b.fqdn && a.weight == b.weight &&
         a.state == b.state && a.map_or_acl == b.map_or_acl && a.key == b.key &&
         a.value == b.value && same_content;
}

StaleItem FrozenItem(const Action& action) {
  return StaleItem{action.object(), action.field(), action.desired(), "", kFrozenReason};
}

Plan PlanChanges(const model::DesiredState& desired, const PendingChanges& pending,
                 const PlanOptions& options) {
  Plan plan;
  std::vector<const PendingChanges::ServerKey*> servers;
  servers.reserve(pending.servers().size());
  for (const auto& [key, unused] : pending.servers()) servers.push_back(&key);
  std::sort(servers.begin(), servers.end(), [](const auto* a, const auto* b) { return *a < *b; });
  for (const PendingChanges::ServerKey* key : servers) {
    const auto& [backend, name] = *key;
    const model::ServerSpec* now = desired.FindServer(backend, name);
    if (now == nullptr) continue;  // no longer managed
    const PendingServer& change = pending.servers().at(*key);
    // After a cut apply the worker may hold anything between the value before and the one sent:
    // every managed field goes again.
    bool failed_before =
        options.uncertain || (options.stale_servers != nullptr &&
                              options.stale_servers->contains(ServerObject(backend, name)));
    if (!change.before || failed_before) {
      PlanServerFully(backend, name, *now, options.servers_frozen, &plan);
      continue;
    }
    PlanServerChange(backend, name, *change.before, *now, options.servers_frozen, &plan);
  }
  for (const auto& [name, table] : model::SortedByName(pending.maps())) {
    PlanPendingTable(/*acl=*/false, *name, *table, desired.FindMap(*name), options, &plan);
  }
  for (const auto& [name, table] : model::SortedByName(pending.acls())) {
    PlanPendingTable(/*acl=*/true, *name, *table, desired.FindAcl(*name), options, &plan);
  }
  return plan;
}

Plan PlanWorker(const model::DesiredState& desired, const ObservedWorker& observed,
                const PlanOptions& options) {
  Plan plan;
  for (const auto& [name, backend] : model::SortedByName(desired.backends)) {
    std::string backend_object = absl::StrCat("backend/", *name);
    auto found = observed.backends.find(*name);
    if (found == observed.backends.end() || !found->second.present) {
      plan.stale.push_back(StaleItem{backend_object, "", "present", "absent",
                                     absl::StrCat("worker has no backend ", *name)});
      continue;
    }
    const ObservedBackend& have = found->second;
    for (const auto& [server, spec] : model::SortedByName(backend->servers)) {
      auto have_server = have.servers.find(*server);
      if (have_server == have.servers.end()) {
        plan.stale.push_back(StaleItem{ServerObject(*name, *server), "", "present", "absent",
                                       absl::StrCat("worker has no server ", *name, "/", *server)});
        continue;
      }
      PlanServer(*name, *server, *spec, have_server->second, options.servers_frozen, &plan);
    }
  }
  auto observed_table = [](const absl::flat_hash_map<std::string, ObservedTable>& tables,
                           const std::string& name) -> const ObservedTable* {
    auto it = tables.find(name);
    return it == tables.end() ? nullptr : &it->second;
  };
  for (const auto& [name, table] : model::SortedByName(desired.maps)) {
    PlanObservedTable(/*acl=*/false, *name, *table, observed_table(observed.maps, *name), options,
                      &plan);
  }
  for (const auto& [name, table] : model::SortedByName(desired.acls)) {
    PlanObservedTable(/*acl=*/true, *name, *table, observed_table(observed.acls, *name), options,
                      &plan);
  }
  return plan;
}

Plan PlanFullSeed(const model::DesiredState& desired, const TablesAtBirth* born,
                  const PlanOptions& options) {
  Plan plan;
  for (const auto& [name, backend] : model::SortedByName(desired.backends)) {
    for (const auto& [server, spec] : model::SortedByName(backend->servers)) {
      PlanServerFully(*name, *server, *spec, options.servers_frozen, &plan);
    }
  }
  auto seed_table = [&](bool acl, const std::string& name, const model::StringTable& table) {
    const absl::flat_hash_set<std::string>* held = nullptr;
    const absl::flat_hash_map<std::string, PendingTable>* changed = nullptr;
    if (born != nullptr) {
      held = acl ? &born->acls : &born->maps;
      changed = acl ? &born->since->acls() : &born->since->maps();
    }
    if (held == nullptr || !held->contains(name)) {
      plan.actions.push_back(ReplaceTable(acl, name, table));
      return;
    }
    auto change = changed->find(name);
    if (change != changed->end()) {
      PlanOptions table_options;
      table_options.entry_lookup = options.entry_lookup;
      PlanPendingTable(acl, name, change->second, &table, table_options, &plan);
    }
  };
  for (const auto& [name, table] : model::SortedByName(desired.maps)) {
    seed_table(/*acl=*/false, *name, *table);
  }
  for (const auto& [name, table] : model::SortedByName(desired.acls)) {
    seed_table(/*acl=*/true, *name, *table);
  }
  return plan;
}

}  // namespace hawk::plan

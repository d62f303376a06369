// The planner's entry points (plan.h): which objects to plan, in which order, against what hawk
// knows of the worker. One server is planned by server_plan.cc, one map or ACL by table_plan.cc.

#include "agent/plan/plan.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/model/cli_safety.h"
#include "agent/plan/server_plan.h"
#include "agent/plan/table_plan.h"

namespace hawk::plan {

bool IsServerAction(ActionKind kind) {
  return kind == ActionKind::kSetAddress || kind == ActionKind::kSetFqdn ||
         kind == ActionKind::kSetWeight || kind == ActionKind::kSetState ||
         kind == ActionKind::kAddServer || kind == ActionKind::kDelServer;
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
    case ActionKind::kAddServer:
    case ActionKind::kDelServer:
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
    case ActionKind::kAddServer:
    case ActionKind::kDelServer:
      return "";
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
    case ActionKind::kDelServer:
      return "absent";
    case ActionKind::kAddAclPattern:
    case ActionKind::kAddServer:
      return "present";
  }
  return "";
}

bool operator==(const Action& a, const Action& b) {
  bool same_content = a.content == b.content ||
                      (a.content != nullptr && b.content != nullptr && *a.content == *b.content);
  return a.kind == b.kind && a.backend == b.backend && a.server == b.server &&
         a.address == b.address && a.port == b.port && a.fqdn == b.fqdn && a.weight == b.weight &&
         a.state == b.state && a.spec == b.spec && a.only_del == b.only_del &&
         a.map_or_acl == b.map_or_acl && a.key == b.key && a.value == b.value && same_content;
}

std::string WhyNotCreatable(const model::ServerSpec& spec) {
  if (!model::IsIpLiteral(spec.address)) {
    return "a server is created only with an IP address: HAProxy's dynamic servers take no "
           "resolvers";
  }
  if (!spec.port) return "a server is created only with a port";
  return "";
}

namespace {

// The kDelServer of every server in options.delete_servers, sorted.
void PlanDeletes(const PlanOptions& options, Plan* plan) {
  if (options.delete_servers == nullptr || options.delete_servers->empty()) return;
  std::vector<const ServerKey*> keys;
  keys.reserve(options.delete_servers->size());
  for (const ServerKey& key : *options.delete_servers) keys.push_back(&key);
  std::sort(keys.begin(), keys.end(), [](const auto* a, const auto* b) { return *a < *b; });
  for (const ServerKey* key : keys) {
    PlanServerDelete(key->first, key->second, options.servers_frozen, plan);
  }
}

}  // namespace

Plan PlanChanges(const model::DesiredState& desired, const PendingChanges& pending,
                 const PlanOptions& options) {
  Plan plan;
  PlanDeletes(options, &plan);
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
    ServerHas has = change.before && !failed_before ? ServerHas(HasPrevious{*change.before})
                                                    : ServerHas(HasUnknown{});
    PlanServer(backend, name, *now, has, options.servers_frozen, &plan);
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
  PlanDeletes(options, &plan);
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
        PlanServerCreate(*name, *server, *spec, options.servers_frozen, &plan,
                         options.create_servers);
        continue;
      }
      PlanServer(*name, *server, *spec, HasObserved{have_server->second}, options.servers_frozen,
                 &plan);
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
  PlanDeletes(options, &plan);
  for (const auto& [name, backend] : model::SortedByName(desired.backends)) {
    for (const auto& [server, spec] : model::SortedByName(backend->servers)) {
      PlanServer(*name, *server, *spec, HasUnknown{}, options.servers_frozen, &plan);
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

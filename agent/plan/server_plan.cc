// Plans one server (server_plan.h): which managed fields the worker may lack, given what hawk
// knows it has; their actions in the safe order; what no command can fix; and the frozen-worker
// policy (plan.h). Pure.

#include "agent/plan/server_plan.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/optional.h"
#include "agent/model/cli_safety.h"
#include "agent/parse/servers_state.h"

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

std::string OptionalText(const absl::optional<int>& value) {
  return value ? absl::StrCat(*value) : "unmanaged";
}

// The managed fields the worker may not hold as wanted.
struct Differences {
  bool address = false;  // an IP-literal server: its address, or its managed port (sent along)
  bool fqdn = false;     // a hostname server: its fqdn
  // A hostname server whose managed port differs (no command sets it): the port it holds.
  absl::optional<std::string> fqdn_port_held;
  bool weight = false;
  bool state = false;
  absl::optional<int> admin;  // observed srv_admin_state, for the bits no command clears
};

Differences Compare(const model::ServerSpec& want, bool ip, const HasObserved& has) {
  const ObservedServer& have = has.server;
  Differences d;
  if (ip) {
    // Compared in binary form: "0:0::1" is what HAProxy prints as "::1".
    d.address =
        ParseIp(have.address) != ParseIp(want.address) || (want.port && *want.port != have.port);
  } else {
    d.fqdn = !absl::EqualsIgnoreCase(want.address, have.fqdn);
    if (want.port && *want.port != have.port) d.fqdn_port_held = absl::StrCat(have.port);
  }
  d.weight = want.weight && *want.weight != have.user_weight;
  d.state = want.state && !StateHolds(*want.state, have.admin_state);
  d.admin = have.admin_state;
  return d;
}

Differences Compare(const model::ServerSpec& want, bool ip, const HasPrevious& has) {
  const model::ServerSpec& before = has.spec;
  bool address_changed = before.address != want.address;
  bool port_changed = want.port && want.port != before.port;
  Differences d;
  if (ip) {
    d.address = address_changed || port_changed;
  } else {
    d.fqdn = address_changed;
    if (port_changed) d.fqdn_port_held = OptionalText(before.port);
  }
  d.weight = want.weight && want.weight != before.weight;
  d.state = want.state && want.state != before.state;
  return d;
}

Differences Compare(const model::ServerSpec& want, bool ip, const HasUnknown&) {
  // The port of a hostname server cannot be sent; an observation reports it if it differs.
  Differences d;
  d.address = ip;
  d.fqdn = !ip;
  d.weight = want.weight.has_value();
  d.state = want.state.has_value();
  return d;
}

// Admin bits no CLI command clears: the server stays out of rotation (or draining) whatever hawk
// sends. `actual` is what remains once hawk's own bits are right, so the item reads the same
// before and after the apply.
absl::optional<StaleItem> Unclearable(const std::string& object, model::ServerState want,
                                      int admin) {
  if (want == model::ServerState::kMaint) return absl::nullopt;
  std::vector<std::string> causes;
  if (admin & parse::kAdminIMaint) {
    causes.push_back("maintenance inherited from a tracked server (IMAINT)");
  }
  if (admin & parse::kAdminRMaint) causes.push_back("DNS resolution failed (RMAINT)");
  if (want == model::ServerState::kReady && (admin & parse::kAdminIDrain)) {
    causes.push_back("drain inherited from a tracked server (IDRAIN)");
  }
  if (causes.empty()) return absl::nullopt;
  bool maint = (admin & (parse::kAdminIMaint | parse::kAdminRMaint)) != 0;
  return StaleItem{object, "state", model::ServerStateName(want), maint ? "MAINT" : "DRAIN",
                   absl::StrCat("hawk cannot clear ", absl::StrJoin(causes, "; "))};
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

}  // namespace

StaleItem FrozenItem(const Action& action) {
  return StaleItem{action.object(), action.field(), action.desired(), "", kFrozenReason};
}

void PlanServer(absl::string_view backend, absl::string_view server, const model::ServerSpec& want,
                const ServerHas& has, bool frozen, Plan* plan) {
  bool ip = model::IsIpLiteral(want.address);
  Differences d = std::visit([&](const auto& known) { return Compare(want, ip, known); }, has);
  std::string object = ServerObject(backend, server);
  std::vector<Action> changes;  // address or fqdn, then weight
  if (d.address) {
    Action action = ServerAction(ActionKind::kSetAddress, backend, server);
    action.address = want.address;
    action.port = want.port;  // when managed, always sent along: `addr <ip> port <p>`
    changes.push_back(std::move(action));
  }
  if (d.fqdn) {
    Action action = ServerAction(ActionKind::kSetFqdn, backend, server);
    action.fqdn = want.address;
    changes.push_back(std::move(action));
  }
  if (d.fqdn_port_held) {
    plan->stale.push_back(
        StaleItem{object, "port", absl::StrCat(*want.port), *d.fqdn_port_held, kFqdnPortReason});
  }
  if (d.weight) {
    Action action = ServerAction(ActionKind::kSetWeight, backend, server);
    action.weight = *want.weight;
    changes.push_back(std::move(action));
  }
  absl::optional<Action> state;
  if (d.state) {
    state = ServerAction(ActionKind::kSetState, backend, server);
    state->state = *want.state;
  }
  if (d.admin && want.state) {
    if (absl::optional<StaleItem> item = Unclearable(object, *want.state, *d.admin)) {
      plan->stale.push_back(*std::move(item));
    }
  }
  // The safe order: the state first when it stops traffic (MAINT, DRAIN), last when it lets
  // traffic in (READY), after the address and weight changes.
  bool state_first = state && *want.state != model::ServerState::kReady;
  if (state_first) Send(*std::move(state), frozen, plan);
  for (Action& action : changes) Send(std::move(action), frozen, plan);
  if (state && !state_first) Send(*std::move(state), frozen, plan);
}

void PlanServerCreate(absl::string_view backend, absl::string_view server,
                      const model::ServerSpec& want, bool frozen, Plan* plan, bool create) {
  if (!create && !frozen) {
    plan->stale.push_back(StaleItem{ServerObject(backend, server), "", "present", "absent",
                                    kNoCreateAfterGraceReason});
    return;
  }
  std::string why = WhyNotCreatable(want);
  if (!why.empty()) {
    plan->stale.push_back(
        StaleItem{ServerObject(backend, server), "", "present", "absent",
                  absl::StrCat("worker has no server ", backend, "/", server, ", and ", why)});
    return;
  }
  Action action = ServerAction(ActionKind::kAddServer, backend, server);
  action.spec = want;
  Send(std::move(action), frozen, plan);
}

void PlanServerDelete(absl::string_view backend, absl::string_view server, bool frozen,
                      Plan* plan) {
  Action action = ServerAction(ActionKind::kDelServer, backend, server);
  // A frozen worker refuses the maintenance step but not `del server` (2.6–3.4): a server it
  // holds in maintenance still goes; one in rotation stays, refused and reported.
  action.only_del = frozen;
  plan->actions.push_back(std::move(action));
}

}  // namespace hawk::plan

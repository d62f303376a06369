#pragma once

// The pure planner for one worker: (desired state, what the worker holds) → the minimal ordered
// list of actions that makes the worker match, plus what it cannot fix there. Deterministic: the
// same inputs give the same plan, byte for byte. commands.h turns actions into CLI commands.
//
// Rules:
//   - Only the backends' servers, maps and ACLs listed in the desired state are managed; a server
//     field absent there (port, weight, state) is never touched.
//   - A desired backend, server, map or ACL the worker lacks is a StaleItem, not an action.
//   - An IP-literal address is compared in binary form (so "::1" equals "0:0::1") with the
//     observed address, and the port when managed: one kSetAddress. A hostname is compared
//     case-insensitively with the observed fqdn: kSetFqdn. HAProxy has no port-only `set server`
//     command, so a differing port of a hostname server is a StaleItem.
//   - State (srv_admin_state bits FMAINT 0x01, IMAINT 0x02, CMAINT 0x04, FDRAIN 0x08, IDRAIN
//     0x10, RMAINT 0x20): READY = neither FMAINT nor FDRAIN, DRAIN = FDRAIN without FMAINT,
//     MAINT = FMAINT. hawk cannot clear IMAINT, IDRAIN or RMAINT: they become StaleItems, and
//     FMAINT/FDRAIN are still fixed. CMAINT (config `disabled`) is ignored: it does not hold a
//     server once FMAINT is cleared (SRV_ADMF_MAINT is 0x23).
//   - Order: backends by name, their servers by name, then maps by name, then ACLs by name.
//     Within a server whose desired state is MAINT or DRAIN the state action comes first (stop
//     traffic, then move it); when READY it comes last (never send traffic to the old address).
//   - A map whose entries (as joined lines, see ObservedMap) differ as a multiset, or an ACL
//     whose patterns differ as a set, is replaced whole (one transaction, commands.h).

#include <string>
#include <vector>

#include "absl/types/optional.h"
#include "agent/model/desired.h"
#include "agent/model/workers.h"
#include "agent/plan/observed.h"

namespace hawk::plan {

enum class ActionKind {
  kSetAddress,  // `set server b/s addr <ip> [port <p>]`
  kSetFqdn,     // `set server b/s fqdn <name>`
  kSetWeight,   // `set server b/s weight <w>`
  kSetState,    // `set server b/s state ready|drain|maint`
  kReplaceMap,  // prepare map → add map @N … → commit map @N
  kReplaceAcl,  // prepare acl → add acl @N … → commit acl @N
};

struct Action {
  ActionKind kind = ActionKind::kSetAddress;
  std::string backend, server;                            // server actions
  std::string address;                                    // kSetAddress: an IP literal
  absl::optional<int> port;                               // kSetAddress: sent along when managed
  std::string fqdn;                                       // kSetFqdn
  int weight = 0;                                         // kSetWeight
  model::ServerState state = model::ServerState::kReady;  // kSetState
  std::string map_or_acl;                // kReplaceMap, kReplaceAcl: the map or ACL name
  std::vector<model::MapEntry> entries;  // kReplaceMap: the whole desired content
  std::vector<std::string> patterns;     // kReplaceAcl: the whole desired content

  // "backend/be_app/server/SRV_1", "map//etc/haproxy/hosts.map", "acl//etc/x.acl".
  std::string object() const;
  // "address", "fqdn", "weight", "state", "entries", "patterns".
  std::string field() const;

  friend bool operator==(const Action&, const Action&) = default;
};

// Something the plan cannot fix on this worker: {object, field, desired, actual, reason}, the
// same type the worker report carries. `field` is "" when the whole object is missing.
using StaleItem = model::StaleObject;

// The reason of every server StaleItem on a frozen worker.
inline constexpr char kFrozenReason[] =
    "frozen: the leaving worker refuses server changes (Proxy is disabled.)";

struct PlanOptions {
  // A leaving worker that answered `Proxy is disabled.` (once its soft-stop has stopped its
  // proxies it refuses every server command): its server diffs become StaleItems with
  // kFrozenReason; maps and ACLs, which still work there, are still planned.
  bool servers_frozen = false;
};

struct Plan {
  std::vector<Action> actions;
  std::vector<StaleItem> stale;

  bool empty() const { return actions.empty(); }
  friend bool operator==(const Plan&, const Plan&) = default;
};

Plan PlanWorker(const model::DesiredState& desired, const ObservedWorker& observed,
                const PlanOptions& options);

// For a worker whose state is unknown (a brand-new worker started from the config file, which
// may be stale): every managed server field and every map and ACL, without observing first. The
// port of a hostname server cannot be sent (no port-only command) and is left to PlanWorker.
Plan PlanFullSeed(const model::DesiredState& desired);

// Whether `text` is an IPv4 (dotted quad) or IPv6 literal, as inet_pton reads it. Agrees with
// model::IsIpLiteral.
bool IsIpLiteral(absl::string_view text);

}  // namespace hawk::plan

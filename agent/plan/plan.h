#pragma once

// The pure planner for one worker: → the ordered list of actions that makes the worker match the
// desired state, plus what it cannot fix there. Three entry points, by what hawk knows of the
// worker:
//   - PlanChanges:  it held the desired state before the pending changes (plan/pending.h):
//                   actions for the changed objects only, O(change). The hot path.
//   - PlanFullSeed: nothing (a worker born from the configuration file): every managed field,
//                   every map and ACL replaced (but those it read from files hawk wrote: only
//                   the changes since). O(state), once per new worker.
//   - PlanWorker:   what a full observation showed (observed.h): the minimal diff. O(state), for
//                   workers hawk knows nothing about, after a failure, on the resync timer.
// Each plans a server with server_plan.h's PlanServer, over what it knows the worker has of it
// (observed, the previous spec, or unknown), and a map or ACL with table_plan.h. Deterministic:
// the same inputs give the same plan, byte for byte. commands.h turns actions into CLI commands.
//
// Rules:
//   - Only the backends' servers, maps and ACLs listed in the desired state are managed; a server
//     field absent there (port, weight, state) is never touched.
//   - A desired server the worker lacks, in a backend it has, is created there (kAddServer: HAProxy
//     2.6+ `add server`, which creates it in maintenance, then `set server … state` unless it
//     is wanted in MAINT) when it has an IP-literal address and a port: dynamic servers take no
//     resolvers. Otherwise, and a desired backend, map or ACL the worker lacks, is a StaleItem.
//     A server hawk created on this worker that left the desired state is deleted
//     (PlanOptions::delete_servers, kDelServer: put in maintenance, then `del server`, which
//     HAProxy refuses while connections remain: it is retried until they are gone). Servers the
//     configuration declares are never deleted.
//   - An IP-literal address is compared in binary form (so "::1" equals "0:0::1") with the
//     observed address, and the port when managed: one kSetAddress. A hostname is compared
//     case-insensitively with the observed fqdn: kSetFqdn. HAProxy has no port-only `set server`
//     command, so a differing port of a hostname server is a StaleItem.
//   - State (srv_admin_state bits): READY = neither FMAINT nor FDRAIN, DRAIN = FDRAIN without
//     FMAINT, MAINT = FMAINT. hawk cannot clear IMAINT, IDRAIN or RMAINT: they become
//     StaleItems, and FMAINT/FDRAIN are still fixed. CMAINT (config `disabled`) is ignored: it
//     does not hold a server once FMAINT is cleared (SRV_ADMF_MAINT is 0x23).
//   - Order: backends by name, their servers by name, then maps by name, then ACLs by name.
//     Within a server whose desired state is MAINT or DRAIN the state action comes first (stop
//     traffic, then move it); when READY it comes last (never send traffic to the old address).
//   - A frozen worker (PlanOptions::servers_frozen): a leaving worker past its grace period answers
//     every `set server` with "Proxy is disabled." (its proxies are stopped, and HAProxy never
//     restarts a stopped proxy) while map and ACL commands still work there. The server actions
//     the plan would send it are withheld: listed in Plan::withheld, not in Plan::actions, and
//     each reported as FrozenItem, which replaces any other StaleItem of that field. Maps and
//     ACLs are planned as for any worker.
//   - Maps and ACLs: a few changed entries go as per-entry commands (`set|add|del map`,
//     `add|del acl`), each atomic on its own; a table newly managed, changed in more than
//     model::kReplaceAboveFraction of its entries, holding duplicates, or whose lines cannot be
//     compared per key (a desired key with a space: see ObservedTable) is replaced whole, in one
//     transaction (prepare, add @N, commit), atomic as a whole.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/types/optional.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/workers.h"
#include "agent/plan/observed.h"
#include "agent/plan/pending.h"

namespace hawk::plan {

using ServerKey = std::pair<std::string, std::string>;  // backend, server

enum class ActionKind {
  kSetAddress,      // `set server b/s addr <ip> [port <p>]`
  kSetFqdn,         // `set server b/s fqdn <name>`
  kSetWeight,       // `set server b/s weight <w>`
  kSetState,        // `set server b/s state ready|drain|maint`
  kAddServer,       // `add server b/s <ip>:<port> [weight <w>]`, then `set server b/s state …`
                    // (unless MAINT): from `spec`
  kDelServer,       // `set server b/s state maint`, then `del server b/s` (only_del: the latter)
  kReplaceMap,      // prepare map → add map @N … → commit map @N, from `content`
  kReplaceAcl,      // prepare acl → add acl @N … → commit acl @N, from `content`
  kSetMapEntry,     // `set map <m> <k> <v>`: the worker holds k
  kAddMapEntry,     // `add map <m> <k> <v>`: the worker does not hold k
  kUpsertMapEntry,  // `set map`, then `add map` on "entry not found." (unknown whether it holds k)
  kDelMapEntry,     // `del map <m> <k>` ("Key not found." means it is gone already: fine)
  kAddAclPattern,   // `add acl <a> <p>`
  kDelAclPattern,   // `del acl <a> <p>`
};

bool IsServerAction(ActionKind kind);
bool IsReplaceAction(ActionKind kind);

struct Action {
  ActionKind kind = ActionKind::kSetAddress;
  std::string backend, server;                            // server actions
  std::string address;                                    // kSetAddress: an IP literal
  absl::optional<int> port;                               // kSetAddress: sent along when managed
  std::string fqdn;                                       // kSetFqdn
  int weight = 0;                                         // kSetWeight
  model::ServerState state = model::ServerState::kReady;  // kSetState
  model::ServerSpec spec;                                 // kAddServer: the server as created
  // kDelServer on a frozen worker, which refuses `set server`: `del server` alone, which still
  // deletes a server it holds in maintenance (one created there but never enabled).
  bool only_del = false;
  std::string map_or_acl;  // map and ACL actions: the map or ACL name
  std::string key;         // entry actions: the key or pattern
  std::string value;       // kSet/kAdd/kUpsertMapEntry
  // kReplaceMap, kReplaceAcl: the whole desired content, taken when the plan was made (a push
  // may change the desired state while the transaction is under way).
  std::shared_ptr<const model::StringTable> content;

  // "backend/be_app/server/SRV_1", "map//etc/haproxy/hosts.map", "acl//etc/x.acl".
  std::string object() const;
  // "address", "fqdn", "weight", "state", "entries", "patterns", "entries/<key>",
  // "patterns/<pattern>"; "" for kAddServer and kDelServer (the whole server).
  std::string field() const;
  // What the action sets, as a StaleItem's `desired`: "10.0.0.1:80" (the port when sent along),
  // "app.example.com", "5", "MAINT", "<n> entries", a map value, "present" (kAddServer too),
  // "absent" (kDelServer too).
  std::string desired() const;

  friend bool operator==(const Action& a, const Action& b);
};

// Something the plan cannot fix on this worker: {object, field, desired, actual, reason}, the
// same type the worker report carries. `field` is "" when the whole object is missing.
using StaleItem = model::StaleObject;

// The reason of every server StaleItem on a frozen worker.
inline constexpr char kFrozenReason[] =
    "frozen: the leaving worker refuses server changes (Proxy is disabled.)";
// The reason a server is not created on a leaving worker past its grace.
inline constexpr char kNoCreateAfterGraceReason[] =
    "frozen: the leaving worker's grace is over, and a server created there would stay in "
    "maintenance (HAProxy refuses to enable it: Proxy is disabled.)";

// What stays stale of a server action a frozen worker is not sent, or refused with "Proxy is
// disabled.": {object, field, action.desired(), "", kFrozenReason}. `actual` is empty: the
// action is all that is known where the refusal comes back, and both ways give the same item.
StaleItem FrozenItem(const Action& action);

struct PlanOptions {
  // A leaving worker that answered `Proxy is disabled.`: its server actions are withheld (see
  // the rules above); maps and ACLs are still planned.
  bool servers_frozen = false;
  // PlanChanges: the last apply on this worker was cut short, so whether it holds a key may
  // differ from what the summaries say: map upserts become kUpsertMapEntry, and an ACL pattern
  // to add is deleted first (HAProxy keeps duplicates, and 3.4's `del acl` removes only one).
  bool uncertain = false;
  // PlanChanges: servers whose last apply failed on this worker ("backend/<b>/server/<s>"): all
  // their managed fields are planned, not only the changed ones.
  const absl::flat_hash_set<std::string>* stale_servers = nullptr;
  // The worker's HAProxy (model::ReplaceIsCheaper): before 2.9 a table change of more than
  // model::kReplaceMinKeys keys is one replace, whatever the table's size.
  model::EntryLookup entry_lookup = model::EntryLookup::kIndexed;
  // Servers hawk created on this worker that are no longer desired: each gets a kDelServer (all
  // three entry points), before any other server action.
  const absl::flat_hash_set<ServerKey>* delete_servers = nullptr;
  // false: a leaving worker whose grace is over (soft-stopped, its listeners closed) before it
  // answered `Proxy is disabled.`: a server it lacks is reported (kNoCreateAfterGraceReason), not
  // created.
  bool create_servers = true;
};

struct Plan {
  std::vector<Action> actions;
  std::vector<StaleItem> stale;
  // PlanOptions::servers_frozen: the server actions a frozen worker would refuse, in plan order.
  // Not to be sent; each is in `stale` as its FrozenItem, and the caller reports it refused with
  // the reply that froze the worker.
  std::vector<Action> withheld;

  bool empty() const { return actions.empty(); }
  friend bool operator==(const Plan&, const Plan&) = default;
};

Plan PlanChanges(const model::DesiredState& desired, const PendingChanges& pending,
                 const PlanOptions& options);
Plan PlanWorker(const model::DesiredState& desired, const ObservedWorker& observed,
                const PlanOptions& options);
// The tables a new worker read from the files hawk wrote before the reload that started it
// (plan/table_file.h), and every change since those files were written.
struct TablesAtBirth {
  absl::flat_hash_set<std::string> maps;  // by name: the worker holds them as written
  absl::flat_hash_set<std::string> acls;
  const PendingChanges* since = nullptr;  // required
};
// The port of a hostname server cannot be sent (no port-only command) and is left to PlanWorker.
// With `born`, the tables it names get only the changes made since they were written.
Plan PlanFullSeed(const model::DesiredState& desired, const TablesAtBirth* born = nullptr,
                  const PlanOptions& options = {});

// "backend/<b>/server/<s>".
std::string ServerObject(absl::string_view backend, absl::string_view server);

// Why `spec` cannot be created by `add server` ("" when it can): it needs an IP-literal address
// (a dynamic server takes no resolvers) and a port.
std::string WhyNotCreatable(const model::ServerSpec& spec);

}  // namespace hawk::plan

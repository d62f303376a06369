#include "agent/plan/plan.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/model/cli_safety.h"
#include "agent/model/delta.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/observed.h"
#include "agent/plan/pending.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"
#include "tests/unit/parse/fixture.h"
#include "tests/unit/plan/desired_builder.h"
#include "tests/unit/plan/sim_worker.h"

namespace hawk::plan {
namespace {

using model::ServerState;
using parse::testing::kVersions;
using parse::testing::ReadFixture;
using testing::Desired;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Patterns;
using testing::Spec;
using testing::Table;

ObservedBackend FixtureBackend(absl::string_view version, absl::string_view name) {
  absl::StatusOr<ObservedBackend> backend = BackendFromReply(ReadFixture(version, name));
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *backend : ObservedBackend{false, {}};
}

ObservedTable FixtureMap(absl::string_view version) {
  absl::StatusOr<ObservedTable> map =
      MapFromReply(ReadFixture(version, "worker_show_map_entries.txt"));
  EXPECT_TRUE(map.ok()) << map.status();
  return map.ok() ? *map : ObservedTable{};
}

ObservedWorker WithBackend(std::string name, ObservedBackend backend) {
  ObservedWorker worker;
  worker.backends[std::move(name)] = std::move(backend);
  return worker;
}

ObservedServer Observed(std::string address, int port, int admin, int weight = 1,
                        std::string fqdn = "") {
  return ObservedServer{std::move(address), port,   admin,
                        parse::kOpRunning,  weight, std::move(fqdn)};
}

ObservedTable ObservedEntries(model::StringTable entries, bool duplicates = false) {
  ObservedTable table;
  table.entries = std::move(entries);
  table.duplicates = duplicates;
  return table;
}

// One backend "be" holding one observed server "s".
ObservedWorker OneServer(const ObservedServer& server) {
  ObservedWorker worker;
  worker.backends["be"].servers["s"] = server;
  return worker;
}

Plan PlanOne(const model::ServerSpec& want, const ObservedServer& have, bool frozen = false) {
  PlanOptions options;
  options.servers_frozen = frozen;
  return PlanWorker(Desired().Server("be", "s", want), OneServer(have), options);
}

std::vector<ActionKind> Kinds(const Plan& plan) {
  std::vector<ActionKind> kinds;
  for (const Action& action : plan.actions) kinds.push_back(action.kind);
  return kinds;
}

// "object field" of each action ("map//m entries/k").
std::vector<std::string> Steps(const Plan& plan) {
  std::vector<std::string> steps;
  for (const Action& action : plan.actions) {
    steps.push_back(absl::StrCat(action.object(), " ", action.field()));
  }
  return steps;
}

TEST(PlanTest, FixtureStateAsDesiredNeedsNothing) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedBackend be_app = FixtureBackend(version, "worker_show_servers_state_be_app.txt");
    ASSERT_EQ(be_app.servers.size(), 4u);
    const ObservedServer& web1 = be_app.servers.at("web1");
    // SRV1..3: `server-template SRV 3 192.0.2.1:80 disabled` (FMAINT|CMAINT).
    model::DesiredState desired =
        Desired()
            .Server("be_app", "SRV1", Spec("192.0.2.1", 80, 1, ServerState::kMaint))
            .Server("be_app", "SRV2", Spec("192.0.2.1", 80))
            .Server("be_app", "web1", Spec("127.0.0.1", web1.port, 1, ServerState::kReady));
    Plan plan = PlanWorker(desired, WithBackend("be_app", be_app), {});
    EXPECT_THAT(plan.actions, IsEmpty());
    EXPECT_THAT(plan.stale, IsEmpty());
  }
}

TEST(PlanTest, ConfigDisabledServerMadeReadyClearsOnlyForcedMaintenance) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedBackend be_app = FixtureBackend(version, "worker_show_servers_state_be_app.txt");
    ASSERT_EQ(be_app.servers.at("SRV1").admin_state, parse::kAdminFMaint | parse::kAdminCMaint);
    Plan plan = PlanWorker(
        Desired().Server("be_app", "SRV1",
                         Spec("192.0.2.1", absl::nullopt, absl::nullopt, ServerState::kReady)),
        WithBackend("be_app", be_app), {});
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetState);
    EXPECT_EQ(plan.actions[0].state, ServerState::kReady);
    EXPECT_EQ(plan.actions[0].object(), "backend/be_app/server/SRV1");
    EXPECT_EQ(plan.actions[0].field(), "state");
    // CMAINT stays set after `state ready` and does not hold the server: no StaleItem.
    EXPECT_THAT(plan.stale, IsEmpty());
  }
}

TEST(PlanTest, OldWorkerFixtureCmaintOnlyIsReady) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedBackend be_app = FixtureBackend(version, "old_worker_show_servers_state.txt");
    const ObservedServer& srv1 = be_app.servers.at("SRV1");
    ASSERT_EQ(srv1.admin_state, parse::kAdminCMaint);
    ASSERT_EQ(srv1.op_state, parse::kOpRunning);
    Plan plan = PlanWorker(
        Desired().Server("be_app", "SRV1", Spec("127.0.0.1", srv1.port, 10, ServerState::kReady)),
        WithBackend("be_app", be_app), {});
    EXPECT_THAT(plan.actions, IsEmpty());
    EXPECT_THAT(plan.stale, IsEmpty());
    // The dynamic server `fresh` starts in forced maintenance.
    plan = PlanWorker(
        Desired().Server("be_app", "fresh",
                         Spec("127.0.0.1", absl::nullopt, absl::nullopt, ServerState::kReady)),
        WithBackend("be_app", be_app), {});
    EXPECT_THAT(Kinds(plan), ElementsAre(ActionKind::kSetState));
  }
}

TEST(PlanTest, AddressAndPort) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedBackend be_app = FixtureBackend(version, "worker_show_servers_state_be_app.txt");
    int port = be_app.servers.at("web1").port;
    auto plan_for = [&](model::ServerSpec want) {
      return PlanWorker(Desired().Server("be_app", "web1", std::move(want)),
                        WithBackend("be_app", be_app), {});
    };
    // Address differs, port managed and equal: the port is sent along.
    Plan plan = plan_for(Spec("10.0.0.5", port));
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetAddress);
    EXPECT_EQ(plan.actions[0].address, "10.0.0.5");
    EXPECT_EQ(plan.actions[0].port, port);
    EXPECT_EQ(plan.actions[0].field(), "address");
    // Address differs, port unmanaged.
    plan = plan_for(Spec("10.0.0.5"));
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].port, absl::nullopt);
    // Only the port differs.
    plan = plan_for(Spec("127.0.0.1", 8080));
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetAddress);
    EXPECT_EQ(plan.actions[0].address, "127.0.0.1");
    EXPECT_EQ(plan.actions[0].port, 8080);
    // Nothing differs; an unmanaged port is never compared.
    EXPECT_TRUE(plan_for(Spec("127.0.0.1", port)).empty());
    EXPECT_TRUE(plan_for(Spec("127.0.0.1")).empty());
  }
}

TEST(PlanTest, Ipv6ComparedInBinaryForm) {
  EXPECT_TRUE(PlanOne(Spec("0:0::1", 80), Observed("::1", 80, 0)).empty());
  EXPECT_TRUE(PlanOne(Spec("2001:DB8:0:0::5"), Observed("2001:db8::5", 80, 0)).empty());
  EXPECT_FALSE(PlanOne(Spec("::2"), Observed("::1", 80, 0)).empty());
  // An IPv4-mapped IPv6 address is a different address family from the IPv4 literal.
  EXPECT_FALSE(PlanOne(Spec("::ffff:10.0.0.1"), Observed("10.0.0.1", 80, 0)).empty());
  // An unresolved server prints "-" (""): any IP literal differs.
  EXPECT_FALSE(PlanOne(Spec("10.0.0.1"), Observed("", 0, 0)).empty());
}

// The planner no longer has its own IsIpLiteral (it uses model::IsIpLiteral when seeding and
// inet_pton when comparing): both entry points must take the same texts for IP literals.
TEST(PlanTest, IpLiteralClassificationAgreesWithTheModel) {
  for (const char* text :
       {"10.0.0.1", "::1", "0:0::1", "::ffff:1.2.3.4", "2001:db8::5", "1.2.3", "01.2.3.4",
        "256.1.1.1", "[::1]", "fe80::1%eth0", "a.b", "example.com", "1.2.3.4 ", "::1:80"}) {
    SCOPED_TRACE(text);
    ActionKind expected = model::IsIpLiteral(text) ? ActionKind::kSetAddress : ActionKind::kSetFqdn;
    model::DesiredState desired = Desired().Server("be", "s", Spec(text));
    EXPECT_THAT(Kinds(PlanFullSeed(desired)), ElementsAre(expected));
    // Observed with another address and no fqdn: whichever it is, one action of that kind.
    EXPECT_THAT(Kinds(PlanWorker(desired, OneServer(Observed("192.0.2.99", 80, 0)), {})),
                ElementsAre(expected));
  }
}

TEST(PlanTest, HostnameSetsFqdnComparedCaseInsensitively) {
  Plan plan = PlanOne(Spec("app.example.com"), Observed("10.0.0.1", 80, 0));
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetFqdn);
  EXPECT_EQ(plan.actions[0].fqdn, "app.example.com");
  EXPECT_EQ(plan.actions[0].field(), "fqdn");
  EXPECT_TRUE(
      PlanOne(Spec("App.Example.COM", 80), Observed("10.0.0.1", 80, 0, 1, "app.example.com"))
          .empty());
}

TEST(PlanTest, PortOfAnFqdnServerIsStale) {
  Plan plan =
      PlanOne(Spec("app.example.com", 8080), Observed("10.0.0.1", 80, 0, 1, "app.example.com"));
  EXPECT_THAT(plan.actions, IsEmpty());
  ASSERT_EQ(plan.stale.size(), 1u);
  EXPECT_EQ(plan.stale[0].object, "backend/be/server/s");
  EXPECT_EQ(plan.stale[0].field, "port");
  EXPECT_EQ(plan.stale[0].desired, "8080");
  EXPECT_EQ(plan.stale[0].actual, "80");
  EXPECT_THAT(plan.stale[0].reason, ::testing::HasSubstr("FQDN"));
}

TEST(PlanTest, Weight) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    // The whole `show servers state` (both backends), read the way BackendFromReply reads one.
    ObservedWorker worker;
    absl::Status rows = parse::ForEachServerState(
        ReadFixture(version, "worker_show_servers_state_all.txt"),
        [&worker](const parse::ServerStateRow& row) {
          worker.backends[row.backend].servers[row.server] = ObservedServer{
              row.address, row.port, row.admin_state, row.op_state, row.user_weight, row.fqdn};
        });
    ASSERT_TRUE(rows.ok()) << rows;
    ASSERT_EQ(worker.backends.size(), 2u);
    ASSERT_EQ(worker.backends.at("be_other").servers.at("o1").user_weight, 50);
    Plan plan = PlanWorker(Desired().Server("be_other", "o1", Spec("127.0.0.1", absl::nullopt, 20)),
                           worker, {});
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetWeight);
    EXPECT_EQ(plan.actions[0].weight, 20);
    EXPECT_EQ(plan.actions[0].field(), "weight");
    EXPECT_TRUE(PlanWorker(Desired().Server("be_other", "o1", Spec("127.0.0.1", absl::nullopt, 50)),
                           worker, {})
                    .empty());
  }
}

struct StateCase {
  ServerState want;
  int admin;
  bool action;               // a kSetState is planned
  std::string stale_actual;  // "" when no StaleItem; else the state that remains
};

TEST(PlanTest, StateTable) {
  using S = ServerState;
  constexpr int F = parse::kAdminFMaint, I = parse::kAdminIMaint, C = parse::kAdminCMaint,
                D = parse::kAdminFDrain, ID = parse::kAdminIDrain, R = parse::kAdminRMaint;
  const StateCase cases[] = {
      {S::kReady, 0, false, ""},          {S::kReady, F, true, ""},
      {S::kReady, D, true, ""},           {S::kReady, F | C, true, ""},
      {S::kReady, C, false, ""},          {S::kReady, 0x40, false, ""},
      {S::kReady, I, false, "MAINT"},     {S::kReady, F | I, true, "MAINT"},
      {S::kReady, R, false, "MAINT"},     {S::kReady, ID, false, "DRAIN"},
      {S::kReady, D | ID, true, "DRAIN"}, {S::kReady, I | ID, false, "MAINT"},
      {S::kDrain, 0, true, ""},           {S::kDrain, D, false, ""},
      {S::kDrain, F, true, ""},           {S::kDrain, F | D, true, ""},
      {S::kDrain, ID, true, ""},          {S::kDrain, D | I, false, "MAINT"},
      {S::kDrain, D | R, false, "MAINT"}, {S::kMaint, 0, true, ""},
      {S::kMaint, F, false, ""},          {S::kMaint, F | D, false, ""},
      {S::kMaint, D, true, ""},           {S::kMaint, I | R, true, ""},
      {S::kMaint, C, true, ""},
  };
  for (const StateCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(model::ServerStateName(c.want), " admin=", c.admin));
    Plan plan = PlanOne(Spec("10.0.0.1", absl::nullopt, absl::nullopt, c.want),
                        Observed("10.0.0.1", 80, c.admin));
    if (c.action) {
      ASSERT_EQ(plan.actions.size(), 1u);
      EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetState);
      EXPECT_EQ(plan.actions[0].state, c.want);
    } else {
      EXPECT_THAT(plan.actions, IsEmpty());
    }
    if (c.stale_actual.empty()) {
      EXPECT_THAT(plan.stale, IsEmpty());
    } else {
      ASSERT_EQ(plan.stale.size(), 1u);
      EXPECT_EQ(plan.stale[0].field, "state");
      EXPECT_EQ(plan.stale[0].desired, model::ServerStateName(c.want));
      EXPECT_EQ(plan.stale[0].actual, c.stale_actual);
    }
  }
}

TEST(PlanTest, InheritedStateReasonsNameTheBits) {
  Plan plan = PlanOne(Spec("10.0.0.1", absl::nullopt, absl::nullopt, ServerState::kReady),
                      Observed("10.0.0.1", 80, parse::kAdminIMaint | parse::kAdminRMaint));
  ASSERT_EQ(plan.stale.size(), 1u);
  EXPECT_EQ(plan.stale[0].reason,
            "hawk cannot clear maintenance inherited from a tracked server (IMAINT); DNS "
            "resolution failed (RMAINT)");
}

TEST(PlanTest, MissingObjectsAreStale) {
  ObservedWorker worker;
  worker.backends["be_gone"] = ObservedBackend{false, {}};
  worker.backends["be"].servers["s"] = Observed("10.0.0.1", 80, 0);
  ObservedTable gone;
  gone.present = false;
  worker.maps["/m_gone"] = std::move(gone);
  model::DesiredState desired = Desired()
                                    .Server("be", "s", Spec("10.0.0.1"))
                                    .Server("be", "t", Spec("10.0.0.2"))
                                    .Server("be_gone", "s", Spec("10.0.0.1"))
                                    .Server("be_unobserved", "s", Spec("10.0.0.1"))
                                    .Map("/m_gone", {{"k", "v"}})
                                    .Map("/m_unobserved", {})
                                    .Acl("/a_unobserved", {"p"});
  Plan plan = PlanWorker(desired, worker, {});
  EXPECT_THAT(plan.actions, IsEmpty());
  EXPECT_THAT(
      plan.stale,
      ElementsAre(
          StaleItem{"backend/be/server/t", "", "present", "absent",
                    "worker has no server be/t, and a server is created only with a port"},
          StaleItem{"backend/be_gone", "", "present", "absent", "worker has no backend be_gone"},
          StaleItem{"backend/be_unobserved", "", "present", "absent",
                    "worker has no backend be_unobserved"},
          StaleItem{"map//m_gone", "", "present", "absent", "worker has no map /m_gone"},
          StaleItem{"map//m_unobserved", "", "present", "absent",
                    "worker has no map /m_unobserved"},
          StaleItem{"acl//a_unobserved", "", "present", "absent",
                    "worker has no acl /a_unobserved"}));
}

// Changed: the old UnsendableNamesAreStaleNotActions is gone. PlanWorker no longer reports
// names no escape can carry (LF, CR, NUL): validation forbids them (model/cli_safety.h:
// identifiers are [A-Za-z0-9_.:-], map and ACL names plain file paths), and the command builders
// still refuse them (commands_test.cc, HostileNamesAreEscapedOrRefused, EntryCommandTest.Errors).

TEST(PlanTest, OrderWithinAServerStopsTrafficFirstAndStartsItLast) {
  ObservedServer have = Observed("10.0.0.1", 80, 0, 1);
  Plan maint = PlanOne(Spec("10.0.0.2", 81, 5, ServerState::kMaint), have);
  EXPECT_THAT(Kinds(maint),
              ElementsAre(ActionKind::kSetState, ActionKind::kSetAddress, ActionKind::kSetWeight));
  Plan drain = PlanOne(Spec("db.example.com", absl::nullopt, 5, ServerState::kDrain), have);
  EXPECT_THAT(Kinds(drain),
              ElementsAre(ActionKind::kSetState, ActionKind::kSetFqdn, ActionKind::kSetWeight));
  Plan ready = PlanOne(Spec("10.0.0.2", 81, 5, ServerState::kReady),
                       Observed("10.0.0.1", 80, parse::kAdminFMaint, 1));
  EXPECT_THAT(Kinds(ready),
              ElementsAre(ActionKind::kSetAddress, ActionKind::kSetWeight, ActionKind::kSetState));
}

TEST(PlanTest, OrderAcrossObjectsIsByNameWhateverTheInputOrder) {
  ObservedWorker worker;
  for (const char* b : {"be_b", "be_a"}) {
    for (const char* s : {"s2", "s1"}) worker.backends[b].servers[s] = Observed("10.0.0.1", 80, 0);
  }
  worker.maps["/z.map"];
  worker.maps["/a.map"];
  worker.acls["/y.acl"];
  worker.acls["/b.acl"];
  model::DesiredState desired = Desired()
                                    .Server("be_b", "s2", Spec("10.0.0.9"))
                                    .Server("be_b", "s1", Spec("10.0.0.9"))
                                    .Server("be_a", "s2", Spec("10.0.0.9"))
                                    .Server("be_a", "s1", Spec("10.0.0.9"))
                                    .Map("/z.map", {{"k", "v"}})
                                    .Map("/a.map", {{"k2", "v"}, {"k1", "v"}})
                                    .Acl("/y.acl", {"p"})
                                    .Acl("/b.acl", {"p2", "p1"});
  // Maps and ACLs: per-entry commands now (few entries differ), by key within each.
  EXPECT_THAT(
      Steps(PlanWorker(desired, worker, {})),
      ElementsAre("backend/be_a/server/s1 address", "backend/be_a/server/s2 address",
                  "backend/be_b/server/s1 address", "backend/be_b/server/s2 address",
                  "map//a.map entries/k1", "map//a.map entries/k2", "map//z.map entries/k",
                  "acl//b.acl patterns/p1", "acl//b.acl patterns/p2", "acl//y.acl patterns/p"));
  // The same inputs built in another order give the same plan.
  ObservedWorker reversed;
  for (const char* b : {"be_a", "be_b"}) {
    for (const char* s : {"s1", "s2"}) {
      reversed.backends[b].servers[s] = Observed("10.0.0.1", 80, 0);
    }
  }
  for (const char* m : {"/a.map", "/z.map"}) reversed.maps[m];
  for (const char* a : {"/b.acl", "/y.acl"}) reversed.acls[a];
  model::DesiredState reinserted = Desired()
                                       .Server("be_a", "s1", Spec("10.0.0.9"))
                                       .Server("be_a", "s2", Spec("10.0.0.9"))
                                       .Server("be_b", "s1", Spec("10.0.0.9"))
                                       .Server("be_b", "s2", Spec("10.0.0.9"))
                                       .Acl("/b.acl", {"p1", "p2"})
                                       .Acl("/y.acl", {"p"})
                                       .Map("/a.map", {{"k1", "v"}, {"k2", "v"}})
                                       .Map("/z.map", {{"k", "v"}});
  EXPECT_EQ(PlanWorker(reinserted, reversed, {}), PlanWorker(desired, worker, {}));
  EXPECT_EQ(PlanFullSeed(reinserted), PlanFullSeed(desired));
}

// Changed: the planner's own frozen output (a port item apart from the address, observed values
// as `actual`, tested here only) is gone. A frozen worker gets what the reconciler always
// reported: each server action withheld (Plan::withheld, for its refusal) and stale as
// FrozenItem (the action's field and what it would set).
TEST(PlanTest, FrozenWorkerReportsServerDiffsAndStillPlansMapsAndAcls) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedWorker worker =
        WithBackend("be_app", FixtureBackend(version, "old_worker_show_servers_state.txt"));
    worker.maps["/etc/haproxy/hosts.map"] = FixtureMap(version);
    worker.acls["/etc/haproxy/blocked.acl"] = ObservedEntries(Patterns({"10.0.0.0/8"}));
    const ObservedServer& web1 = worker.backends.at("be_app").servers.at("web1");
    model::DesiredState desired =
        Desired()
            .Server("be_app", "SRV2", Spec("192.0.2.1", 80, 1, ServerState::kReady))
            .Server("be_app", "web1", Spec("10.1.1.1", web1.port + 1, 7, ServerState::kDrain))
            .Map("/etc/haproxy/hosts.map", {{"a.example.com", "be_app"}})
            .Acl("/etc/haproxy/blocked.acl", {"10.0.0.0/8", "192.168.0.0/16"});
    PlanOptions frozen;
    frozen.servers_frozen = true;
    Plan plan = PlanWorker(desired, worker, frozen);
    // Changed: one entry and one pattern differ, so per-entry commands instead of two replaces.
    EXPECT_THAT(Kinds(plan), ElementsAre(ActionKind::kDelMapEntry, ActionKind::kAddAclPattern));
    std::string address = absl::StrCat("10.1.1.1:", web1.port + 1);
    EXPECT_THAT(
        plan.stale,
        ElementsAre(StaleItem{"backend/be_app/server/SRV2", "state", "READY", "", kFrozenReason},
                    StaleItem{"backend/be_app/server/web1", "state", "DRAIN", "", kFrozenReason},
                    StaleItem{"backend/be_app/server/web1", "address", address, "", kFrozenReason},
                    StaleItem{"backend/be_app/server/web1", "weight", "7", "", kFrozenReason}));
    // The same worker, not frozen: actions instead, and the frozen plan withheld exactly these.
    Plan live = PlanWorker(desired, worker, {});
    EXPECT_THAT(live.stale, IsEmpty());
    EXPECT_THAT(live.withheld, IsEmpty());
    EXPECT_THAT(Kinds(live), ElementsAre(ActionKind::kSetState, ActionKind::kSetState,
                                         ActionKind::kSetAddress, ActionKind::kSetWeight,
                                         ActionKind::kDelMapEntry, ActionKind::kAddAclPattern));
    EXPECT_EQ(plan.withheld, std::vector<Action>(live.actions.begin(), live.actions.begin() + 4));
    for (size_t i = 0; i < plan.withheld.size(); ++i) {
      EXPECT_EQ(plan.stale[i], FrozenItem(plan.withheld[i]));
    }
  }
}

// Changed: a map that differs in a few entries gets per-entry commands (it used to be replaced
// whole whenever its lines differed as a multiset); a replace is for duplicates on the worker, a
// change past the threshold, and lines that cannot be compared per key.
TEST(PlanTest, MapsComparedPerKey) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedTable map = FixtureMap(version);
    EXPECT_EQ(testing::SimEntries(map.entries),
              (std::vector<testing::SimEntry>{{"a.example.com", "be_app"},
                                              {"b.example.com", "be_other"}}));
    EXPECT_FALSE(map.duplicates);
    ObservedWorker worker;
    worker.maps["/etc/haproxy/hosts.map"] = map;
    auto plan_for = [&](model::StringTable entries) {
      return PlanWorker(Desired().Map("/etc/haproxy/hosts.map", std::move(entries)), worker, {});
    };
    EXPECT_TRUE(
        plan_for(Table({{"b.example.com", "be_other"}, {"a.example.com", "be_app"}})).empty());
    Plan plan = plan_for(Table({{"a.example.com", "be_app"}, {"b.example.com", "be_app"}}));
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetMapEntry);
    EXPECT_EQ(plan.actions[0].object(), "map//etc/haproxy/hosts.map");
    EXPECT_EQ(plan.actions[0].field(), "entries/b.example.com");
    EXPECT_EQ(plan.actions[0].key, "b.example.com");
    EXPECT_EQ(plan.actions[0].value, "be_app");
    EXPECT_THAT(Steps(plan_for(Table({{"a.example.com", "be_app"}}))),
                ElementsAre("map//etc/haproxy/hosts.map entries/b.example.com"));
    EXPECT_THAT(Kinds(plan_for(Table({{"a.example.com", "be_app"}}))),
                ElementsAre(ActionKind::kDelMapEntry));
    EXPECT_THAT(Kinds(plan_for({})),
                ElementsAre(ActionKind::kDelMapEntry, ActionKind::kDelMapEntry));
    EXPECT_THAT(Kinds(plan_for(Table({{"a.example.com", "be_app"},
                                      {"b.example.com", "be_other"},
                                      {"c.example.com", "be_new"}}))),
                ElementsAre(ActionKind::kAddMapEntry));
  }
  // A duplicate on the worker: replaced whole (per-key commands cannot remove only one of them on
  // 2.6, and hawk never creates duplicates).
  ObservedWorker worker;
  worker.maps["/m"] = ObservedEntries(Table({{"k", "v"}}), /*duplicates=*/true);
  Plan plan = PlanWorker(Desired().Map("/m", {{"k", "v"}}), worker, {});
  EXPECT_THAT(Kinds(plan), ElementsAre(ActionKind::kReplaceMap));
  ASSERT_NE(plan.actions[0].content, nullptr);
  EXPECT_EQ(*plan.actions[0].content, Table({{"k", "v"}}));
  // The documented ambiguity: a key with a space prints like a value with one; such a map is
  // compared as lines, and replaced whole when they differ.
  worker.maps["/m"] = *MapFromReply("0x55d0c1f2a010 a b c\n\n");
  EXPECT_TRUE(worker.maps["/m"].ambiguous);
  EXPECT_TRUE(PlanWorker(Desired().Map("/m", {{"a b", "c"}}), worker, {}).empty());
  EXPECT_THAT(Kinds(PlanWorker(Desired().Map("/m", {{"a b", "d"}}), worker, {})),
              ElementsAre(ActionKind::kReplaceMap));
  EXPECT_THAT(Kinds(PlanWorker(Desired().Map("/m", {{"a\tb", "c"}}), worker, {})),
              ElementsAre(ActionKind::kReplaceMap));
}

// Expected to fail with agent/plan at cb512e6: ObservedTable holds a `show map` listing in a
// StringTable keyed by each line's first word, so keys "a" and "a b" (both hawk's: desired keys
// may hold blanks, the commands escape them) collide: one entry is lost and `duplicates` is set,
// and PlanWorker replaces the map on every observation (each resync) although the worker holds
// exactly the desired content.
TEST(PlanTest, MapKeysSharingAFirstWordNeedNothingWhenHeld) {
  model::DesiredState desired = Desired().Map("/m", {{"a", "1"}, {"a b", "2"}, {"a c", "3 4"}});
  testing::SimWorker sim(ObservedWorker{});
  sim.SetMapEntries("/m", testing::SimEntries(desired.maps.at("/m")));
  Plan plan = PlanWorker(desired, sim.Observe(desired), {});
  EXPECT_THAT(Steps(plan), IsEmpty());
}

// Expected to fail with agent/plan at cb512e6: an entry whose key holds a blank, on the worker
// but no longer desired (hawk set it for an earlier desired state; a restarted hawk or the resync
// observes it), while no desired key holds a blank: PlanWorker deletes it by the first word of
// its line, `del map /m a`, which answers "Key not found." (taken as done); "a b" stays and every
// observation plans the same delete again.
TEST(PlanTest, AKeyWithABlankOnlyOnTheWorkerIsRemoved) {
  model::DesiredState desired = Desired().Map("/m", {{"x", "1"}});
  testing::SimWorker sim(ObservedWorker{});
  sim.SetMapEntries("/m", {{"x", "1"}, {"a b", "c"}});
  testing::ApplyPlan(&sim, PlanWorker(desired, sim.Observe(desired), {}));
  EXPECT_EQ(sim.SortedMapEntries("/m"), (std::vector<testing::SimEntry>{{"x", "1"}}));
  EXPECT_THAT(Steps(PlanWorker(desired, sim.Observe(desired), {})), IsEmpty());
}

// Changed: ACLs are compared per pattern (per-entry commands); a pattern listed twice on the
// worker is no longer the same set: the ACL is replaced, since `del acl` removes only the first
// of them on 3.4.
TEST(PlanTest, AclsComparedPerPattern) {
  ObservedWorker worker;
  worker.acls["/a"] = ObservedEntries(Patterns({"10.0.0.0/8", "192.168.0.0/16"}));
  EXPECT_TRUE(
      PlanWorker(Desired().Acl("/a", {"192.168.0.0/16", "10.0.0.0/8"}), worker, {}).empty());
  Plan plan = PlanWorker(Desired().Acl("/a", {"10.0.0.0/8"}), worker, {});
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, ActionKind::kDelAclPattern);
  EXPECT_EQ(plan.actions[0].object(), "acl//a");
  EXPECT_EQ(plan.actions[0].field(), "patterns/192.168.0.0/16");
  EXPECT_THAT(
      Kinds(PlanWorker(Desired().Acl("/a", {"10.0.0.0/8", "192.168.0.0/16", "a b"}), worker, {})),
      ElementsAre(ActionKind::kAddAclPattern));
  worker.acls["/a"].duplicates = true;
  plan = PlanWorker(Desired().Acl("/a", {"10.0.0.0/8", "192.168.0.0/16"}), worker, {});
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, ActionKind::kReplaceAcl);
  EXPECT_EQ(plan.actions[0].field(), "patterns");
  EXPECT_EQ(*plan.actions[0].content, Patterns({"10.0.0.0/8", "192.168.0.0/16"}));
}

// A change past max(kReplaceMinKeys, kReplaceAboveFraction × size) replaces the table whole.
TEST(PlanTest, ManyChangedEntriesReplaceTheTable) {
  auto plan_with = [](size_t size, size_t changed,
                      model::EntryLookup lookup = model::EntryLookup::kIndexed) {
    model::StringTable held, want;
    for (size_t i = 0; i < size; ++i) {
      std::string key = absl::StrCat("k", i);
      held.Set(key, "old");
      want.Set(key, i < changed ? "new" : "old");
    }
    ObservedWorker worker;
    worker.maps["/m"] = ObservedEntries(std::move(held));
    PlanOptions options;
    options.entry_lookup = lookup;
    return PlanWorker(Desired().Map("/m", std::move(want)), worker, options);
  };
  ASSERT_EQ(model::kReplaceMinKeys, 64u);
  EXPECT_EQ(plan_with(100, 64).actions.size(), 64u);
  EXPECT_THAT(Kinds(plan_with(100, 65)), ElementsAre(ActionKind::kReplaceMap));
  // 5% of 10,000: 500.
  EXPECT_EQ(plan_with(10000, 500).actions.size(), 500u);
  EXPECT_THAT(Kinds(plan_with(10000, 501)), ElementsAre(ActionKind::kReplaceMap));
  // Before 2.9 every per-entry command walks the map: 64 keys, whatever the size.
  EXPECT_EQ(plan_with(10000, 64, model::EntryLookup::kWalksTable).actions.size(), 64u);
  EXPECT_THAT(Kinds(plan_with(10000, 65, model::EntryLookup::kWalksTable)),
              ElementsAre(ActionKind::kReplaceMap));
}

TEST(PlanTest, FullSeedSendsEveryManagedField) {
  model::DesiredState desired =
      Desired()
          .Server("be_b", "s", Spec("10.0.0.1", 80, 5, ServerState::kMaint))
          .Server("be_a", "y", Spec("app.example.com", 8080, absl::nullopt, ServerState::kReady))
          .Server("be_a", "x", Spec("::1"))
          .Map("/m", {{"k", "v"}})
          .Map("/empty", {})
          .Acl("/a", {"p"});
  Plan plan = PlanFullSeed(desired);
  EXPECT_THAT(plan.stale, IsEmpty());
  EXPECT_THAT(Steps(plan),
              ElementsAre("backend/be_a/server/x address", "backend/be_a/server/y fqdn",
                          "backend/be_a/server/y state", "backend/be_b/server/s state",
                          "backend/be_b/server/s address", "backend/be_b/server/s weight",
                          "map//empty entries", "map//m entries", "acl//a patterns"));
  EXPECT_EQ(plan.actions[0].port, absl::nullopt);
  EXPECT_EQ(plan.actions[4].port, 80);
  // Replaces carry the whole content, taken when planning.
  ASSERT_NE(plan.actions[7].content, nullptr);
  EXPECT_EQ(*plan.actions[7].content, Table({{"k", "v"}}));
  EXPECT_TRUE(plan.actions[6].content->empty());
  EXPECT_EQ(*plan.actions[8].content, Patterns({"p"}));
}

// Entry keys that `set map` and `del map|acl` would read as entry references: HAProxy takes a
// key word starting with "#0x" as `#<pointer>` (src/map.c cli_parse_set_map and
// cli_parse_del_map check args[3] after unescaping, so no escape helps). Such a key cannot be
// set or deleted per entry; the right plan replaces its table (as for keys with blanks), and the
// worker then holds the desired content. The model accepts such keys (CheckEntryText).
TEST(PlanTest, KeysThatReadAsEntryReferencesAreNeverSentPerEntry) {
  model::DesiredState before =
      Desired().Map("/m", {{"#0x1", "old"}, {"#0xzz", "old"}, {"k", "v"}}).Acl("/a", {"#0x2", "p"});
  model::DesiredState after = Desired().Map("/m", {{"#0x1", "new"}, {"k", "v"}}).Acl("/a", {"p"});
  ObservedWorker held;
  held.maps["/m"] = ObservedEntries(before.maps.at("/m"));
  held.acls["/a"] = ObservedEntries(before.acls.at("/a"));
  auto check = [&](const Plan& plan, absl::string_view what) {
    SCOPED_TRACE(what);
    for (const Action& action : plan.actions) {
      bool by_key =
          action.kind == ActionKind::kSetMapEntry || action.kind == ActionKind::kUpsertMapEntry ||
          action.kind == ActionKind::kDelMapEntry || action.kind == ActionKind::kDelAclPattern;
      EXPECT_FALSE(by_key && absl::StartsWith(action.key, "#0x"))
          << action.object() << " " << action.field() << ": HAProxy reads this key as a reference";
    }
    testing::SimWorker sim(held);
    testing::ApplyPlan(&sim, plan);
    EXPECT_EQ(sim.SortedMapEntries("/m"), testing::SimEntries(after.maps.at("/m")));
    EXPECT_EQ(sim.SortedAclEntries("/a"), testing::SimEntries(after.acls.at("/a")));
  };
  check(PlanWorker(after, held, {}), "PlanWorker");
  PendingChanges pending;
  model::DesiredState state = before;
  pending.Merge(model::ApplyDelta(model::DiffStates(state, after), &state).summary, state);
  check(PlanChanges(state, pending, {}), "PlanChanges");
}

// PlanChanges: a worker that held `states[0]` and lacks every push after it.
struct Pushes {
  model::DesiredState desired;  // the state after the last push
  PendingChanges pending;       // every push merged, as the reconciler does
};

Pushes Push(model::DesiredState held, const std::vector<model::DesiredState>& next) {
  Pushes out{std::move(held), {}};
  for (const model::DesiredState& state : next) {
    model::AppliedDelta applied =
        model::ApplyDelta(model::DiffStates(out.desired, state), &out.desired);
    EXPECT_TRUE(model::SameContent(out.desired, state));
    out.pending.Merge(applied.summary, out.desired);
  }
  return out;
}

Plan PlanPushes(const model::DesiredState& held, const std::vector<model::DesiredState>& next,
                const PlanOptions& options = {}) {
  Pushes pushes = Push(held, next);
  return PlanChanges(pushes.desired, pushes.pending, options);
}

TEST(PlanTest, AWorkerBornFromWrittenFilesGetsOnlyTheChangesSince) {
  // Servers are seeded as always (FullSeedSendsEveryManagedField). Written before the reload: /m
  // and /a. /other was not written (its file could not carry it).
  model::DesiredState written = Desired()
                                    .Map("/m", {{"k1", "v1"}, {"k2", "v2"}})
                                    .Map("/other", {{"o", "1"}})
                                    .Acl("/a", {"p1"});
  model::DesiredState now = Desired()
                                .Map("/m", {{"k1", "v1"}, {"k2", "changed"}, {"k3", "new"}})
                                .Map("/other", {{"o", "1"}})
                                .Acl("/a", {"p1", "p2"});
  Pushes since = Push(written, {now});
  TablesAtBirth born;
  born.maps = {"/m"};
  born.acls = {"/a"};
  born.since = &since.pending;
  Plan plan = PlanFullSeed(since.desired, &born);
  EXPECT_THAT(Steps(plan), ElementsAre("map//m entries/k2", "map//m entries/k3",
                                       "map//other entries", "acl//a patterns/p2"));
  // From what the files gave it, the worker then holds the desired state.
  ObservedWorker born_holding;
  born_holding.maps["/m"] = ObservedEntries(written.maps.at("/m"));
  born_holding.maps["/other"] = ObservedEntries(model::StringTable());
  born_holding.acls["/a"] = ObservedEntries(written.acls.at("/a"));
  testing::SimWorker sim(born_holding);
  testing::ApplyPlan(&sim, plan);
  EXPECT_EQ(sim.SortedMapEntries("/m"), testing::SimEntries(now.maps.at("/m")));
  EXPECT_EQ(sim.SortedMapEntries("/other"), testing::SimEntries(now.maps.at("/other")));
  EXPECT_EQ(sim.SortedAclEntries("/a"), testing::SimEntries(now.acls.at("/a")));
  // Nothing changed since the write: the tables cost nothing.
  PendingChanges none;
  born.since = &none;
  EXPECT_THAT(Steps(PlanFullSeed(written, &born)), ElementsAre("map//other entries"));
}

// The same rule for pushes (PlanChanges) and for the changes a worker born from written files
// lacks (PlanFullSeed).
TEST(PlanTest, PendingChangesFollowTheVersionsEntryLookup) {
  model::DesiredState held;
  model::StringTable table;
  for (int i = 0; i < 10000; ++i) table.Set(absl::StrCat("k", i), "old");
  held.maps["/m"] = table;
  model::DesiredState next = held;
  for (int i = 0; i < 100; ++i) next.maps["/m"].Set(absl::StrCat("k", i), "new");
  Pushes pushes = Push(held, {next});
  PlanOptions walks;
  walks.entry_lookup = model::EntryLookup::kWalksTable;
  EXPECT_EQ(PlanChanges(pushes.desired, pushes.pending, {}).actions.size(), 100u);
  EXPECT_THAT(Kinds(PlanChanges(pushes.desired, pushes.pending, walks)),
              ElementsAre(ActionKind::kReplaceMap));
  TablesAtBirth born;
  born.maps = {"/m"};
  born.since = &pushes.pending;
  EXPECT_EQ(PlanFullSeed(pushes.desired, &born).actions.size(), 100u);
  EXPECT_THAT(Kinds(PlanFullSeed(pushes.desired, &born, walks)),
              ElementsAre(ActionKind::kReplaceMap));
}

model::DesiredState ThreeServers() {
  return Desired()
      .Server("be", "s1", Spec("10.0.0.1", 80, 1, ServerState::kReady))
      .Server("be", "s2", Spec("10.0.0.2", 80, 1, ServerState::kReady))
      .Server("be", "s3", Spec("app.example.com", 80, 1, ServerState::kReady));
}

TEST(PlanChangesTest, OnlyTheChangedFieldsOfTheChangedServers) {
  model::DesiredState after = ThreeServers();
  after.backends["be"].servers["s2"].weight = 7;
  Plan plan = PlanPushes(ThreeServers(), {after});
  EXPECT_THAT(Steps(plan), ElementsAre("backend/be/server/s2 weight"));
  EXPECT_EQ(plan.actions[0].weight, 7);
  // The address sends the managed port along; a port change alone is an address action too.
  after = ThreeServers();
  after.backends["be"].servers["s1"].port = 8080;
  after.backends["be"].servers["s2"].address = "10.0.0.22";
  plan = PlanPushes(ThreeServers(), {after});
  EXPECT_THAT(Steps(plan),
              ElementsAre("backend/be/server/s1 address", "backend/be/server/s2 address"));
  EXPECT_EQ(plan.actions[0].address, "10.0.0.1");
  EXPECT_EQ(plan.actions[0].port, 8080);
  EXPECT_EQ(plan.actions[1].port, 80);
  // A hostname: `set server fqdn`; its port cannot be sent alone.
  after = ThreeServers();
  after.backends["be"].servers["s3"] = Spec("db.example.com", 81, 1, ServerState::kReady);
  plan = PlanPushes(ThreeServers(), {after});
  EXPECT_THAT(Steps(plan), ElementsAre("backend/be/server/s3 fqdn"));
  EXPECT_EQ(plan.actions[0].fqdn, "db.example.com");
  ASSERT_EQ(plan.stale.size(), 1u);
  EXPECT_EQ(plan.stale[0].field, "port");
  EXPECT_THAT(plan.stale[0].reason, ::testing::HasSubstr("FQDN"));
  // Nothing changed: nothing planned.
  EXPECT_TRUE(PlanPushes(ThreeServers(), {ThreeServers()}).empty());
}

TEST(PlanChangesTest, SafeOrderWithinAServer) {
  model::DesiredState maint = ThreeServers();
  maint.backends["be"].servers["s1"] = Spec("10.0.0.9", 81, 5, ServerState::kMaint);
  EXPECT_THAT(Kinds(PlanPushes(ThreeServers(), {maint})),
              ElementsAre(ActionKind::kSetState, ActionKind::kSetAddress, ActionKind::kSetWeight));
  model::DesiredState ready = maint;
  ready.backends["be"].servers["s1"] = Spec("10.0.0.1", 80, 1, ServerState::kReady);
  EXPECT_THAT(Kinds(PlanPushes(maint, {ready})),
              ElementsAre(ActionKind::kSetAddress, ActionKind::kSetWeight, ActionKind::kSetState));
}

TEST(PlanChangesTest, ManagementStartingAndEnding) {
  model::DesiredState after = ThreeServers();
  after.backends["be"].servers["s4"] = Spec("10.0.0.4", 80, 3, ServerState::kDrain);
  after.backends["be"].servers.erase("s1");  // no longer managed: left as it is
  after.backends["be_new"].servers["n"] = Spec("n.example.com");
  // A server newly managed: what the worker holds of it is unknown, every managed field goes.
  EXPECT_THAT(Steps(PlanPushes(ThreeServers(), {after})),
              ElementsAre("backend/be/server/s4 state", "backend/be/server/s4 address",
                          "backend/be/server/s4 weight", "backend/be_new/server/n fqdn"));
  // A dropped backend: nothing.
  model::DesiredState dropped = ThreeServers();
  dropped.backends.erase("be");
  EXPECT_TRUE(PlanPushes(ThreeServers(), {dropped}).empty());
  // Dropped and managed again with another spec: planned against what the worker still holds
  // (the first before-value), so only the weight.
  model::DesiredState again = ThreeServers();
  again.backends["be"].servers["s1"].weight = 9;
  EXPECT_THAT(Steps(PlanPushes(ThreeServers(), {dropped, again})),
              ElementsAre("backend/be/server/s1 weight"));
}

// Pushes coalesce: a server changed and changed back costs nothing; changed three times, one
// command with the latest value.
TEST(PlanChangesTest, OnlyTheFirstBeforeValueCounts) {
  model::DesiredState w5 = ThreeServers(), w6 = ThreeServers();
  w5.backends["be"].servers["s2"].weight = 5;
  w6.backends["be"].servers["s2"].weight = 6;
  EXPECT_TRUE(PlanPushes(ThreeServers(), {w5, ThreeServers()}).empty());
  Plan plan = PlanPushes(ThreeServers(), {w5, w6, w5});
  EXPECT_THAT(Steps(plan), ElementsAre("backend/be/server/s2 weight"));
  EXPECT_EQ(plan.actions[0].weight, 5);
}

// Changed as FrozenWorkerReportsServerDiffsAndStillPlansMapsAndAcls: a server newly managed (its
// fields unknown) is no longer one "unknown" item but every managed field, withheld.
TEST(PlanChangesTest, FrozenWorkerGetsStaleServersAndItsMaps) {
  model::DesiredState before = ThreeServers();
  before.maps["/m"] = Table({{"k", "v"}});
  model::DesiredState after = before;
  after.backends["be"].servers["s1"].weight = 5;
  after.backends["be"].servers["s4"] = Spec("10.0.0.4");
  after.maps["/m"].Set("k", "w");
  PlanOptions frozen;
  frozen.servers_frozen = true;
  Plan plan = PlanPushes(before, {after}, frozen);
  EXPECT_THAT(Steps(plan), ElementsAre("map//m entries/k"));
  EXPECT_THAT(
      plan.stale,
      ElementsAre(StaleItem{"backend/be/server/s1", "weight", "5", "", kFrozenReason},
                  StaleItem{"backend/be/server/s4", "address", "10.0.0.4", "", kFrozenReason}));
  ASSERT_EQ(plan.withheld.size(), 2u);
  EXPECT_EQ(plan.withheld[0].kind, ActionKind::kSetWeight);
  EXPECT_EQ(plan.withheld[0].weight, 5);
  EXPECT_EQ(plan.withheld[1].kind, ActionKind::kSetAddress);
  EXPECT_EQ(plan.withheld[1].address, "10.0.0.4");
  // Not frozen: the same server actions, sent.
  Plan live = PlanPushes(before, {after});
  EXPECT_EQ(std::vector<Action>(live.actions.begin(), live.actions.end() - 1), plan.withheld);
}

// A server whose last apply failed on this worker: every managed field is planned again, not
// only the changed ones.
TEST(PlanChangesTest, StaleServersArePlannedInFull) {
  model::DesiredState after = ThreeServers();
  after.backends["be"].servers["s2"].weight = 7;
  absl::flat_hash_set<std::string> stale = {ServerObject("be", "s2")};
  PlanOptions options;
  options.stale_servers = &stale;
  EXPECT_THAT(Steps(PlanPushes(ThreeServers(), {after}, options)),
              ElementsAre("backend/be/server/s2 address", "backend/be/server/s2 weight",
                          "backend/be/server/s2 state"));
}

TEST(PlanChangesTest, MapEntriesPerKey) {
  model::DesiredState before = Desired().Map("/m", {{"a", "1"}, {"b", "2"}, {"c", "3"}});
  model::DesiredState after = Desired().Map("/m", {{"a", "1"}, {"b", "20"}, {"d", "4"}});
  Plan plan = PlanPushes(before, {after});
  EXPECT_THAT(Kinds(plan), ElementsAre(ActionKind::kSetMapEntry, ActionKind::kDelMapEntry,
                                       ActionKind::kAddMapEntry));
  EXPECT_THAT(Steps(plan), ElementsAre("map//m entries/b", "map//m entries/c", "map//m entries/d"));
  EXPECT_EQ(plan.actions[0].value, "20");
  EXPECT_EQ(plan.actions[2].value, "4");
  // Changed and changed back: nothing; added and deleted again: nothing.
  model::DesiredState with_e = before;
  with_e.maps["/m"].Set("e", "5");
  with_e.maps["/m"].Set("a", "10");
  EXPECT_TRUE(PlanPushes(before, {with_e, before}).empty());
  // The same through the worker: it ends with the desired entries.
  testing::SimWorker sim(ObservedWorker{{}, {{"/m", ObservedEntries(before.maps.at("/m"))}}, {}});
  testing::ApplyResult result = testing::ApplyPlan(&sim, plan);
  EXPECT_EQ(result.commands, 3);
  EXPECT_EQ(result.entries_not_found, 0);
  EXPECT_EQ(result.keys_not_found, 0);
  EXPECT_EQ(sim.SortedMapEntries("/m"),
            (std::vector<testing::SimEntry>{{"a", "1"}, {"b", "20"}, {"d", "4"}}));
}

TEST(PlanChangesTest, TablesReplacedWhenNewlyManagedOrMuchChanged) {
  model::DesiredState before = Desired().Map("/m", {{"k", "v"}}).Acl("/a", {"p"});
  // Newly managed: the worker holds whatever its file said.
  model::DesiredState created = before;
  created.maps["/new"] = Table({{"x", "y"}});
  created.acls["/new.acl"] = Patterns({"q"});
  Plan plan = PlanPushes(before, {created});
  EXPECT_THAT(Steps(plan), ElementsAre("map//new entries", "acl//new.acl patterns"));
  EXPECT_EQ(*plan.actions[0].content, Table({{"x", "y"}}));
  // No longer managed: nothing (its entries stay as they are).
  model::DesiredState dropped = before;
  dropped.maps.erase("/m");
  dropped.acls.erase("/a");
  EXPECT_TRUE(PlanPushes(before, {dropped}).empty());
  // Dropped and managed again: what the worker holds is unknown, so replaced.
  EXPECT_THAT(Steps(PlanPushes(before, {dropped, before})),
              ElementsAre("map//m entries", "acl//a patterns"));
  // More than kReplaceMinKeys keys of a small table, over several pushes: one replace.
  std::vector<model::DesiredState> pushes;
  model::DesiredState growing = before;
  for (size_t i = 0; i <= model::kReplaceMinKeys; ++i) {
    growing.maps["/m"].Set(absl::StrCat("k", i), "v");
    pushes.push_back(growing);
  }
  plan = PlanPushes(before, pushes);
  EXPECT_THAT(Kinds(plan), ElementsAre(ActionKind::kReplaceMap));
  EXPECT_EQ(*plan.actions[0].content, growing.maps.at("/m"));
  pushes.pop_back();  // exactly kReplaceMinKeys keys: still per entry
  EXPECT_EQ(PlanPushes(before, pushes).actions.size(), model::kReplaceMinKeys);
}

TEST(PlanChangesTest, AclPatterns) {
  model::DesiredState before = Desired().Acl("/a", {"p", "q"});
  model::DesiredState after = Desired().Acl("/a", {"q", "r"});
  Plan plan = PlanPushes(before, {after});
  EXPECT_THAT(Kinds(plan), ElementsAre(ActionKind::kDelAclPattern, ActionKind::kAddAclPattern));
  EXPECT_THAT(Steps(plan), ElementsAre("acl//a patterns/p", "acl//a patterns/r"));
  EXPECT_TRUE(PlanPushes(before, {after, before}).empty());
}

// After an apply cut short, whether the worker holds a key may differ from the summaries: map
// sets become upserts (`set map`, then `add map` on "entry not found."), a deleted key is
// deleted even if it was absent before, an ACL pattern to add is deleted first (no duplicate).
TEST(PlanChangesTest, UncertainWorker) {
  model::DesiredState before = Desired().Map("/m", {{"a", "1"}, {"b", "2"}}).Acl("/a", {"p"});
  model::DesiredState after = Desired().Map("/m", {{"a", "10"}, {"c", "3"}}).Acl("/a", {"p", "q"});
  PlanOptions uncertain;
  uncertain.uncertain = true;
  Plan plan = PlanPushes(before, {after}, uncertain);
  EXPECT_THAT(Kinds(plan), ElementsAre(ActionKind::kUpsertMapEntry, ActionKind::kDelMapEntry,
                                       ActionKind::kUpsertMapEntry, ActionKind::kDelAclPattern,
                                       ActionKind::kAddAclPattern));
  EXPECT_THAT(Steps(plan), ElementsAre("map//m entries/a", "map//m entries/b", "map//m entries/c",
                                       "acl//a patterns/q", "acl//a patterns/q"));
  // An entry changed and changed back may have been sent in between: sent again.
  model::DesiredState back = before;
  back.maps["/m"].Set("a", "1");
  model::DesiredState changed = before;
  changed.maps["/m"].Set("a", "5");
  EXPECT_THAT(Steps(PlanPushes(before, {changed, back}, uncertain)),
              ElementsAre("map//m entries/a"));
}

// A worker that held `held`, got the commands of the plan for `first` (all of them ran, but the
// connection closed before the replies came back: the reconciler cannot tell), then `second`
// arrived. The reconciler retries with the first run's changes merged back (MergeLater) and
// `uncertain`; the worker must end holding `second`.
void RetryAfterACut(const model::DesiredState& held, const model::DesiredState& first,
                    const model::DesiredState& second) {
  model::DesiredState state = held;
  PendingChanges taken;
  taken.Merge(model::ApplyDelta(model::DiffStates(state, first), &state).summary, state);
  ObservedWorker config;
  for (const auto& [name, backend] : held.backends) {
    for (const auto& [server, spec] : backend.servers) {
      bool ip = model::IsIpLiteral(spec.address);
      config.backends[name].servers[server] =
          Observed(ip ? spec.address : "192.0.2.7", spec.port.value_or(80), 0,
                   spec.weight.value_or(1), ip ? "" : spec.address);
    }
  }
  for (const auto& [name, table] : held.maps) config.maps[name] = ObservedEntries(table);
  for (const auto& [name, table] : held.acls) config.acls[name] = ObservedEntries(table);
  testing::SimWorker sim(config);
  ASSERT_TRUE(PlanWorker(held, sim.Observe(held), {}).empty());
  testing::ApplyPlan(&sim, PlanChanges(state, taken, {}));
  PendingChanges later;
  later.Merge(model::ApplyDelta(model::DiffStates(state, second), &state).summary, state);
  taken.MergeLater(later, state);
  PlanOptions uncertain;
  uncertain.uncertain = true;
  Plan retry = PlanChanges(state, taken, uncertain);
  testing::ApplyPlan(&sim, retry);
  Plan left = PlanWorker(state, sim.Observe(state), {});
  EXPECT_THAT(Steps(left), IsEmpty())
      << "the worker does not hold the desired state after the retry";
}

TEST(PlanChangesTest, RetryAfterACutRestoresMapEntries) {
  model::DesiredState empty = Desired().Map("/m", {{"x", "0"}});
  model::DesiredState with_k = Desired().Map("/m", {{"x", "0"}, {"k", "v"}});
  model::DesiredState other_k = Desired().Map("/m", {{"x", "0"}, {"k", "w"}});
  {
    SCOPED_TRACE("added, then deleted");
    RetryAfterACut(empty, with_k, empty);
  }
  {
    SCOPED_TRACE("deleted, then added back");
    RetryAfterACut(with_k, empty, with_k);
  }
  {
    SCOPED_TRACE("changed, then changed back");
    RetryAfterACut(with_k, other_k, with_k);
  }
}

// Expected to fail with agent/plan/plan.cc at cb512e6: PlanPendingTable's ACL branch ignores
// `uncertain` for a pattern absent both before and now (the cut run's `add acl` stays) and for
// one present both before and now (the cut run's `del acl` stays).
TEST(PlanChangesTest, RetryAfterACutRestoresAclPatterns) {
  model::DesiredState without = Desired().Acl("/a", {"x"});
  model::DesiredState with_p = Desired().Acl("/a", {"x", "p"});
  {
    SCOPED_TRACE("added, then deleted");
    RetryAfterACut(without, with_p, without);
  }
  {
    SCOPED_TRACE("deleted, then added back");
    RetryAfterACut(with_p, without, with_p);
  }
}

// Expected to fail with agent/plan/plan.cc at cb512e6: PlanChanges ignores `uncertain` for
// servers, so a field the cut run changed and the next push changed back (before == now) is
// never sent again.
TEST(PlanChangesTest, RetryAfterACutRestoresServers) {
  model::DesiredState weight_10 = ThreeServers();
  weight_10.backends["be"].servers["s1"].weight = 10;
  model::DesiredState maint = ThreeServers();
  maint.backends["be"].servers["s2"].state = ServerState::kMaint;
  model::DesiredState moved = ThreeServers();
  moved.backends["be"].servers["s1"].address = "10.0.0.99";
  {
    SCOPED_TRACE("weight changed, then changed back");
    RetryAfterACut(ThreeServers(), weight_10, ThreeServers());
  }
  {
    SCOPED_TRACE("state changed, then changed back");
    RetryAfterACut(ThreeServers(), maint, ThreeServers());
  }
  {
    SCOPED_TRACE("address changed, then changed back");
    RetryAfterACut(ThreeServers(), moved, ThreeServers());
  }
}

TEST(ObservedTest, BackendReplies) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedBackend be_app = FixtureBackend(version, "worker_show_servers_state_be_app.txt");
    EXPECT_TRUE(be_app.present);
    const ObservedServer& srv1 = be_app.servers.at("SRV1");
    EXPECT_EQ(srv1.address, "192.0.2.1");
    EXPECT_EQ(srv1.port, 80);
    EXPECT_EQ(srv1.admin_state, 5);
    EXPECT_EQ(srv1.op_state, 0);
    EXPECT_EQ(srv1.user_weight, 1);
    EXPECT_EQ(srv1.fqdn, "");

    absl::StatusOr<ObservedBackend> gone = BackendFromReply("Can't find backend.\n\n");
    ASSERT_TRUE(gone.ok()) << gone.status();
    EXPECT_FALSE(gone->present);
    gone = BackendFromReply(ReadFixture(version, "err_no_such_backend.txt"));
    ASSERT_TRUE(gone.ok());
    EXPECT_FALSE(gone->present);

    EXPECT_TRUE(
        absl::IsNotFound(BackendFromReply(ReadFixture(version, "err_unknown_pid.txt")).status()));
    EXPECT_TRUE(absl::IsFailedPrecondition(
        BackendFromReply(ReadFixture(version, "err_unknown_command.txt")).status()));
    EXPECT_TRUE(
        absl::IsUnavailable(BackendFromReply("Can't connect to the target CLI!\n").status()));
    EXPECT_TRUE(absl::IsInvalidArgument(BackendFromReply("1\n# be_id be_name\n").status()));
    EXPECT_TRUE(absl::IsInvalidArgument(BackendFromReply("").status()));
  }
}

TEST(ObservedTest, MapAndAclReplies) {
  absl::StatusOr<ObservedTable> map = MapFromReply("\n");
  ASSERT_TRUE(map.ok());
  EXPECT_TRUE(map->present);
  EXPECT_TRUE(map->entries.empty());
  map = MapFromReply("Unknown map identifier. Please use #<id> or <file>.\n\n");
  ASSERT_TRUE(map.ok());
  EXPECT_FALSE(map->present);
  // Split at the first space: the key is the first word, the value the rest of the line.
  map = MapFromReply("0x55 k  two  spaces \n0x56 k2 \n");
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->entries, Table({{"k", " two  spaces "}, {"k2", ""}}));
  EXPECT_FALSE(map->duplicates);
  // A key listed twice is flagged (the table keeps the last value).
  map = MapFromReply("0x55 k v\n0x56 x y\n0x57 k w\n\n");
  ASSERT_TRUE(map.ok());
  EXPECT_TRUE(map->duplicates);
  EXPECT_EQ(map->entries.size(), 2u);
  EXPECT_TRUE(absl::IsNotFound(
      MapFromReply("Can't find the target PID matching the prefix '@!9'\n").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MapFromReply("garbage\n").status()));

  absl::StatusOr<ObservedTable> acl = AclFromReply("0x55 10.0.0.0/8\n0x56 a b\n\n");
  ASSERT_TRUE(acl.ok());
  EXPECT_EQ(acl->entries, Patterns({"10.0.0.0/8", "a b"}));
  EXPECT_FALSE(acl->duplicates);
  acl = AclFromReply("0x55 10.0.0.0/8\n0x56 10.0.0.0/8\n\n");
  ASSERT_TRUE(acl.ok());
  EXPECT_TRUE(acl->duplicates);
  acl = AclFromReply("Unknown ACL identifier. Please use #<id> or <file>.\n\n");
  ASSERT_TRUE(acl.ok());
  EXPECT_FALSE(acl->present);
  EXPECT_TRUE(absl::IsPermissionDenied(AclFromReply("Permission denied\n\n").status()));
}

TEST(ObservedTest, ObjectNames) {
  Action action;
  action.kind = ActionKind::kSetAddress;
  action.backend = "be_app";
  action.server = "SRV_1";
  EXPECT_EQ(action.object(), "backend/be_app/server/SRV_1");
  action.kind = ActionKind::kReplaceMap;
  action.map_or_acl = "/etc/haproxy/hosts.map";
  EXPECT_EQ(action.object(), "map//etc/haproxy/hosts.map");
  EXPECT_EQ(action.field(), "entries");
  action.kind = ActionKind::kUpsertMapEntry;
  action.key = "a.example.com";
  EXPECT_EQ(action.object(), "map//etc/haproxy/hosts.map");
  EXPECT_EQ(action.field(), "entries/a.example.com");
  action.kind = ActionKind::kReplaceAcl;
  action.map_or_acl = "/etc/x.acl";
  EXPECT_EQ(action.object(), "acl//etc/x.acl");
  EXPECT_EQ(action.field(), "patterns");
  action.kind = ActionKind::kDelAclPattern;
  action.key = "10.0.0.0/8";
  EXPECT_EQ(action.field(), "patterns/10.0.0.0/8");
  EXPECT_FALSE(IsServerAction(ActionKind::kAddMapEntry));
  EXPECT_TRUE(IsServerAction(ActionKind::kSetState));
  EXPECT_TRUE(IsReplaceAction(ActionKind::kReplaceAcl));
  EXPECT_FALSE(IsReplaceAction(ActionKind::kSetMapEntry));
}

// What each action sets, as stale items report it (moved from reconcile/outcome.cc with
// FrozenItem, which frozen workers' items and refusals both use).
TEST(ObservedTest, WhatAnActionSets) {
  Action action;
  action.kind = ActionKind::kSetAddress;
  action.address = "10.0.0.1";
  EXPECT_EQ(action.desired(), "10.0.0.1");
  action.port = 8080;
  EXPECT_EQ(action.desired(), "10.0.0.1:8080");
  action.kind = ActionKind::kSetFqdn;
  action.fqdn = "app.example.com";
  EXPECT_EQ(action.desired(), "app.example.com");
  action.kind = ActionKind::kSetWeight;
  action.weight = 20;
  EXPECT_EQ(action.desired(), "20");
  action.kind = ActionKind::kSetState;
  action.state = ServerState::kDrain;
  EXPECT_EQ(action.desired(), "DRAIN");
  action.backend = "be";
  action.server = "s";
  EXPECT_EQ(FrozenItem(action),
            (StaleItem{"backend/be/server/s", "state", "DRAIN", "", kFrozenReason}));
  action.kind = ActionKind::kReplaceMap;
  EXPECT_EQ(action.desired(), "0 entries");
  action.content = std::make_shared<const model::StringTable>(Table({{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(action.desired(), "2 entries");
  action.value = "v";
  for (ActionKind kind :
       {ActionKind::kSetMapEntry, ActionKind::kAddMapEntry, ActionKind::kUpsertMapEntry}) {
    action.kind = kind;
    EXPECT_EQ(action.desired(), "v");
  }
  action.kind = ActionKind::kDelMapEntry;
  EXPECT_EQ(action.desired(), "absent");
  action.kind = ActionKind::kDelAclPattern;
  EXPECT_EQ(action.desired(), "absent");
  action.kind = ActionKind::kAddAclPattern;
  EXPECT_EQ(action.desired(), "present");
}

}  // namespace
}  // namespace hawk::plan

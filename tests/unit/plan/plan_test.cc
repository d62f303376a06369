#include "agent/plan/plan.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/model/desired_json.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/observed.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::plan {
namespace {

using model::ServerState;
using parse::testing::kVersions;
using parse::testing::ReadFixture;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;

model::DesiredServer Server(std::string name, std::string address,
                            absl::optional<int> port = absl::nullopt,
                            absl::optional<int> weight = absl::nullopt,
                            absl::optional<ServerState> state = absl::nullopt) {
  return model::DesiredServer{std::move(name), std::move(address), port, weight, state};
}

model::DesiredState Backends(std::vector<model::DesiredBackend> backends) {
  model::DesiredState state;
  state.backends = std::move(backends);
  return state;
}

ObservedBackend FixtureBackend(absl::string_view version, absl::string_view name) {
  absl::StatusOr<ObservedBackend> backend = BackendFromReply(ReadFixture(version, name));
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *backend : ObservedBackend{false, {}};
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

// One backend "be" holding one observed server "s".
ObservedWorker OneServer(ObservedServer server) {
  ObservedBackend backend;
  backend.servers["s"] = std::move(server);
  return WithBackend("be", std::move(backend));
}

Plan PlanOne(const model::DesiredServer& want, const ObservedServer& have, bool frozen = false) {
  PlanOptions options;
  options.servers_frozen = frozen;
  return PlanWorker(Backends({{"be", {want}}}), OneServer(have), options);
}

std::vector<ActionKind> Kinds(const Plan& plan) {
  std::vector<ActionKind> kinds;
  for (const Action& action : plan.actions) kinds.push_back(action.kind);
  return kinds;
}

TEST(PlanTest, FixtureStateAsDesiredNeedsNothing) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedBackend be_app = FixtureBackend(version, "worker_show_servers_state_be_app.txt");
    ASSERT_EQ(be_app.servers.size(), 4u);
    const ObservedServer& web1 = be_app.servers.at("web1");
    // SRV1..3: `server-template SRV 3 192.0.2.1:80 disabled` (FMAINT|CMAINT).
    model::DesiredState desired = Backends(
        {{"be_app",
          {Server("SRV1", "192.0.2.1", 80, 1, ServerState::kMaint), Server("SRV2", "192.0.2.1", 80),
           Server("web1", "127.0.0.1", web1.port, 1, ServerState::kReady)}}});
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
        Backends(
            {{"be_app",
              {Server("SRV1", "192.0.2.1", absl::nullopt, absl::nullopt, ServerState::kReady)}}}),
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
        Backends({{"be_app", {Server("SRV1", "127.0.0.1", srv1.port, 10, ServerState::kReady)}}}),
        WithBackend("be_app", be_app), {});
    EXPECT_THAT(plan.actions, IsEmpty());
    EXPECT_THAT(plan.stale, IsEmpty());
    // The dynamic server `fresh` starts in forced maintenance.
    plan = PlanWorker(
        Backends(
            {{"be_app",
              {Server("fresh", "127.0.0.1", absl::nullopt, absl::nullopt, ServerState::kReady)}}}),
        WithBackend("be_app", be_app), {});
    EXPECT_THAT(Kinds(plan), ElementsAre(ActionKind::kSetState));
  }
}

TEST(PlanTest, AddressAndPort) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedBackend be_app = FixtureBackend(version, "worker_show_servers_state_be_app.txt");
    int port = be_app.servers.at("web1").port;
    auto plan_for = [&](model::DesiredServer want) {
      return PlanWorker(Backends({{"be_app", {std::move(want)}}}), WithBackend("be_app", be_app),
                        {});
    };
    // Address differs, port managed and equal: the port is sent along.
    Plan plan = plan_for(Server("web1", "10.0.0.5", port));
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetAddress);
    EXPECT_EQ(plan.actions[0].address, "10.0.0.5");
    EXPECT_EQ(plan.actions[0].port, port);
    EXPECT_EQ(plan.actions[0].field(), "address");
    // Address differs, port unmanaged.
    plan = plan_for(Server("web1", "10.0.0.5"));
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].port, absl::nullopt);
    // Only the port differs.
    plan = plan_for(Server("web1", "127.0.0.1", 8080));
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetAddress);
    EXPECT_EQ(plan.actions[0].address, "127.0.0.1");
    EXPECT_EQ(plan.actions[0].port, 8080);
    // Nothing differs; an unmanaged port is never compared.
    EXPECT_TRUE(plan_for(Server("web1", "127.0.0.1", port)).empty());
    EXPECT_TRUE(plan_for(Server("web1", "127.0.0.1")).empty());
  }
}

TEST(PlanTest, Ipv6ComparedInBinaryForm) {
  EXPECT_TRUE(PlanOne(Server("s", "0:0::1", 80), Observed("::1", 80, 0)).empty());
  EXPECT_TRUE(PlanOne(Server("s", "2001:DB8:0:0::5"), Observed("2001:db8::5", 80, 0)).empty());
  EXPECT_FALSE(PlanOne(Server("s", "::2"), Observed("::1", 80, 0)).empty());
  // An IPv4-mapped IPv6 address is a different address family from the IPv4 literal.
  EXPECT_FALSE(PlanOne(Server("s", "::ffff:10.0.0.1"), Observed("10.0.0.1", 80, 0)).empty());
  // An unresolved server prints "-" (""): any IP literal differs.
  EXPECT_FALSE(PlanOne(Server("s", "10.0.0.1"), Observed("", 0, 0)).empty());
}

TEST(PlanTest, IpLiteralClassificationAgreesWithTheModel) {
  for (const char* text :
       {"10.0.0.1", "::1", "0:0::1", "::ffff:1.2.3.4", "2001:db8::5", "1.2.3", "01.2.3.4",
        "256.1.1.1", "[::1]", "fe80::1%eth0", "a.b", "example.com", "", "1.2.3.4 ", "::1:80"}) {
    EXPECT_EQ(IsIpLiteral(text), model::IsIpLiteral(text)) << text;
  }
}

TEST(PlanTest, HostnameSetsFqdnComparedCaseInsensitively) {
  Plan plan = PlanOne(Server("s", "app.example.com"), Observed("10.0.0.1", 80, 0));
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetFqdn);
  EXPECT_EQ(plan.actions[0].fqdn, "app.example.com");
  EXPECT_EQ(plan.actions[0].field(), "fqdn");
  EXPECT_TRUE(
      PlanOne(Server("s", "App.Example.COM", 80), Observed("10.0.0.1", 80, 0, 1, "app.example.com"))
          .empty());
}

TEST(PlanTest, PortOfAnFqdnServerIsStale) {
  Plan plan = PlanOne(Server("s", "app.example.com", 8080),
                      Observed("10.0.0.1", 80, 0, 1, "app.example.com"));
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
    absl::StatusOr<std::vector<parse::ServerStateRow>> rows =
        parse::ParseServersState(ReadFixture(version, "worker_show_servers_state_all.txt"));
    ASSERT_TRUE(rows.ok());
    auto backends = BackendsFromServersState(*rows);
    ASSERT_EQ(backends.size(), 2u);
    ASSERT_EQ(backends.at("be_other").servers.at("o1").user_weight, 50);
    ObservedWorker worker;
    worker.backends = backends;
    Plan plan = PlanWorker(Backends({{"be_other", {Server("o1", "127.0.0.1", absl::nullopt, 20)}}}),
                           worker, {});
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].kind, ActionKind::kSetWeight);
    EXPECT_EQ(plan.actions[0].weight, 20);
    EXPECT_EQ(plan.actions[0].field(), "weight");
    EXPECT_TRUE(PlanWorker(Backends({{"be_other", {Server("o1", "127.0.0.1", absl::nullopt, 50)}}}),
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
    Plan plan = PlanOne(Server("s", "10.0.0.1", absl::nullopt, absl::nullopt, c.want),
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
  Plan plan = PlanOne(Server("s", "10.0.0.1", absl::nullopt, absl::nullopt, ServerState::kReady),
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
  worker.maps["/m_gone"] = ObservedMap{false, {}};
  model::DesiredState desired =
      Backends({{"be", {Server("s", "10.0.0.1"), Server("t", "10.0.0.2")}},
                {"be_gone", {Server("s", "10.0.0.1")}},
                {"be_unobserved", {Server("s", "10.0.0.1")}}});
  desired.maps = {{"/m_gone", {{"k", "v"}}}, {"/m_unobserved", {}}};
  desired.acls = {{"/a_unobserved", {"p"}}};
  Plan plan = PlanWorker(desired, worker, {});
  EXPECT_THAT(plan.actions, IsEmpty());
  EXPECT_THAT(
      plan.stale,
      ElementsAre(
          StaleItem{"backend/be/server/t", "", "present", "absent", "worker has no server be/t"},
          StaleItem{"backend/be_gone", "", "present", "absent", "worker has no backend be_gone"},
          StaleItem{"backend/be_unobserved", "", "present", "absent",
                    "worker has no backend be_unobserved"},
          StaleItem{"map//m_gone", "", "present", "absent", "worker has no map /m_gone"},
          StaleItem{"map//m_unobserved", "", "present", "absent",
                    "worker has no map /m_unobserved"},
          StaleItem{"acl//a_unobserved", "", "present", "absent",
                    "worker has no acl /a_unobserved"}));
}

TEST(PlanTest, UnsendableNamesAreStaleNotActions) {
  ObservedWorker worker;
  worker.backends["be"].servers["s\n1"] = Observed("10.0.0.1", 80, 0);
  worker.maps[std::string("/m\0x", 4)] = ObservedMap{};
  model::DesiredState desired = Backends({{"be", {Server("s\n1", "10.0.0.2")}}});
  desired.maps = {{std::string("/m\0x", 4), {{"k", "v"}}}};
  Plan plan = PlanWorker(desired, worker, {});
  EXPECT_THAT(plan.actions, IsEmpty());
  ASSERT_EQ(plan.stale.size(), 2u);
  EXPECT_THAT(plan.stale[0].reason, ::testing::HasSubstr("LF, CR or NUL"));
  EXPECT_THAT(PlanFullSeed(desired).actions, IsEmpty());
  EXPECT_EQ(PlanFullSeed(desired).stale.size(), 2u);
}

TEST(PlanTest, OrderWithinAServerStopsTrafficFirstAndStartsItLast) {
  ObservedServer have = Observed("10.0.0.1", 80, 0, 1);
  Plan maint = PlanOne(Server("s", "10.0.0.2", 81, 5, ServerState::kMaint), have);
  EXPECT_THAT(Kinds(maint),
              ElementsAre(ActionKind::kSetState, ActionKind::kSetAddress, ActionKind::kSetWeight));
  Plan drain = PlanOne(Server("s", "db.example.com", absl::nullopt, 5, ServerState::kDrain), have);
  EXPECT_THAT(Kinds(drain),
              ElementsAre(ActionKind::kSetState, ActionKind::kSetFqdn, ActionKind::kSetWeight));
  Plan ready = PlanOne(Server("s", "10.0.0.2", 81, 5, ServerState::kReady),
                       Observed("10.0.0.1", 80, parse::kAdminFMaint, 1));
  EXPECT_THAT(Kinds(ready),
              ElementsAre(ActionKind::kSetAddress, ActionKind::kSetWeight, ActionKind::kSetState));
}

TEST(PlanTest, OrderAcrossObjectsIsByNameWhateverTheInputOrder) {
  ObservedWorker worker;
  for (const char* b : {"be_b", "be_a"}) {
    for (const char* s : {"s2", "s1"}) worker.backends[b].servers[s] = Observed("10.0.0.1", 80, 0);
  }
  worker.maps["/z.map"] = ObservedMap{};
  worker.maps["/a.map"] = ObservedMap{};
  worker.acls["/y.acl"] = ObservedAcl{};
  worker.acls["/b.acl"] = ObservedAcl{};
  model::DesiredState desired =
      Backends({{"be_b", {Server("s2", "10.0.0.9"), Server("s1", "10.0.0.9")}},
                {"be_a", {Server("s2", "10.0.0.9"), Server("s1", "10.0.0.9")}}});
  desired.maps = {{"/z.map", {{"k", "v"}}}, {"/a.map", {{"k", "v"}}}};
  desired.acls = {{"/y.acl", {"p"}}, {"/b.acl", {"p"}}};
  std::vector<std::string> objects;
  for (const Action& action : PlanWorker(desired, worker, {}).actions) {
    objects.push_back(action.object());
  }
  EXPECT_THAT(objects, ElementsAre("backend/be_a/server/s1", "backend/be_a/server/s2",
                                   "backend/be_b/server/s1", "backend/be_b/server/s2", "map//a.map",
                                   "map//z.map", "acl//b.acl", "acl//y.acl"));
  // The same inputs built in another order give the same plan.
  ObservedWorker reversed;
  for (const char* b : {"be_a", "be_b"}) {
    for (const char* s : {"s1", "s2"})
      reversed.backends[b].servers[s] = Observed("10.0.0.1", 80, 0);
  }
  reversed.maps = {{"/a.map", {}}, {"/z.map", {}}};
  reversed.acls = {{"/b.acl", {}}, {"/y.acl", {}}};
  EXPECT_EQ(PlanWorker(desired, reversed, {}), PlanWorker(desired, worker, {}));
}

TEST(PlanTest, FrozenWorkerReportsServerDiffsAndStillPlansMapsAndAcls) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ObservedWorker worker =
        WithBackend("be_app", FixtureBackend(version, "old_worker_show_servers_state.txt"));
    absl::StatusOr<ObservedMap> map =
        MapFromReply(ReadFixture(version, "worker_show_map_entries.txt"));
    ASSERT_TRUE(map.ok());
    worker.maps["/etc/haproxy/hosts.map"] = *map;
    worker.acls["/etc/haproxy/blocked.acl"] = ObservedAcl{true, {"10.0.0.0/8"}};
    const ObservedServer& web1 = worker.backends.at("be_app").servers.at("web1");
    model::DesiredState desired =
        Backends({{"be_app",
                   {Server("SRV2", "192.0.2.1", 80, 1, ServerState::kReady),
                    Server("web1", "10.1.1.1", web1.port + 1, 7, ServerState::kDrain)}}});
    desired.maps = {{"/etc/haproxy/hosts.map", {{"a.example.com", "be_app"}}}};
    desired.acls = {{"/etc/haproxy/blocked.acl", {"10.0.0.0/8", "192.168.0.0/16"}}};
    PlanOptions frozen;
    frozen.servers_frozen = true;
    Plan plan = PlanWorker(desired, worker, frozen);
    EXPECT_THAT(Kinds(plan), ElementsAre(ActionKind::kReplaceMap, ActionKind::kReplaceAcl));
    std::vector<std::string> fields;
    for (const StaleItem& item : plan.stale) {
      EXPECT_EQ(item.reason, kFrozenReason) << item.object << " " << item.field;
      fields.push_back(absl::StrCat(item.object, ":", item.field));
    }
    EXPECT_THAT(
        fields,
        ElementsAre("backend/be_app/server/SRV2:state", "backend/be_app/server/web1:address",
                    "backend/be_app/server/web1:port", "backend/be_app/server/web1:weight",
                    "backend/be_app/server/web1:state"));
    EXPECT_EQ(plan.stale[0].desired, "READY");
    EXPECT_EQ(plan.stale[0].actual, "MAINT (srv_admin_state 0x05: FMAINT CMAINT)");
    EXPECT_EQ(plan.stale[1].desired, "10.1.1.1");
    EXPECT_EQ(plan.stale[1].actual, "127.0.0.1");
    // The same worker, not frozen: actions instead.
    Plan live = PlanWorker(desired, worker, {});
    EXPECT_THAT(live.stale, IsEmpty());
    EXPECT_THAT(Kinds(live), ElementsAre(ActionKind::kSetState, ActionKind::kSetState,
                                         ActionKind::kSetAddress, ActionKind::kSetWeight,
                                         ActionKind::kReplaceMap, ActionKind::kReplaceAcl));
  }
}

TEST(PlanTest, MapsComparedAsMultisetsOfJoinedLines) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    absl::StatusOr<ObservedMap> map =
        MapFromReply(ReadFixture(version, "worker_show_map_entries.txt"));
    ASSERT_TRUE(map.ok()) << map.status();
    EXPECT_THAT(map->lines, ElementsAre("a.example.com be_app", "b.example.com be_other"));
    ObservedWorker worker;
    worker.maps["/etc/haproxy/hosts.map"] = *map;
    auto plan_for = [&](std::vector<model::MapEntry> entries) {
      model::DesiredState desired;
      desired.maps = {{"/etc/haproxy/hosts.map", std::move(entries)}};
      return PlanWorker(desired, worker, {});
    };
    EXPECT_TRUE(plan_for({{"b.example.com", "be_other"}, {"a.example.com", "be_app"}}).empty());
    Plan plan = plan_for({{"a.example.com", "be_app"}, {"b.example.com", "be_app"}});
    ASSERT_EQ(plan.actions.size(), 1u);
    EXPECT_EQ(plan.actions[0].kind, ActionKind::kReplaceMap);
    EXPECT_EQ(plan.actions[0].object(), "map//etc/haproxy/hosts.map");
    EXPECT_EQ(plan.actions[0].field(), "entries");
    EXPECT_EQ(plan.actions[0].entries, (std::vector<model::MapEntry>{{"a.example.com", "be_app"},
                                                                     {"b.example.com", "be_app"}}));
    EXPECT_FALSE(plan_for({{"a.example.com", "be_app"}}).empty());
    EXPECT_FALSE(plan_for({}).empty());
  }
  // A duplicate on the worker is a difference.
  ObservedWorker worker;
  worker.maps["/m"] = ObservedMap{true, {"k v", "k v"}};
  model::DesiredState desired;
  desired.maps = {{"/m", {{"k", "v"}}}};
  EXPECT_FALSE(PlanWorker(desired, worker, {}).empty());
  // The documented ambiguity: a key with a space prints like a value with one.
  worker.maps["/m"] = ObservedMap{true, {"a b c"}};
  desired.maps = {{"/m", {{"a b", "c"}}}};
  EXPECT_TRUE(PlanWorker(desired, worker, {}).empty());
}

TEST(PlanTest, AclsComparedAsSets) {
  ObservedWorker worker;
  worker.acls["/a"] = ObservedAcl{true, {"10.0.0.0/8", "10.0.0.0/8", "192.168.0.0/16"}};
  model::DesiredState desired;
  desired.acls = {{"/a", {"192.168.0.0/16", "10.0.0.0/8"}}};
  EXPECT_TRUE(PlanWorker(desired, worker, {}).empty());
  desired.acls = {{"/a", {"10.0.0.0/8"}}};
  Plan plan = PlanWorker(desired, worker, {});
  ASSERT_EQ(plan.actions.size(), 1u);
  EXPECT_EQ(plan.actions[0].kind, ActionKind::kReplaceAcl);
  EXPECT_EQ(plan.actions[0].object(), "acl//a");
  EXPECT_EQ(plan.actions[0].field(), "patterns");
  EXPECT_THAT(plan.actions[0].patterns, ElementsAre("10.0.0.0/8"));
}

TEST(PlanTest, FullSeedSendsEveryManagedField) {
  model::DesiredState desired =
      Backends({{"be_b", {Server("s", "10.0.0.1", 80, 5, ServerState::kMaint)}},
                {"be_a",
                 {Server("y", "app.example.com", 8080, absl::nullopt, ServerState::kReady),
                  Server("x", "::1")}}});
  desired.maps = {{"/m", {{"k", "v"}}}};
  desired.acls = {{"/a", {"p"}}};
  Plan plan = PlanFullSeed(desired);
  EXPECT_THAT(plan.stale, IsEmpty());
  std::vector<std::string> steps;
  for (const Action& action : plan.actions) {
    steps.push_back(absl::StrCat(action.object(), ":", action.field()));
  }
  EXPECT_THAT(steps, ElementsAre("backend/be_a/server/x:address", "backend/be_a/server/y:fqdn",
                                 "backend/be_a/server/y:state", "backend/be_b/server/s:state",
                                 "backend/be_b/server/s:address", "backend/be_b/server/s:weight",
                                 "map//m:entries", "acl//a:patterns"));
  EXPECT_EQ(plan.actions[0].port, absl::nullopt);
  EXPECT_EQ(plan.actions[4].port, 80);
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
  absl::StatusOr<ObservedMap> map = MapFromReply("\n");
  ASSERT_TRUE(map.ok());
  EXPECT_TRUE(map->present);
  EXPECT_THAT(map->lines, IsEmpty());
  map = MapFromReply("Unknown map identifier. Please use #<id> or <file>.\n\n");
  ASSERT_TRUE(map.ok());
  EXPECT_FALSE(map->present);
  map = MapFromReply("0x55 k  two  spaces \n0x56 k2 \n");
  ASSERT_TRUE(map.ok());
  EXPECT_THAT(map->lines, ElementsAre("k  two  spaces ", "k2 "));
  EXPECT_TRUE(absl::IsNotFound(
      MapFromReply("Can't find the target PID matching the prefix '@!9'\n").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MapFromReply("garbage\n").status()));

  absl::StatusOr<ObservedAcl> acl = AclFromReply("0x55 10.0.0.0/8\n0x56 a b\n\n");
  ASSERT_TRUE(acl.ok());
  EXPECT_THAT(acl->patterns, ElementsAre("10.0.0.0/8", "a b"));
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
  action.kind = ActionKind::kReplaceAcl;
  action.map_or_acl = "/etc/x.acl";
  EXPECT_EQ(action.object(), "acl//etc/x.acl");
}

}  // namespace
}  // namespace hawk::plan

// The server planner (server_plan.h), table-driven: for each field a push can change, what is
// planned when the worker's server was observed, when it held the previous spec, and when
// nothing is known of it; on a live worker and on a frozen one. Then the round trip: applied to
// SimWorker, a live plan leaves nothing to plan.

#include "agent/plan/server_plan.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/model/cli_safety.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/observed.h"
#include "agent/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/plan/desired_builder.h"
#include "tests/unit/plan/sim_worker.h"

namespace hawk::plan {
namespace {

using model::ServerState;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Spec;

constexpr char kObject[] = "backend/be/server/s";
constexpr char kFqdnPortReason[] =
    "the port of an FQDN server can only change with its address: HAProxy has no port-only "
    "`set server` command";

// `spec` as `show servers state` shows a server that holds it: a hostname resolved to
// 192.0.2.7, an unmanaged port 80 and weight 1, the state in hawk's own bits.
ObservedServer ObservedHolding(const model::ServerSpec& spec) {
  bool ip = model::IsIpLiteral(spec.address);
  int admin = 0;
  if (spec.state == ServerState::kMaint) admin = parse::kAdminFMaint;
  if (spec.state == ServerState::kDrain) admin = parse::kAdminFDrain;
  return ObservedServer{
      ip ? spec.address : "192.0.2.7", spec.port.value_or(80), admin, parse::kOpRunning,
      spec.weight.value_or(1),         ip ? "" : spec.address};
}

ObservedWorker WorkerWith(const ObservedServer& server) {
  ObservedWorker worker;
  worker.backends["be"].servers["s"] = server;
  return worker;
}

Plan PlanOne(const model::ServerSpec& want, const ServerHas& has, bool frozen = false) {
  Plan plan;
  PlanServer("be", "s", want, has, frozen, &plan);
  return plan;
}

// Each action as "field=what it sets", after checking it is for be/s.
std::vector<std::string> Texts(const std::vector<Action>& actions) {
  std::vector<std::string> out;
  for (const Action& action : actions) {
    EXPECT_EQ(action.object(), kObject);
    out.push_back(absl::StrCat(action.field(), "=", action.desired()));
  }
  return out;
}

enum class Has { kObserved, kPrevious, kUnknown };

const char* HasName(Has has) {
  switch (has) {
    case Has::kObserved:
      return "observed";
    case Has::kPrevious:
      return "previous";
    case Has::kUnknown:
      return "unknown";
  }
  return "";
}

struct FieldCase {
  const char* changed;
  model::ServerSpec held;  // what the worker holds: observed as such, or the previous spec
  model::ServerSpec want;
  std::vector<std::string> known;    // observed or previous: the actions, in order
  std::vector<std::string> unknown;  // nothing known: the actions, in order
  std::vector<StaleItem> stale;      // observed or previous: what no command fixes
};

std::vector<FieldCase> FieldCases() {
  const model::ServerSpec base = Spec("10.0.0.1", 80, 1, ServerState::kReady);
  const model::ServerSpec app = Spec("app.example.com", 80, 1, ServerState::kReady);
  const std::vector<std::string> all = {"address=10.0.0.1:80", "weight=1", "state=READY"};
  return {
      {"nothing", base, base, {}, all, {}},
      {"address",
       base,
       Spec("10.0.0.2", 80, 1, ServerState::kReady),
       {"address=10.0.0.2:80"},
       {"address=10.0.0.2:80", "weight=1", "state=READY"},
       {}},
      // The port goes with the address: one `set server … addr <ip> port <p>`.
      {"port",
       base,
       Spec("10.0.0.1", 8080, 1, ServerState::kReady),
       {"address=10.0.0.1:8080"},
       {"address=10.0.0.1:8080", "weight=1", "state=READY"},
       {}},
      {"weight",
       base,
       Spec("10.0.0.1", 80, 5, ServerState::kReady),
       {"weight=5"},
       {"address=10.0.0.1:80", "weight=5", "state=READY"},
       {}},
      // MAINT and DRAIN stop traffic: the state goes first.
      {"state to MAINT",
       base,
       Spec("10.0.0.1", 80, 1, ServerState::kMaint),
       {"state=MAINT"},
       {"state=MAINT", "address=10.0.0.1:80", "weight=1"},
       {}},
      {"state to DRAIN",
       base,
       Spec("10.0.0.1", 80, 1, ServerState::kDrain),
       {"state=DRAIN"},
       {"state=DRAIN", "address=10.0.0.1:80", "weight=1"},
       {}},
      {"state to READY",
       Spec("10.0.0.1", 80, 1, ServerState::kMaint),
       base,
       {"state=READY"},
       all,
       {}},
      {"every field, into MAINT",
       base,
       Spec("10.0.0.2", 81, 5, ServerState::kMaint),
       {"state=MAINT", "address=10.0.0.2:81", "weight=5"},
       {"state=MAINT", "address=10.0.0.2:81", "weight=5"},
       {}},
      // READY lets traffic in: the state goes last, once the address is right.
      {"every field, into READY", Spec("10.0.0.2", 81, 5, ServerState::kMaint), base, all, all, {}},
      {"fqdn",
       app,
       Spec("db.example.com", 80, 1, ServerState::kReady),
       {"fqdn=db.example.com"},
       {"fqdn=db.example.com", "weight=1", "state=READY"},
       {}},
      // No command sets the port of a hostname server alone.
      {"port of a hostname",
       app,
       Spec("app.example.com", 8080, 1, ServerState::kReady),
       {},
       {"fqdn=app.example.com", "weight=1", "state=READY"},
       {StaleItem{kObject, "port", "8080", "80", kFqdnPortReason}}},
      {"address to hostname",
       base,
       app,
       {"fqdn=app.example.com"},
       {"fqdn=app.example.com", "weight=1", "state=READY"},
       {}},
      {"hostname to address", app, base, {"address=10.0.0.1:80"}, all, {}},
      // Fields the desired state does not manage are never compared nor sent.
      {"unmanaged fields",
       Spec("10.0.0.1", 81, 7, ServerState::kMaint),
       Spec("10.0.0.1"),
       {},
       {"address=10.0.0.1"},
       {}},
  };
}

TEST(ServerPlanTest, EachFieldOnEachKnowledgeLiveAndFrozen) {
  for (const FieldCase& c : FieldCases()) {
    ObservedServer observed = ObservedHolding(c.held);
    for (Has has : {Has::kObserved, Has::kPrevious, Has::kUnknown}) {
      for (bool frozen : {false, true}) {
        SCOPED_TRACE(absl::StrCat(c.changed, ", ", HasName(has), frozen ? ", frozen" : ""));
        ServerHas known = has == Has::kObserved   ? ServerHas(HasObserved{observed})
                          : has == Has::kPrevious ? ServerHas(HasPrevious{c.held})
                                                  : ServerHas(HasUnknown{});
        Plan plan = PlanOne(c.want, known, frozen);
        const std::vector<std::string>& actions = has == Has::kUnknown ? c.unknown : c.known;
        std::vector<StaleItem> stale = has == Has::kUnknown ? std::vector<StaleItem>() : c.stale;
        if (!frozen) {
          EXPECT_EQ(Texts(plan.actions), actions);
          EXPECT_THAT(plan.withheld, IsEmpty());
          EXPECT_EQ(plan.stale, stale);
          continue;
        }
        // Frozen: nothing sent; each action withheld and stale with what it would set.
        EXPECT_THAT(plan.actions, IsEmpty());
        EXPECT_EQ(Texts(plan.withheld), actions);
        for (const std::string& text : actions) {
          size_t equals = text.find('=');
          stale.push_back(StaleItem{kObject, text.substr(0, equals), text.substr(equals + 1), "",
                                    kFrozenReason});
        }
        EXPECT_EQ(plan.stale, stale);
      }
    }
  }
}

// A previous spec names the port it managed, or none: "unmanaged".
TEST(ServerPlanTest, PortOfAHostnameAgainstAnUnmanagedPort) {
  model::ServerSpec before = Spec("app.example.com");
  Plan plan = PlanOne(Spec("app.example.com", 8080), HasPrevious{before});
  EXPECT_THAT(plan.actions, IsEmpty());
  EXPECT_THAT(plan.stale,
              ElementsAre(StaleItem{kObject, "port", "8080", "unmanaged", kFqdnPortReason}));
}

// Bits no command clears are seen only in an observation. On a frozen worker the state action
// is withheld, and its item replaces theirs: the field is stale because the worker is frozen.
TEST(ServerPlanTest, FrozenItemReplacesTheStateThatCannotBeCleared) {
  model::ServerSpec want = Spec("10.0.0.1", absl::nullopt, absl::nullopt, ServerState::kReady);
  ObservedServer have = ObservedHolding(Spec("10.0.0.1", 80, 1, ServerState::kMaint));  // FMAINT
  have.admin_state |= parse::kAdminIMaint;
  StaleItem inherited{kObject, "state", "READY", "MAINT",
                      "hawk cannot clear maintenance inherited from a tracked server (IMAINT)"};
  Plan live = PlanOne(want, HasObserved{have});
  EXPECT_EQ(Texts(live.actions), std::vector<std::string>{"state=READY"});
  EXPECT_THAT(live.stale, ElementsAre(inherited));
  Plan frozen = PlanOne(want, HasObserved{have}, /*frozen=*/true);
  EXPECT_THAT(frozen.actions, IsEmpty());
  EXPECT_EQ(Texts(frozen.withheld), std::vector<std::string>{"state=READY"});
  EXPECT_THAT(frozen.stale, ElementsAre(StaleItem{kObject, "state", "READY", "", kFrozenReason}));
  // Without FMAINT there is nothing to send: the inherited item stays, frozen or not.
  have.admin_state = parse::kAdminIMaint;
  EXPECT_THAT(PlanOne(want, HasObserved{have}, /*frozen=*/true).stale, ElementsAre(inherited));
  // Other servers' items are left alone.
  Plan two;
  two.stale.push_back(StaleItem{"backend/be/server/r", "state", "READY", "MAINT", "x"});
  have.admin_state = parse::kAdminFMaint;
  PlanServer("be", "s", want, HasObserved{have}, /*frozen=*/true, &two);
  EXPECT_THAT(two.stale,
              ElementsAre(StaleItem{"backend/be/server/r", "state", "READY", "MAINT", "x"},
                          StaleItem{kObject, "state", "READY", "", kFrozenReason}));
}

// Planning against the state a live plan produces yields an empty plan: applied to SimWorker
// (which runs the commands as HAProxy does) and observed back, nothing is left to send, and what
// no command fixes is the same as before. A worker that held the previous spec holds `want` now.
TEST(ServerPlanTest, PlanningAgainstWhatThePlanProducesPlansNothing) {
  for (const FieldCase& c : FieldCases()) {
    ObservedServer observed = ObservedHolding(c.held);
    for (Has has : {Has::kObserved, Has::kPrevious, Has::kUnknown}) {
      SCOPED_TRACE(absl::StrCat(c.changed, ", ", HasName(has)));
      ServerHas known = has == Has::kObserved   ? ServerHas(HasObserved{observed})
                        : has == Has::kPrevious ? ServerHas(HasPrevious{c.held})
                                                : ServerHas(HasUnknown{});
      Plan plan = PlanOne(c.want, known);
      testing::SimWorker sim(WorkerWith(observed));
      testing::ApplyPlan(&sim, plan);
      const ObservedServer* after = sim.Server("be", "s");
      ASSERT_NE(after, nullptr);
      Plan again = PlanOne(c.want, HasObserved{*after});
      EXPECT_THAT(again.actions, IsEmpty());
      EXPECT_EQ(again.stale, c.stale);  // the port of a hostname server, whatever was known
      EXPECT_TRUE(PlanOne(c.want, HasPrevious{c.want}).empty());
      EXPECT_THAT(PlanOne(c.want, HasPrevious{c.want}).stale, IsEmpty());
    }
  }
}

}  // namespace
}  // namespace hawk::plan

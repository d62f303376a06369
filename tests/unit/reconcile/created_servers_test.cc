// The servers hawk created on one worker (reconcile/created_servers.h): which of them go when the
// desired state leaves them out, which drain, and that hawk never deletes a server it did not
// create.

#include "agent/reconcile/created_servers.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::reconcile {
namespace {

using Key = CreatedServers::Key;
using plan::testing::Spec;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

model::ServerChange Change(const std::string& server, bool managed_after) {
  model::ServerChange change;
  change.backend = "be";
  change.server = server;
  change.before = Spec("10.0.0.1", 80);
  change.managed_after = managed_after;
  return change;
}

model::ChangeSummary Summary(std::vector<model::ServerChange> servers) {
  model::ChangeSummary summary;
  summary.servers = std::move(servers);
  return summary;
}

TEST(CreatedServersTest, OnlyWhatHawkCreatedIsDeletedWhenItLeavesTheDesiredState) {
  CreatedServers servers;
  Judged created;
  created.created = {Key{"be", "dyn"}};
  EXPECT_FALSE(servers.Take(created));
  EXPECT_THAT(servers.CreatedNames(), ElementsAre("be/dyn"));

  // `configured` was never created by hawk: leaving the desired state only stops its management.
  servers.Changed(Summary({Change("dyn", false), Change("configured", false)}));
  EXPECT_THAT(servers.to_delete(), UnorderedElementsAre(Key{"be", "dyn"}));

  // Refused while connections remain: draining, still to delete.
  Judged in_use;
  in_use.in_use = {Key{"be", "dyn"}};
  servers.Take(in_use);
  EXPECT_TRUE(servers.draining());
  EXPECT_THAT(servers.DrainingNames(), ElementsAre("be/dyn"));
  EXPECT_THAT(servers.to_delete(), UnorderedElementsAre(Key{"be", "dyn"}));

  // Deleted: forgotten.
  Judged gone;
  gone.gone = {Key{"be", "dyn"}};
  servers.Take(gone);
  EXPECT_FALSE(servers.draining());
  EXPECT_THAT(servers.to_delete(), IsEmpty());
  EXPECT_THAT(servers.CreatedNames(), IsEmpty());
}

TEST(CreatedServersTest, DesiredAgainBeforeItWentIsKept) {
  CreatedServers servers;
  Judged created;
  created.created = {Key{"be", "dyn"}};
  servers.Take(created);
  servers.Changed(Summary({Change("dyn", false)}));
  Judged in_use;
  in_use.in_use = {Key{"be", "dyn"}};
  servers.Take(in_use);
  servers.Changed(Summary({Change("dyn", true)}));
  EXPECT_THAT(servers.to_delete(), IsEmpty());
  EXPECT_FALSE(servers.draining());
  EXPECT_THAT(servers.CreatedNames(), ElementsAre("be/dyn"));
}

TEST(CreatedServersTest, ServersFromTheConfigurationGoWhenAWholeStateLeavesThemOut) {
  CreatedServers servers({Key{"be", "kept"}, Key{"be", "dropped"}});
  model::DesiredState desired =
      plan::testing::Desired().Server("be", "kept", Spec("10.0.0.1", 80)).Build();
  servers.Replaced(desired);
  EXPECT_THAT(servers.to_delete(), UnorderedElementsAre(Key{"be", "dropped"}));
  EXPECT_THAT(servers.CreatedNames(), ElementsAre("be/dropped", "be/kept"));
}

TEST(CreatedServersTest, AServerAWorkerRefusedToEnableGoesAgainAtOnce) {
  CreatedServers servers;
  Judged judged;
  judged.created = {Key{"be", "dyn"}};
  judged.undo = {Key{"be", "dyn"}};
  EXPECT_TRUE(servers.Take(judged));
  EXPECT_THAT(servers.to_delete(), UnorderedElementsAre(Key{"be", "dyn"}));
}

}  // namespace
}  // namespace hawk::reconcile

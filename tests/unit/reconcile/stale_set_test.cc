// The stale set kept across incremental reconciles, and the live streams on stale servers
// (reconcile/stale_set.h), over `show sess` as HAProxy prints it.

#include "agent/reconcile/stale_set.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/model/delta.h"
#include "agent/plan/pending.h"
#include "agent/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"
#include "tests/unit/parse/fixture.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::reconcile {
namespace {

using parse::testing::kVersions;
using parse::testing::ReadFixture;
using plan::testing::Desired;
using plan::testing::Spec;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Builds a PendingChanges from `before` → `after`.
plan::PendingChanges Taken(model::DesiredState before, const model::DesiredState& after) {
  plan::PendingChanges pending;
  model::AppliedDelta applied = model::ApplyDelta(model::DiffStates(before, after), &before);
  pending.Merge(applied.summary, before);
  return pending;
}

std::vector<std::string> Objects(const StaleSet& stale) {
  std::vector<std::string> out;
  for (const model::StaleObject& item : stale.Sorted()) {
    out.push_back(absl::StrCat(item.object, " ", item.field));
  }
  return out;
}

TEST(StaleSetTest, ForgetChangedForgetsWhatIsReplanned) {
  StaleSet stale;
  EXPECT_TRUE(stale.empty());
  stale.AddAll({
      {"backend/be/server/s1", "weight", "5", "1", plan::kFrozenReason},
      {"backend/be/server/s1", "state", "READY", "MAINT", "hawk cannot clear …"},
      {"backend/be/server/s2", "", "present", "absent", "worker has no server be/s2"},
      {"map//m", "entries/a", "1", "", "refused: …"},
      {"map//m", "entries/b", "2", "", "refused: …"},
      {"map//r", "entries", "3 entries", "", "refused: …"},
      {"acl//a", "patterns/p", "present", "", "refused: …"},
  });
  // The same object and field again replaces the item.
  stale.Add({"map//m", "entries/b", "2", "", "refused: again"});
  EXPECT_EQ(stale.size(), 7u);
  EXPECT_TRUE(stale.HasServers());
  EXPECT_EQ(stale.Servers(),
            (absl::flat_hash_set<std::string>{"backend/be/server/s1", "backend/be/server/s2"}));
  model::DesiredState before = Desired()
                                   .Server("be", "s1", Spec("10.0.0.1", 80, 1))
                                   .Server("be", "s2", Spec("10.0.0.2"))
                                   .Map("/m", {{"a", "1"}, {"b", "2"}})
                                   .Map("/r", {{"x", "1"}})
                                   .Acl("/a", {"p"});
  model::DesiredState after = before;
  after.backends["be"].servers["s1"].weight = 6;  // s1 replanned: all its items go
  after.maps["/m"].Set("a", "10");                // only entries/a replanned
  after.maps.erase("/r");                         // dropped: forgotten
  stale.ForgetChanged(Taken(before, after));
  EXPECT_THAT(Objects(stale),
              ElementsAre("acl//a patterns/p", "backend/be/server/s2 ", "map//m entries/b"));
  EXPECT_EQ(stale.Sorted()[2].reason, "refused: again");
  // A table replaced: everything about it goes.
  model::DesiredState recreated = before;
  recreated.acls.erase("/a");
  plan::PendingChanges pending = Taken(before, recreated);
  model::DesiredState state = recreated;
  model::AppliedDelta back = model::ApplyDelta(model::DiffStates(state, before), &state);
  pending.Merge(back.summary, state);
  ASSERT_TRUE(pending.acls().at("/a").replace);
  stale.ForgetChanged(pending);
  EXPECT_THAT(Objects(stale), ElementsAre("backend/be/server/s2 ", "map//m entries/b"));
  stale.ForgetObject("backend/be/server/s2");
  EXPECT_FALSE(stale.HasServers());
  EXPECT_THAT(stale.Servers(), IsEmpty());
  EXPECT_EQ(stale.size(), 1u);
  stale.Clear();
  EXPECT_TRUE(stale.empty());
}

TEST(CountSessionsOnStaleServersTest, ShowSessFixtures) {
  StaleSet web1;
  web1.Add({"backend/be_app/server/web1", "address", "10.0.0.1", "", plan::kFrozenReason});
  StaleSet others;
  others.Add({"backend/be_app/server/SRV1", "", "present", "absent", "worker has no server"});
  others.Add({"map//etc/haproxy/hosts.map", "entries/a", "1", "", "refused: …"});
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    for (const char* name : {"old_worker_show_sess.txt", "worker_show_sess_inflight.txt"}) {
      SCOPED_TRACE(name);
      std::string sess = ReadFixture(version, name);
      // One stream on be_app/web1; hawk's own CLI session is not counted.
      absl::StatusOr<int64_t> count = CountSessionsOnStaleServers(sess, web1);
      ASSERT_TRUE(count.ok()) << count.status();
      EXPECT_EQ(*count, 1);
      EXPECT_EQ(*CountSessionsOnStaleServers(sess, others), 0);
      EXPECT_EQ(*CountSessionsOnStaleServers(sess, StaleSet{}), 0);
    }
  }
  EXPECT_EQ(*CountSessionsOnStaleServers("\n", web1), 0);
}

}  // namespace
}  // namespace hawk::reconcile

#include "agent/plan/pending.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/model/delta.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::plan {
namespace {

using testing::Desired;
using testing::Spec;
using testing::Table;

// Applies the change from `state` to `next` and returns its summary; `state` becomes `next`.
model::ChangeSummary Change(model::DesiredState* state, const model::DesiredState& next) {
  model::AppliedDelta applied = model::ApplyDelta(model::DiffStates(*state, next), state);
  EXPECT_TRUE(model::SameContent(*state, next));
  return std::move(applied.summary);
}

const PendingServer& ServerOf(const PendingChanges& pending, const std::string& backend,
                              const std::string& server) {
  static const PendingServer kMissing;
  auto it = pending.servers().find(PendingChanges::ServerKey(backend, server));
  EXPECT_NE(it, pending.servers().end()) << backend << "/" << server;
  return it == pending.servers().end() ? kMissing : it->second;
}

const PendingTable& MapOf(const PendingChanges& pending, const std::string& name) {
  static const PendingTable kMissing;
  auto it = pending.maps().find(name);
  EXPECT_NE(it, pending.maps().end()) << name;
  return it == pending.maps().end() ? kMissing : it->second;
}

TEST(PendingChangesTest, MergeKeepsTheFirstBeforeValue) {
  model::DesiredState state =
      Desired().Server("be", "s", Spec("10.0.0.1", 80, 1)).Map("/m", {{"a", "1"}, {"b", "2"}});
  PendingChanges pending;
  EXPECT_TRUE(pending.empty());
  for (int weight : {2, 3, 4}) {
    model::DesiredState next = state;
    next.backends["be"].servers["s"].weight = weight;
    next.maps["/m"].Set("a", absl::StrCat("a", weight));
    next.maps["/m"].Set("c", absl::StrCat("c", weight));
    pending.Merge(Change(&state, next), state);
  }
  EXPECT_EQ(ServerOf(pending, "be", "s").before, Spec("10.0.0.1", 80, 1));
  const PendingTable& map = MapOf(pending, "/m");
  EXPECT_FALSE(map.replace);
  EXPECT_FALSE(map.dropped);
  EXPECT_EQ(map.existed, Table({{"a", "1"}}));    // the value before the first change
  EXPECT_EQ(map.was_absent, Table({{"c", ""}}));  // absent before the first change
  EXPECT_EQ(map.keys(), 2u);
  EXPECT_EQ(pending.size(), 3u);  // one server, two keys
  // A key absent at first, set, then deleted: still absent before the first change.
  model::DesiredState next = state;
  next.maps["/m"].Erase("c");
  pending.Merge(Change(&state, next), state);
  EXPECT_EQ(MapOf(pending, "/m").was_absent, Table({{"c", ""}}));
  EXPECT_FALSE(MapOf(pending, "/m").existed.Contains("c"));
  // A server not managed before the first change, then managed: nullopt before.
  next = state;
  next.backends["be"].servers["t"] = Spec("10.0.0.2");
  pending.Merge(Change(&state, next), state);
  next.backends["be"].servers["t"].weight = 9;
  pending.Merge(Change(&state, next), state);
  EXPECT_EQ(ServerOf(pending, "be", "t").before, absl::nullopt);
  pending.Clear();
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(pending.size(), 0u);
}

// Past max(kReplaceMinKeys, kReplaceAboveFraction × the table's size), the pending keys of a
// table become one replace: memory bounded by the threshold, not by the pushes.
TEST(PendingChangesTest, ATableOverTheThresholdBecomesAReplace) {
  model::DesiredState state = Desired().Map("/m", {{"k", "v"}});
  PendingChanges pending;
  for (size_t i = 0; i < model::kReplaceMinKeys; ++i) {
    model::DesiredState next = state;
    next.maps["/m"].Set(absl::StrCat("key", i), "v");
    pending.Merge(Change(&state, next), state);
  }
  EXPECT_FALSE(MapOf(pending, "/m").replace);
  EXPECT_EQ(MapOf(pending, "/m").keys(), model::kReplaceMinKeys);
  model::DesiredState next = state;
  next.maps["/m"].Set("one more", "v");
  pending.Merge(Change(&state, next), state);
  const PendingTable& map = MapOf(pending, "/m");
  EXPECT_TRUE(map.replace);
  EXPECT_EQ(map.keys(), 0u);  // a replace sends the latest content, no keys kept
  EXPECT_EQ(pending.size(), 1u);
  // Later changes leave it a replace.
  next = state;
  next.maps["/m"].Set("k", "w");
  pending.Merge(Change(&state, next), state);
  EXPECT_TRUE(MapOf(pending, "/m").replace);
  EXPECT_EQ(MapOf(pending, "/m").keys(), 0u);
  // A large table has a larger threshold: 5% of 4,000 is 200.
  model::StringTable big;
  for (int i = 0; i < 4000; ++i) big.Set(absl::StrCat("k", i), "v");
  state = Desired().Map("/big", std::move(big));
  PendingChanges large;
  for (int i = 0; i < 200; ++i) {
    next = state;
    next.maps["/big"].Set(absl::StrCat("k", i), "w");
    large.Merge(Change(&state, next), state);
  }
  EXPECT_FALSE(MapOf(large, "/big").replace);
  next = state;
  next.maps["/big"].Set("k200", "w");
  large.Merge(Change(&state, next), state);
  EXPECT_TRUE(MapOf(large, "/big").replace);
}

TEST(PendingChangesTest, DroppedThenCreatedAgainIsAReplace) {
  model::DesiredState state = Desired().Map("/m", {{"k", "v"}}).Acl("/a", {"p"});
  PendingChanges pending;
  model::DesiredState dropped = state;
  dropped.maps.erase("/m");
  dropped.acls.erase("/a");
  pending.Merge(Change(&state, dropped), state);
  EXPECT_TRUE(MapOf(pending, "/m").dropped);
  EXPECT_TRUE(pending.acls().at("/a").dropped);
  EXPECT_EQ(pending.size(), 2u);  // one per dropped table
  pending.Merge(Change(&state, Desired().Map("/m", {{"k", "v"}}).Acl("/a", {"p"})), state);
  EXPECT_TRUE(MapOf(pending, "/m").replace);
  EXPECT_FALSE(MapOf(pending, "/m").dropped);
  EXPECT_TRUE(pending.acls().at("/a").replace);
  // Created (what the worker holds is whatever its file said), then edited: still a replace.
  PendingChanges created;
  state = Desired();
  created.Merge(Change(&state, Desired().Map("/new", {{"x", "1"}})), state);
  EXPECT_TRUE(MapOf(created, "/new").replace);
  created.Merge(Change(&state, Desired().Map("/new", {{"x", "2"}})), state);
  EXPECT_TRUE(MapOf(created, "/new").replace);
  // Replaced, then dropped: dropped (nothing to send).
  created.Merge(Change(&state, Desired()), state);
  EXPECT_TRUE(MapOf(created, "/new").dropped);
  EXPECT_FALSE(MapOf(created, "/new").replace);
}

// An apply cut short puts back what it carried (`this`), then merges the pushes that arrived
// meanwhile (`later`): the earlier before-values win.
TEST(PendingChangesTest, MergeLaterPutsTheEarlierBeforeValuesFirst) {
  model::DesiredState state = Desired()
                                  .Server("be", "s", Spec("10.0.0.1", 80, 1))
                                  .Map("/m", {{"a", "1"}, {"b", "2"}})
                                  .Map("/gone", {{"g", "1"}});
  PendingChanges taken;
  model::DesiredState first = state;
  first.backends["be"].servers["s"].weight = 2;
  first.maps["/m"].Set("a", "10");
  first.maps["/m"].Set("c", "3");
  taken.Merge(Change(&state, first), state);

  PendingChanges later;
  model::DesiredState second = state;
  second.backends["be"].servers["s"].weight = 3;
  second.backends["be"].servers["u"] = Spec("10.0.0.3");
  second.maps["/m"].Set("a", "100");
  second.maps["/m"].Erase("c");
  second.maps["/m"].Erase("b");
  second.maps.erase("/gone");
  later.Merge(Change(&state, second), state);
  EXPECT_EQ(ServerOf(later, "be", "s").before, Spec("10.0.0.1", 80, 2));

  taken.MergeLater(later, state);
  EXPECT_EQ(ServerOf(taken, "be", "s").before, Spec("10.0.0.1", 80, 1));
  EXPECT_EQ(ServerOf(taken, "be", "u").before, absl::nullopt);
  const PendingTable& map = MapOf(taken, "/m");
  EXPECT_EQ(map.existed, Table({{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(map.was_absent, Table({{"c", ""}}));
  EXPECT_TRUE(MapOf(taken, "/gone").dropped);
  // MergeLater into nothing is the later changes themselves.
  PendingChanges empty;
  empty.MergeLater(later, state);
  EXPECT_EQ(ServerOf(empty, "be", "s").before, Spec("10.0.0.1", 80, 2));
  EXPECT_EQ(MapOf(empty, "/m").existed, Table({{"a", "10"}, {"b", "2"}, {"c", "3"}}));
}

// The merged changes plan like the summaries they came from would: what matters is only the
// value before the first change and the desired value now.
TEST(PendingChangesTest, MergeLaterOfAReplaceOrADropWins) {
  model::DesiredState state = Desired().Map("/m", {{"k", "v"}});
  PendingChanges taken;
  model::DesiredState next = state;
  next.maps["/m"].Set("k", "w");
  taken.Merge(Change(&state, next), state);
  PendingChanges later;
  model::DesiredState dropped = state;
  dropped.maps.erase("/m");
  later.Merge(Change(&state, dropped), state);
  later.Merge(Change(&state, next), state);  // managed again
  ASSERT_TRUE(MapOf(later, "/m").replace);
  taken.MergeLater(later, state);
  EXPECT_TRUE(MapOf(taken, "/m").replace);
  // Dropped by the cut run's push, managed again later: what the worker holds is unknown.
  PendingChanges cut;
  state = Desired().Map("/m", {{"k", "v"}});
  cut.Merge(Change(&state, Desired()), state);
  PendingChanges after;
  after.Merge(Change(&state, Desired().Map("/m", {{"k", "v"}})), state);
  cut.MergeLater(after, state);
  EXPECT_TRUE(MapOf(cut, "/m").replace);
  EXPECT_FALSE(MapOf(cut, "/m").dropped);
}

}  // namespace
}  // namespace hawk::plan

// SnapshotSize against the snapshot itself: for random states and random changes, applied and
// reverted, the count is DesiredStateToJson's size, the newline, and one byte per non-empty list
// (the comma counted after every element).

#include "agent/model/snapshot_size.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/model/delta.h"
#include "agent/model/desired_json.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"
#include "tests/unit/model/state_generator.h"

namespace hawk::model {
namespace {

uint64_t NonEmptyLists(const DesiredState& state) {
  uint64_t lists = !state.backends.empty() + !state.maps.empty() + !state.acls.empty();
  for (const auto& [name, backend] : state.backends) lists += !backend.servers.empty();
  for (const auto& [name, table] : state.maps) lists += !table.empty();
  for (const auto& [name, table] : state.acls) lists += !table.empty();
  return lists;
}

// What SnapshotSize must count for `state`.
uint64_t Expected(const DesiredState& state) {
  return DesiredStateToJson(state).size() + 1 + NonEmptyLists(state);
}

TEST(SnapshotSizeTest, AnEmptyState) {
  SnapshotSize size;
  EXPECT_EQ(size.bytes(), Expected(DesiredState{}));
  EXPECT_EQ(size.bytes(),
            std::string(R"({"version":"","backends":[],"maps":[],"acls":[]})").size() + 1);
}

TEST(SnapshotSizeTest, CountsEveryEscapeAndNumberAsTheSnapshotWritesThem) {
  DesiredState state;
  state.version = "v\"1\\";
  state.generation = std::numeric_limits<int64_t>::max();
  state.backends["be"].servers["s1"] = ServerSpec{"10.0.0.1", 65535, 0, ServerState::kMaint};
  state.backends["be"].servers["s2"] = ServerSpec{"::1", absl::nullopt, 256, absl::nullopt};
  state.backends["empty"];
  state.maps["/m"].Set("k\x01\x7f\t\"\\", "caf\xC3\xA9 \xF0\x9F\x98\x80 \x1f");
  state.maps["/m"].Set(std::string(4096, '\x7f'), std::string(4096, '\x01'));
  state.maps["/empty"];
  state.acls["/a"].Set("10.0.0.0/8", "");
  state.acls["/a"].Set("\x7f\b\f", "");
  SnapshotSize size;
  size.Reset(state);
  EXPECT_EQ(size.bytes(), Expected(state));
}

TEST(SnapshotSizeTest, FollowsEveryChangeAndItsRevert) {
  for (uint32_t seed = 0; seed < 150; ++seed) {
    Generator gen(seed);
    DesiredState state = gen.State();
    SnapshotSize size;
    size.Reset(state);
    ASSERT_EQ(size.bytes(), Expected(state)) << "seed " << seed;
    std::vector<std::pair<Undo, SnapshotSize::Undo>> undos;
    for (int step = 0; step < 8; ++step) {
      // A PATCH's or a journal record's delta, or a whole-state PUT's diff.
      Delta delta = gen.Coin() ? gen.DeltaFor(state) : DiffStates(state, gen.Mutated(state));
      AppliedDelta applied = ApplyDelta(delta, &state);
      SnapshotSize::Undo counted = size.Apply(applied.summary, state);
      undos.emplace_back(std::move(applied.undo), std::move(counted));
      ASSERT_EQ(size.bytes(), Expected(state)) << "seed " << seed << ", step " << step;
    }
    // A failed batch undoes its changes newest first.
    while (!undos.empty()) {
      UndoDelta(std::move(undos.back().first), &state);
      size.Revert(std::move(undos.back().second));
      undos.pop_back();
      ASSERT_EQ(size.bytes(), Expected(state)) << "seed " << seed << ", undo " << undos.size();
    }
  }
}

// A change of many entries of a held table is planned as a whole-table replace: the summary no
// longer lists the entries, and the table is counted again.
TEST(SnapshotSizeTest, AReplacedTableIsCountedAgain) {
  DesiredState state;
  for (int i = 0; i < 300; ++i) state.maps["/m"].Set(absl::StrCat("key", i), "v");
  SnapshotSize size;
  size.Reset(state);
  Delta delta;
  TableDelta table;
  table.name = "/m";
  for (int i = 0; i < 200; ++i) table.set.Set(absl::StrCat("key", i), "a longer value");
  for (int i = 200; i < 250; ++i) table.erase.Set(absl::StrCat("key", i), "");
  delta.maps.push_back(std::move(table));
  AppliedDelta applied = ApplyDelta(delta, &state);
  ASSERT_EQ(applied.summary.maps.size(), 1u);
  ASSERT_TRUE(applied.summary.maps[0].replace);
  SnapshotSize::Undo undo = size.Apply(applied.summary, state);
  EXPECT_EQ(size.bytes(), Expected(state));
  UndoDelta(std::move(applied.undo), &state);
  size.Revert(std::move(undo));
  EXPECT_EQ(size.bytes(), Expected(state));
}

}  // namespace
}  // namespace hawk::model

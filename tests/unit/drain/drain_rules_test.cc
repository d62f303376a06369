#include "agent/drain/drain_rules.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "agent/base/status_field.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::drain {
namespace {

using ::testing::HasSubstr;

absl::Time At(int64_t ms) { return absl::UnixEpoch() + absl::Milliseconds(ms); }

TEST(ParseDrainParamsTest, Defaults) {
  absl::StatusOr<DrainParams> params = ParseDrainParams(absl::nullopt, absl::nullopt);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->quiet, absl::Seconds(2));
  EXPECT_EQ(params->bound, absl::Seconds(30));
}

TEST(ParseDrainParamsTest, Given) {
  absl::StatusOr<DrainParams> params = ParseDrainParams("300", "300000");
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->quiet, absl::Milliseconds(300));
  EXPECT_EQ(params->bound, absl::Minutes(5));
}

TEST(ParseDrainParamsTest, RefusalsNameTheParameter) {
  struct Case {
    absl::optional<std::string> quiet, bound;
    const char* field;
    const char* message;
  };
  const Case cases[] = {
      {"-1", absl::nullopt, "quietMs", "0..300000"},
      {"2s", absl::nullopt, "quietMs", "\"2s\""},
      {"", absl::nullopt, "quietMs", "0..300000"},
      {absl::nullopt, "300001", "boundMs", "0..300000"},
      {absl::nullopt, "1e3", "boundMs", "0..300000"},
      {"5000", "1000", "quietMs", "must not exceed boundMs (1000)"},
      {absl::nullopt, "1000", "quietMs", "must not exceed boundMs"},  // the default quiet
  };
  for (const Case& c : cases) {
    absl::StatusOr<DrainParams> params = ParseDrainParams(c.quiet, c.bound);
    ASSERT_FALSE(params.ok()) << c.field << " " << c.message;
    EXPECT_TRUE(absl::IsInvalidArgument(params.status()));
    EXPECT_EQ(base::FieldOf(params.status()), c.field);
    EXPECT_THAT(params.status().message(), HasSubstr(c.message));
  }
}

// Samples every 100 ms (asked at t, answered at t+5), a drain of quiet 300 ms, bound 1000 ms,
// started at 0.
struct Sample {
  int64_t at;
  ConnectionTotals totals;
};

absl::optional<DrainReason> Replay(const std::vector<Sample>& samples, int64_t* decided_at) {
  DrainParams params{absl::Milliseconds(300), absl::Milliseconds(1000)};
  ActivityTracker activity;
  for (const Sample& s : samples) {
    activity.Observe(At(s.at), At(s.at + 5), s.totals);
    if (absl::optional<DrainReason> r = Decide(params, At(0), activity, At(s.at + 5))) {
      *decided_at = s.at + 5;
      return r;
    }
  }
  return absl::nullopt;
}

TEST(DecideTest, QuietOnceNoCounterMovesForQuiet) {
  int64_t at = -1;
  // Baseline answered at 5: quiet from 5, shown up to each sample's ask; 305 ≥ 300 at t=400.
  EXPECT_EQ(
      Replay(
          {{0, {{1, 10}}}, {100, {{1, 10}}}, {200, {{1, 10}}}, {300, {{1, 10}}}, {400, {{1, 10}}}},
          &at),
      DrainReason::kQuiet);
  EXPECT_EQ(at, 405);
}

TEST(DecideTest, ANewConnectionRestartsTheQuietPeriod) {
  int64_t at = -1;
  EXPECT_EQ(Replay({{0, {{1, 10}, {2, 4}}},
                    {100, {{1, 10}, {2, 4}}},
                    {200, {{1, 10}, {2, 5}}},  // the leaving worker accepted one: quiet from 205
                    {300, {{1, 10}, {2, 5}}},
                    {400, {{1, 10}, {2, 5}}},
                    {500, {{1, 10}, {2, 5}}},
                    {600, {{1, 10}, {2, 5}}}},
                   &at),
            DrainReason::kQuiet);
  EXPECT_EQ(at, 605);
}

TEST(DecideTest, EndlessConnectionsEndAtTheBound) {
  std::vector<Sample> samples;
  for (int i = 0; i <= 12; ++i) samples.push_back({i * 100, {{1, 10 + i}}});
  int64_t at = -1;
  EXPECT_EQ(Replay(samples, &at), DrainReason::kBound);
  EXPECT_EQ(at, 1005);
}

TEST(DecideTest, AWorkerAppearingWithConnectionsIsActivity) {
  int64_t at = -1;
  EXPECT_EQ(Replay({{0, {{1, 10}}},
                    {100, {{1, 10}}},
                    {200, {{1, 10}, {3, 1}}},  // a reload: the new worker has accepted one
                    {300, {{1, 10}, {3, 1}}},
                    {400, {{1, 10}, {3, 1}}},
                    {500, {{1, 10}, {3, 1}}},
                    {600, {{1, 10}, {3, 1}}}},
                   &at),
            DrainReason::kQuiet);
  EXPECT_EQ(at, 605);
}

TEST(DecideTest, AWorkerAppearingUnusedOrLeavingIsNot) {
  int64_t at = -1;
  EXPECT_EQ(Replay({{0, {{1, 10}, {2, 3}}},
                    {100, {{1, 10}}},  // the leaving worker exited
                    {200, {{1, 10}, {3, 0}}},
                    {300, {{1, 10}, {3, 0}}},
                    {400, {{1, 10}, {3, 0}}}},
                   &at),
            DrainReason::kQuiet);
  EXPECT_EQ(at, 405);
}

TEST(DecideTest, AJoiningCallerWaitsItsOwnQuietPeriod) {
  DrainParams params{absl::Milliseconds(300), absl::Milliseconds(1000)};
  ActivityTracker activity;
  for (int64_t t = 0; t <= 1000; t += 100) activity.Observe(At(t), At(t + 5), {{1, 10}});
  // Quiet for a second already, but this caller came at 900: it gets quiet at 1200, not now.
  EXPECT_EQ(Decide(params, At(900), activity, At(1005)), absl::nullopt);
  EXPECT_EQ(Decide(params, At(0), activity, At(1005)), DrainReason::kQuiet);
  activity.Observe(At(1200), At(1205), {{1, 10}});
  EXPECT_EQ(Decide(params, At(900), activity, At(1205)), DrainReason::kQuiet);
}

TEST(DecideTest, BoundWithoutAnySample) {
  DrainParams params{absl::Milliseconds(300), absl::Milliseconds(1000)};
  ActivityTracker none;
  EXPECT_EQ(Decide(params, At(0), none, At(999)), absl::nullopt);
  EXPECT_EQ(Decide(params, At(0), none, At(1000)), DrainReason::kBound);
}

TEST(DecideTest, ZeroQuietNeedsTwoSamples) {
  DrainParams params{absl::ZeroDuration(), absl::Seconds(1)};
  ActivityTracker activity;
  activity.Observe(At(0), At(5), {{1, 1}});
  EXPECT_EQ(Decide(params, At(0), activity, At(5)), absl::nullopt);
  activity.Observe(At(100), At(105), {{1, 1}});
  EXPECT_EQ(Decide(params, At(0), activity, At(105)), DrainReason::kQuiet);
}

TEST(DrainReasonTest, Names) {
  EXPECT_EQ(DrainReasonName(DrainReason::kQuiet), "quiet");
  EXPECT_EQ(DrainReasonName(DrainReason::kBound), "bound");
  EXPECT_EQ(DrainReasonName(DrainReason::kUnavailable), "unavailable");
}

}  // namespace
}  // namespace hawk::drain

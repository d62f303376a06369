// The headline result (issue 5): in the rolling-restart race, with `grace 1s`, hawk mode loses
// no request while the baseline (updates to the current worker only) loses some, in the same
// run. If the baseline does not fail, the scenario is not reproducing the race: the assertion
// stays, the timing gets fixed. The same race in the slot model (issue 26, `grace 1s + slots`):
// hawk mode loses no request there either.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/e2e/scenario.h"

namespace hawk::e2e {
namespace {

ScenarioResult RunRace(Mode mode, const std::string& variant, int cycles, int one_shot = 0) {
  ScenarioOptions options;
  options.one_shot_connections = one_shot;
  options.mode = mode;
  options.variant = VariantNamed(variant);
  options.cycles = cycles;
  // Every cycle inside the race: flips from 150 ms on, once the new worker has taken over (in
  // the 200-cycle runs of bench/RESULTS.md no baseline failure came from an earlier flip, and a
  // 20-cycle run drawn over 0-300 ms could miss the race altogether: a baseline with 0 failures
  // on 3.4, where only ~1 cycle in 5 after the takeover loses requests).
  options.min_flip_delay_ms = 150;
  options.seed = 7;
  options.verbose = true;
  FillBinaries(&options, "", HAWK_E2E_BACKEND_PATH, HAWK_LOAD_CLIENT_PATH);
  return RunScenario(options);
}

// The race runs in CI on 2.6 (Debian 12's; its master relays one command per line) and 3.4 (the
// newest; hawk sends whole `@@!<pid>` lines, as on 3.2 and later). 3.0 and 3.2 ran it too until
// stop 33: two more minutes each of the 35 CI has, for a race whose two master dialects 2.6 and
// 3.4 cover; bench/zero_downtime measures every version (bench/RESULTS.md).
bool RunsInCi() {
  hawk::testing::HaproxyVersion v =
      hawk::testing::HaproxyProcess::BinaryVersion(hawk::testing::HaproxyProcess::DefaultBinary());
  return !v.AtLeast(2, 7) || v.AtLeast(3, 4);
}

void Print(const char* name, const ScenarioResult& r) {
  std::printf(
      "%s: %lld requests, %lld failures (%lld on the leaving worker), %lld retries, "
      "p99 %.1f ms\n",
      name, static_cast<long long>(r.requests), static_cast<long long>(r.failures),
      static_cast<long long>(r.failures_on_leaving), static_cast<long long>(r.retries), r.p99_ms);
}

// Fails the test with hawk's worst cycle: its failures and the report at its worst moment.
void ExplainWorstCycle(const ScenarioResult& hawk) {
  if (hawk.worst_cycle >= 0) {
    const CycleResult& c = hawk.cycles[static_cast<size_t>(hawk.worst_cycle)];
    ADD_FAILURE() << "hawk's worst cycle " << hawk.worst_cycle + 1 << ": " << c.failures
                  << " failures, flip at " << c.flip_delay_ms << " ms (reload sent at t_ms "
                  << c.reload_sent_ms << ", PUT answered at t_ms " << c.put_answered_ms
                  << "); failures:\n"
                  << absl::StrJoin(c.failure_events, "\n") << "\nreport:\n"
                  << c.report;
  }
}

TEST(ZeroDowntimeTest, WithGraceHawkLosesNothingWhereTheBaselineFails) {
  if (!RunsInCi()) GTEST_SKIP() << "the race runs on HAProxy 2.6 and 3.4";
  ScenarioResult baseline = RunRace(Mode::kBaseline, "grace 1s", 20);
  ASSERT_TRUE(baseline.ok) << baseline.error;
  ScenarioResult hawk = RunRace(Mode::kHawk, "grace 1s", 20);
  ASSERT_TRUE(hawk.ok) << hawk.error;
  Print("baseline", baseline);
  Print("hawk", hawk);
  ASSERT_GT(baseline.requests, 10000);
  ASSERT_GT(hawk.requests, 10000);
  EXPECT_GT(baseline.failures, 0) << "the baseline did not fail: the race was not reproduced";
  EXPECT_EQ(hawk.failures, 0);
  ExplainWorstCycle(hawk);
}

// The same race in the slot model (issue 26): SRV_1 is a `server-template` slot that only hawk
// gives an address, so each new worker holds SRV_1 through what hawk writes into the
// configuration before the reload; a worker born with the placeholder would answer 503 until
// hawk seeded it. Four one-shot clients beside the keep-alive ones: keep-alive requests stay on
// the old worker while the new one starts, new connections are what meets it first. hawk mode
// only, 10 cycles: the baseline's race is the test above's, and CI's time is counted.
TEST(ZeroDowntimeTest, InTheSlotModelHawkLosesNothing) {
  if (!RunsInCi()) GTEST_SKIP() << "the race runs on HAProxy 2.6 and 3.4";
  ScenarioResult hawk = RunRace(Mode::kHawk, "grace 1s + slots", 10, /*one_shot=*/4);
  ASSERT_TRUE(hawk.ok) << hawk.error;
  Print("hawk, slots", hawk);
  ASSERT_GT(hawk.requests, 5000);
  EXPECT_EQ(hawk.failures, 0);
  ExplainWorstCycle(hawk);
}

}  // namespace
}  // namespace hawk::e2e

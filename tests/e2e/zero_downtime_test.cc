// The headline result (issue 5): in the rolling-restart race, with `grace 1s`, hawk mode loses
// no request while the baseline (updates to the current worker only) loses some, in the same
// run. If the baseline does not fail, the scenario is not reproducing the race: the assertion
// stays, the timing gets fixed.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/e2e/scenario.h"

namespace hawk::e2e {
namespace {

ScenarioResult RunGrace(Mode mode) {
  ScenarioOptions options;
  options.mode = mode;
  options.variant = VariantNamed("grace 1s");
  options.cycles = 20;
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

void Print(const char* name, const ScenarioResult& r) {
  std::printf(
      "%s: %lld requests, %lld failures (%lld on the leaving worker), %lld retries, "
      "p99 %.1f ms\n",
      name, static_cast<long long>(r.requests), static_cast<long long>(r.failures),
      static_cast<long long>(r.failures_on_leaving), static_cast<long long>(r.retries), r.p99_ms);
}

TEST(ZeroDowntimeTest, WithGraceHawkLosesNothingWhereTheBaselineFails) {
  ScenarioResult baseline = RunGrace(Mode::kBaseline);
  ASSERT_TRUE(baseline.ok) << baseline.error;
  ScenarioResult hawk = RunGrace(Mode::kHawk);
  ASSERT_TRUE(hawk.ok) << hawk.error;
  Print("baseline", baseline);
  Print("hawk", hawk);
  ASSERT_GT(baseline.requests, 10000);
  ASSERT_GT(hawk.requests, 10000);
  EXPECT_GT(baseline.failures, 0) << "the baseline did not fail: the race was not reproduced";
  EXPECT_EQ(hawk.failures, 0);
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

}  // namespace
}  // namespace hawk::e2e

// Issue 26: a reload through hawk loses no request, because the new worker is born holding the
// desired servers (--write-servers, hawk writes them into the configuration before the reload).
// The slot model (server-template placeholders hawk sets at runtime) with N = 100 and 10,000
// slots, one-shot clients, reloads through hawk ~0.5 s apart; see tests/e2e/born_with.h. The
// baseline (--write-servers=false: the new worker starts with the placeholders and serves 503
// until hawk has seeded it) runs beside it and its figure is printed, not asserted: how much it
// loses depends on the machine.

#include "tests/e2e/born_with.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/support/haproxy_process.h"

namespace hawk::e2e {
namespace {

// Sized for CI (four HAProxy versions): 5 reloads with 100 slots, 3 with 10,000, where each
// case costs more (on 2.6 the PUT of 10,000 slots takes 6-8 s, a reload through hawk 4-6 s and,
// in the baseline, seeding the last new worker ~15 s): 20-30 s per version on 3.2 and 3.4, about
// a minute on 2.6 and 3.0.
int ReloadsFor(int slots) { return slots <= 100 ? 5 : 3; }
constexpr int kClients = 4;

BornWithResult RunCase(BornWithMode mode, int slots) {
  BornWithOptions options;
  options.mode = mode;
  options.slots = slots;
  options.reloads = ReloadsFor(slots);
  options.clients = kClients;
  options.verbose = true;
  FillBinaries(&options, "", HAWK_E2E_BACKEND_PATH, HAWK_LOAD_CLIENT_PATH);
  return RunBornWith(options);
}

void Print(const char* name, int slots, const BornWithResult& r) {
  hawk::testing::HaproxyVersion v =
      hawk::testing::HaproxyProcess::BinaryVersion(hawk::testing::HaproxyProcess::DefaultBinary());
  std::printf(
      "born-with HAProxy %d.%d N=%d %s: %s failed over %d reloads (failures over %.0f ms at "
      "most per reload); slots seeded in %.0f ms, the last new worker served every slot %.0f ms "
      "after its reload window; case %.1f s\n",
      v.major, v.minor, slots, name, FailureFigure(r).c_str(), static_cast<int>(r.reloads.size()),
      r.max_gap_ms, r.seed_ms, r.last_served_ms, r.case_seconds);
  std::fflush(stdout);
}

class BornWithTest : public ::testing::TestWithParam<int> {};

TEST_P(BornWithTest, ReloadsThroughHawkLoseNoRequest) {
  const int slots = GetParam();
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan hawk seeds 10,000 slots several times slower, which would only add minutes to CI
  // for what the 100-slot case already covers.
  if (slots > 100) GTEST_SKIP() << "10,000 slots run in the plain build only";
#endif
  // The 100-slot case runs on every version. 10,000 slots run on Debian 12's 2.6, whose master
  // CLI is the slowest to seed them through (bench/born_with measures every version): on the
  // others they would add minutes to CI and cover nothing the 100-slot case does not.
  hawk::testing::HaproxyVersion version =
      hawk::testing::HaproxyProcess::BinaryVersion(hawk::testing::HaproxyProcess::DefaultBinary());
  if (slots > 100 && version.AtLeast(2, 7)) {
    GTEST_SKIP() << "10,000 slots run on HAProxy 2.6 only";
  }
  BornWithResult baseline = RunCase(BornWithMode::kBaseline, slots);
  Print("baseline (--write-servers=false)", slots, baseline);
  BornWithResult hawk = RunCase(BornWithMode::kHawk, slots);
  Print("hawk", slots, hawk);
  ASSERT_TRUE(baseline.ok) << "baseline: " << baseline.error;
  ASSERT_TRUE(hawk.ok) << "hawk: " << hawk.error;
  ASSERT_EQ(hawk.reloads.size(), static_cast<size_t>(ReloadsFor(slots)));
  for (size_t i = 0; i < hawk.reloads.size(); ++i) {
    EXPECT_GT(hawk.reloads[i].requests, 0) << "no request during reload " << i + 1;
  }
  EXPECT_EQ(hawk.failures, 0) << FailureFigure(hawk) << "; the first failures:\n"
                              << absl::StrJoin(hawk.failure_events, "\n");
}

INSTANTIATE_TEST_SUITE_P(Slots, BornWithTest, ::testing::Values(100, 10000),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return "N" + std::to_string(param.param);
                         });

}  // namespace
}  // namespace hawk::e2e

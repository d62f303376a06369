// ExternalReloads (pure): hand-built worker reports in the order a registry would publish them.

#include "agent/reload/external_reload.h"

#include <initializer_list>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::reload {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr int kMaster = 100;

model::WorkersReport Report(int reloads, int failed,
                            std::initializer_list<std::pair<int, model::WorkerRole>> workers,
                            int master_pid = kMaster) {
  model::WorkersReport report;
  report.master_reachable = master_pid != 0;
  report.master.pid = master_pid;
  report.master.reloads = reloads;
  report.master.failed_reloads = failed;
  for (const auto& [pid, role] : workers) {
    model::WorkerReport w;
    w.pid = pid;
    w.role = role;
    report.workers.push_back(w);
  }
  return report;
}

constexpr auto kCurrent = model::WorkerRole::kCurrent;
constexpr auto kLeaving = model::WorkerRole::kLeaving;
constexpr auto kStarting = model::WorkerRole::kStarting;

class ExternalReloadsTest : public ::testing::Test {
 protected:
  std::vector<ExternalReload> Observe(const model::WorkersReport& report, uint64_t at_ms,
                                      bool own = false) {
    return external_.Observe(report, own, absl::FromUnixMillis(static_cast<int64_t>(at_ms)));
  }
  ExternalReloads external_;
};

TEST_F(ExternalReloadsTest, FirstSightOfAMasterRecordsNothing) {
  EXPECT_THAT(Observe(Report(7, 0, {{200, kCurrent}}), 1000), IsEmpty());
  EXPECT_THAT(Observe(Report(7, 0, {{200, kCurrent}}), 2000), IsEmpty());
  // HAProxy restarted: another master, whatever its counter says.
  EXPECT_THAT(Observe(Report(0, 0, {{300, kCurrent}}, /*master_pid=*/101), 3000), IsEmpty());
  // An unreachable master says nothing either.
  EXPECT_THAT(Observe(Report(9, 0, {}, /*master_pid=*/0), 4000), IsEmpty());
}

TEST_F(ExternalReloadsTest, AReloadIsNoticedThenDecidedByItsNewWorker) {
  Observe(Report(1, 0, {{200, kCurrent}}), 1000);
  // SIGUSR2: the counter moves; 3.1+ lists the new worker while it is still starting.
  EXPECT_THAT(Observe(Report(2, 0, {{300, kStarting}, {200, kCurrent}}), 1500), IsEmpty());
  std::vector<ExternalReload> decided =
      Observe(Report(2, 0, {{300, kCurrent}, {200, kLeaving}}), 1800);
  ASSERT_THAT(decided, SizeIs(1));
  EXPECT_EQ(decided[0].judgement.verdict, Verdict::kSucceeded);
  EXPECT_EQ(decided[0].judgement.new_worker_pid, 300);
  EXPECT_EQ(decided[0].noticed_at, absl::FromUnixMillis(1500));
  EXPECT_EQ(decided[0].duration, absl::Milliseconds(300));
  EXPECT_THAT(Observe(Report(2, 0, {{300, kCurrent}}), 2000), IsEmpty());  // decided once
}

TEST_F(ExternalReloadsTest, AFailedReloadIsDecidedFromTheFailureCount) {
  Observe(Report(1, 0, {{200, kCurrent}}), 1000);
  std::vector<ExternalReload> decided = Observe(Report(2, 1, {{200, kCurrent}}), 1200);
  ASSERT_THAT(decided, SizeIs(1));
  EXPECT_EQ(decided[0].judgement.verdict, Verdict::kFailed);
  EXPECT_THAT(decided[0].judgement.reason, HasSubstr("failed-reload count is 1"));
  EXPECT_EQ(decided[0].duration, absl::ZeroDuration());
}

TEST_F(ExternalReloadsTest, HawksOwnReloadsAreNotExternal) {
  Observe(Report(1, 0, {{200, kCurrent}}), 1000);
  // Sent, reply not back yet: the counter moving is hawk's.
  EXPECT_THAT(Observe(Report(2, 0, {{300, kStarting}, {200, kCurrent}}), 1100, /*own=*/true),
              IsEmpty());
  external_.AccountOwnReload(1);  // the reply: `show proc` said 1 before `reload`
  EXPECT_THAT(Observe(Report(2, 0, {{300, kCurrent}, {200, kLeaving}}), 1200), IsEmpty());
  // The next one is someone else's again.
  EXPECT_THAT(Observe(Report(3, 0, {{300, kCurrent}}), 1300), IsEmpty());
  EXPECT_THAT(Observe(Report(3, 0, {{400, kCurrent}, {300, kLeaving}}), 1400), SizeIs(1));
}

TEST_F(ExternalReloadsTest, UndecidedWithinTheVerdictTimeOrSuperseded) {
  const uint64_t kExternalVerdictMs =
      static_cast<uint64_t>(absl::ToInt64Milliseconds(kExternalVerdict));
  Observe(Report(1, 0, {{200, kCurrent}}), 1000);
  EXPECT_THAT(Observe(Report(2, 0, {{200, kCurrent}}), 2000), IsEmpty());
  EXPECT_THAT(Observe(Report(2, 0, {{200, kCurrent}}), 2000 + kExternalVerdictMs - 1), IsEmpty());
  std::vector<ExternalReload> decided =
      Observe(Report(2, 0, {{200, kCurrent}}), 2000 + kExternalVerdictMs);
  ASSERT_THAT(decided, SizeIs(1));
  EXPECT_EQ(decided[0].judgement.verdict, Verdict::kPending);
  EXPECT_EQ(decided[0].duration, kExternalVerdict);

  // A second reload before the first one's new worker was seen: the first is decided as it
  // stands, the second goes on.
  Observe(Report(3, 0, {{200, kCurrent}}), 100000);
  decided = Observe(Report(4, 0, {{200, kCurrent}}), 100100);
  ASSERT_THAT(decided, SizeIs(1));
  EXPECT_EQ(decided[0].judgement.verdict, Verdict::kPending);
  EXPECT_THAT(decided[0].judgement.reason, HasSubstr("superseded"));
  EXPECT_EQ(decided[0].noticed_at, absl::FromUnixMillis(100000));
  decided = Observe(Report(4, 0, {{500, kCurrent}, {200, kLeaving}}), 100200);
  ASSERT_THAT(decided, SizeIs(1));
  EXPECT_EQ(decided[0].judgement.new_worker_pid, 500);
  EXPECT_EQ(decided[0].noticed_at, absl::FromUnixMillis(100100));
}

}  // namespace
}  // namespace hawk::reload

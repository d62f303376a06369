// ReconnectPacing: the wait before the MasterClient connects again. Its use on a socket is in
// client_test.cc (EveryCloseByTheMasterBacksOffMoreWhileTheyComeInARow, AConnectionThatServed-
// AWhileIsReconnectedAtOnceAfterAClose, ClosesForgottenAsReloadsDoNotBackOffTheNextReconnect).

#include "agent/cli/reconnect_pacing.h"

#include "gtest/gtest.h"

namespace hawk::cli {
namespace {

const absl::Duration kStart = absl::Seconds(1000);  // loop time has an arbitrary origin

TEST(ReconnectPacingTest, ClosesInARowOfYoungConnectionsDoubleTheWaitUpToTheCap) {
  ReconnectPacing pacing({});  // 5 ms, doubling to 1 s
  absl::Duration now = kStart;
  absl::Duration expected[] = {absl::Milliseconds(5),   absl::Milliseconds(10),
                               absl::Milliseconds(20),  absl::Milliseconds(40),
                               absl::Milliseconds(80),  absl::Milliseconds(160),
                               absl::Milliseconds(320), absl::Milliseconds(640),
                               absl::Seconds(1),        absl::Seconds(1)};
  for (absl::Duration want : expected) {
    absl::Duration ready_at = now;
    now += absl::Milliseconds(10);  // closed 10 ms after its handshake
    pacing.OnPeerClose(now, ready_at);
    EXPECT_EQ(pacing.NextDelay(now), want) << pacing.close_streak();
    now += want;
  }
  EXPECT_EQ(pacing.close_streak(), 10);
}

TEST(ReconnectPacingTest, ACloseOfAConnectionThatServedAWhileStartsOver) {
  ReconnectPacing pacing({});
  pacing.OnPeerClose(kStart, kStart);
  pacing.OnPeerClose(kStart + absl::Milliseconds(10), kStart + absl::Milliseconds(9));
  EXPECT_EQ(pacing.close_streak(), 2);
  // Served past stable_after (1 s): a reload, not a master closing what hawk sends on.
  pacing.OnPeerClose(kStart + absl::Seconds(3), kStart + absl::Seconds(1));
  EXPECT_EQ(pacing.close_streak(), 1);
  EXPECT_EQ(pacing.NextDelay(kStart + absl::Seconds(3)), absl::Milliseconds(5));
}

TEST(ReconnectPacingTest, ClosesWithinTheSameMillisecondCountOnce) {
  ReconnectPacing pacing({});
  pacing.OnPeerClose(kStart, kStart);
  pacing.OnPeerClose(kStart + absl::Milliseconds(5), kStart);
  pacing.OnPeerClose(kStart + absl::Milliseconds(5), kStart);  // the second connection
  EXPECT_EQ(pacing.close_streak(), 2);
}

TEST(ReconnectPacingTest, ForgettingTheStreakMakesTheNextCloseAFirstOne) {
  ReconnectPacing pacing({});
  for (int i = 0; i < 5; ++i) {
    pacing.OnPeerClose(kStart + absl::Milliseconds(i), kStart);
  }
  pacing.ForgetCloseStreak();
  pacing.OnPeerClose(kStart + absl::Milliseconds(10), kStart);
  EXPECT_EQ(pacing.close_streak(), 1);
  EXPECT_EQ(pacing.NextDelay(kStart + absl::Milliseconds(10)), absl::Milliseconds(5));
}

TEST(ReconnectPacingTest, FailedConnectsRetryFastThenSlowerUpToTheMax) {
  ReconnectPacing pacing({});
  pacing.OnPeerClose(kStart, kStart - absl::Seconds(10));
  // Within the fast retry window (3 s) the wait stays 5 ms.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(pacing.NextDelay(kStart + absl::Milliseconds(5 * i)), absl::Milliseconds(5));
  }
  // Past it, each wait doubles, up to max_retry_interval (250 ms).
  absl::Duration later = kStart + absl::Seconds(4);
  absl::Duration expected[] = {absl::Milliseconds(5),   absl::Milliseconds(10),
                               absl::Milliseconds(20),  absl::Milliseconds(40),
                               absl::Milliseconds(80),  absl::Milliseconds(160),
                               absl::Milliseconds(250), absl::Milliseconds(250)};
  for (absl::Duration want : expected) EXPECT_EQ(pacing.NextDelay(later), want);
  pacing.OnReady();  // a handshake completed
  EXPECT_EQ(pacing.retry_delay(), absl::Milliseconds(5));
}

}  // namespace
}  // namespace hawk::cli

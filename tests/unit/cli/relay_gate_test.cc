// RelayGate: which workers a batch may be relayed to, at a given loop time. The MasterClient's
// use of it on a socket is in client_test.cc (CommandsGoOnlyToListedWorkersAndWithinTheirRelay-
// Window, AfterTheMasterClosesAConnectionRelaysWaitForTheNextListing).

#include "agent/cli/relay_gate.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace hawk::cli {
namespace {

const absl::Duration kLead = absl::Milliseconds(100);
const absl::Duration kPerCommand = absl::Microseconds(500);
const absl::Duration kNow = absl::Seconds(1000);

TEST(RelayGateTest, BeforeAnyListingEveryWorkerGoes) {
  RelayGate gate(kLead, kPerCommand);
  EXPECT_FALSE(gate.has_listing());
  EXPECT_TRUE(gate.Allowed(42, kNow));
  EXPECT_TRUE(gate.Check({Command::ForWorker(42, "show info")}, kNow).ok());
  gate.MarkStale();  // nothing to be stale against yet
  EXPECT_FALSE(gate.stale());
}

TEST(RelayGateTest, OnlyListedWorkersGo) {
  RelayGate gate(kLead, kPerCommand);
  gate.SetListed({1, 7});
  EXPECT_TRUE(gate.Allowed(7, kNow));
  std::string why;
  EXPECT_FALSE(gate.Allowed(9, kNow, &why));
  EXPECT_TRUE(absl::StrContains(why, "worker 9 is not listed")) << why;
  absl::Status status =
      gate.Check({Command::Master("show proc"), Command::ForWorker(7, "show info"),
                  Command::ForWorker(9, "show info")},
                 kNow);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_TRUE(absl::StartsWith(status.message(), "not sent: worker 9")) << status;
  EXPECT_TRUE(gate.Check({Command::Master("show proc")}, kNow).ok());  // the master's own
}

TEST(RelayGateTest, AWindowAdmitsOnlyBatchesThatReachTheWorkerInTime) {
  RelayGate gate(kLead, kPerCommand);
  gate.SetWindow(7, absl::Milliseconds(250), "its grace period may be over", kNow);
  // One command needs 100.5 ms before the window closes at kNow + 250 ms.
  EXPECT_TRUE(gate.Allowed(7, kNow + absl::Milliseconds(149)));
  EXPECT_FALSE(gate.Allowed(7, kNow + absl::Milliseconds(150)));
  // 200 commands need 200 ms.
  EXPECT_TRUE(gate.Allowed(7, kNow + absl::Milliseconds(49), nullptr, 200));
  EXPECT_FALSE(gate.Allowed(7, kNow + absl::Milliseconds(50), nullptr, 200));
  absl::Status status = gate.Check({Command::ForWorker(7, "show info")}, kNow + absl::Seconds(1));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "grace period may be over")) << status;
  EXPECT_TRUE(gate.Allowed(8, kNow + absl::Seconds(1)));  // other workers have no window

  gate.SetWindow(7, absl::ZeroDuration(), "held back", kNow);  // closed now
  EXPECT_FALSE(gate.Allowed(7, kNow));
  gate.SetWindow(7, absl::InfiniteDuration(), "", kNow);  // open for good
  EXPECT_TRUE(gate.Allowed(7, kNow + absl::Hours(1)));
}

TEST(RelayGateTest, ANewListingForgetsTheWindowsOfWorkersItNoLongerLists) {
  RelayGate gate(kLead, kPerCommand);
  gate.SetListed({7, 8});
  gate.SetWindow(7, absl::ZeroDuration(), "held back", kNow);
  gate.SetWindow(8, absl::ZeroDuration(), "held back", kNow);
  gate.SetListed({8});
  gate.SetListed({7, 8});  // 7 again (a pid reused): no window left from before
  EXPECT_TRUE(gate.Allowed(7, kNow));
  EXPECT_FALSE(gate.Allowed(8, kNow));
}

TEST(RelayGateTest, StaleUntilTheNextListing) {
  RelayGate gate(kLead, kPerCommand);
  gate.SetListed({1});
  gate.MarkStale();
  EXPECT_TRUE(gate.stale());
  gate.SetListed({1});
  EXPECT_FALSE(gate.stale());
}

TEST(RelayGateTest, HasRelays) {
  EXPECT_FALSE(HasRelays({}));
  EXPECT_FALSE(HasRelays({Command::Master("show proc")}));
  EXPECT_TRUE(HasRelays({Command::Master("show proc"), Command::ForWorker(3, "show info")}));
}

}  // namespace
}  // namespace hawk::cli

#include "agent/reload/master_gate.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hawk::reload {
namespace {

const char* Name(MasterVerdict verdict) {
  switch (verdict) {
    case MasterVerdict::kGo:
      return "GO";
    case MasterVerdict::kWait:
      return "WAIT";
    case MasterVerdict::kFail:
      return "FAIL";
  }
  return "?";
}

TEST(MasterGateTest, EveryRule) {
  const absl::Duration grace = absl::Seconds(5);
  struct Case {
    std::string label;
    MasterView master;
    MasterVerdict verdict;
  };
  for (const Case& c : std::vector<Case>{
           {"reachable", {true, true, 0, absl::ZeroDuration()}, MasterVerdict::kGo},
           {"reachable, failures counted before",
            {true, true, 7, absl::Hours(1)},
            MasterVerdict::kGo},
           // hawk started against a socket that does not exist, or nobody listens on.
           {"never reached, a connect failed",
            {false, false, 1, absl::Milliseconds(1)},
            MasterVerdict::kFail},
           {"never reached, first connect in progress",
            {false, false, 0, absl::Milliseconds(1)},
            MasterVerdict::kWait},
           {"never reached, first connect never answered",
            {false, false, 0, absl::Seconds(5)},
            MasterVerdict::kFail},
           // The master re-executes for a reload: connections refused for a moment.
           {"lost a moment ago, connects refused since",
            {false, true, 40, absl::Seconds(1)},
            MasterVerdict::kWait},
           {"lost a moment ago, reconnecting",
            {false, true, 0, absl::Milliseconds(3)},
            MasterVerdict::kWait},
           {"lost for longer than a reload",
            {false, true, 80, absl::Seconds(5)},
            MasterVerdict::kFail},
           {"lost long ago", {false, true, 1000, absl::Hours(2)}, MasterVerdict::kFail},
           {"lost long ago, a connect accepted but never answered",
            {false, true, 0, absl::Seconds(6)},
            MasterVerdict::kFail},
       }) {
    SCOPED_TRACE(c.label);
    EXPECT_STREQ(Name(JudgeMaster(c.master, grace)), Name(c.verdict));
  }
}

}  // namespace
}  // namespace hawk::reload

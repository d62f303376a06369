#include "agent/status/status_text.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::status {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A report as hawk sends it (GET /v1/workers): a current worker in sync and a frozen leaving one.
constexpr const char* kReport = R"({
  "masterReachable": true,
  "master": {"pid": 100, "reloads": 3, "failedReloads": 1, "version": "3.4.7-1",
             "uptimeSeconds": "3725"},
  "workers": [
    {"pid": 300, "role": "CURRENT", "stopping": false, "reloads": 0, "uptimeSeconds": "12",
     "version": "3.4.7-1", "connections": "40", "listedAsOld": false, "appliedVersion": "v2",
     "inSync": true, "frozen": false, "stale": [], "refused": [], "sessionsOnStaleServers": "0"},
    {"pid": 200, "role": "LEAVING", "stopping": true, "reloads": 1, "uptimeSeconds": "70",
     "version": "3.4.7-1", "connections": "2", "listedAsOld": true, "appliedVersion": "v1",
     "inSync": false, "frozen": true, "frozenSince": "2026-12-04T18:00:00Z",
     "stale": [{"object": "backend/be_app/server/SRV_1", "field": "address",
                "desired": "10.0.0.2:80", "actual": "10.0.0.1:80",
                "reason": "Proxy is disabled."}],
     "refused": [{"object": "backend/be_app/server/SRV_1",
                  "command": "set server be_app/SRV_1 addr 10.0.0.2 port 80",
                  "reply": "Proxy is disabled."}],
     "sessionsOnStaleServers": "1"}
  ],
  "warnings": ["no `grace` in global: a leaving worker freezes at once"]
})";

TEST(StatusTextTest, MasterWorkersAndWhatIsStale) {
  auto screen = RenderReport(kReport, {});
  ASSERT_TRUE(screen.ok()) << screen.status();
  EXPECT_EQ(
      *screen,
      "master 100  HAProxy 3.4.7-1  up 1h2m  reloads 3 (1 failed since the last success)  "
      "master CLI reachable\n"
      "\n"
      "PID  ROLE     UP     CONNS  APPLIED  IN SYNC  FROZEN SINCE          STALE  SESSIONS ON "
      "STALE\n"
      "300  CURRENT  12s    40     v2       yes      -                     0      0\n"
      "200  LEAVING  1m10s  2      v1       no       2026-12-04T18:00:00Z  1      1\n"
      "\n"
      "worker 200 (LEAVING)\n"
      "  stale   backend/be_app/server/SRV_1 address: holds 10.0.0.1:80, desired 10.0.0.2:80 "
      "(Proxy is disabled.)\n"
      "  refused `set server be_app/SRV_1 addr 10.0.0.2 port 80`: Proxy is disabled.\n"
      "\n"
      "configuration advice:\n"
      "  no `grace` in global: a leaving worker freezes at once\n");
}

TEST(StatusTextTest, ColoursOnlyWhenAsked) {
  RenderOptions color;
  color.color = true;
  EXPECT_THAT(*RenderReport(kReport, color), HasSubstr("\x1b[32mCURRENT\x1b[0m"));
  EXPECT_THAT(*RenderReport(kReport, {}), Not(HasSubstr("\x1b[")));
}

TEST(StatusTextTest, AnUnreachableMasterAndNoWorkers) {
  auto screen =
      RenderReport(R"({"masterReachable":false,"masterError":"connect: No such file or directory",)"
                   R"("master":{"pid":0},"workers":[]})",
                   {});
  ASSERT_TRUE(screen.ok());
  EXPECT_THAT(*screen, HasSubstr("master CLI UNREACHABLE: connect: No such file or directory"));
  EXPECT_THAT(*screen, HasSubstr("no workers listed"));
}

TEST(StatusTextTest, NotAReportIsAnError) {
  EXPECT_FALSE(RenderReport("[]", {}).ok());
  EXPECT_FALSE(RenderReport("{\"error\":{}}", {}).ok());
  EXPECT_FALSE(RenderReport("not json", {}).ok());
}

}  // namespace
}  // namespace hawk::status

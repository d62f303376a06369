#include "agent/model/workers_json.h"

#include "gtest/gtest.h"

namespace hawk::model {
namespace {

TEST(WorkersJsonTest, FollowsTheProto3JsonMapping) {
  WorkersReport report;
  report.master_reachable = true;
  report.master = MasterReport{9565, 10, 1, "2.6.12", 112};
  WorkerReport current;
  current.pid = 12242;
  current.role = WorkerRole::kCurrent;
  current.version = "2.6.12";
  WorkerReport leaving;
  leaving.pid = 12155;
  leaving.role = WorkerRole::kLeaving;
  leaving.stopping = true;
  leaving.reloads = 1;
  leaving.connections = 3;
  leaving.listed_as_old = true;
  report.workers = {leaving, current};
  SortWorkers(&report.workers);
  report.observed_at = absl::FromUnixMillis(1764669600123);
  EXPECT_EQ(WorkersReportToJson(report),
            R"({"masterReachable":true,"master":{"pid":9565,"reloads":10,"failedReloads":1,)"
            R"("version":"2.6.12","uptimeSeconds":112},"workers":[)"
            R"({"pid":12242,"role":"CURRENT","stopping":false,"reloads":0,"uptimeSeconds":0,)"
            R"("version":"2.6.12","connections":0,"listedAsOld":false},)"
            R"({"pid":12155,"role":"LEAVING","stopping":true,"reloads":1,"uptimeSeconds":0,)"
            R"("version":"","connections":3,"listedAsOld":true}],)"
            R"("observedAt":"2025-12-02T10:00:00.123Z"})");
}

TEST(WorkersJsonTest, CurrentIsTheNewestCurrentWorker) {
  WorkersReport report;
  WorkerReport a;
  a.pid = 1;
  a.role = WorkerRole::kCurrent;
  a.reloads = 1;
  WorkerReport b;
  b.pid = 2;
  b.role = WorkerRole::kCurrent;
  report.workers = {a, b};
  ASSERT_NE(report.Current(), nullptr);
  EXPECT_EQ(report.Current()->pid, 2);
  report.workers[1].role = WorkerRole::kStarting;
  EXPECT_EQ(report.Current()->pid, 1);
}

}  // namespace
}  // namespace hawk::model

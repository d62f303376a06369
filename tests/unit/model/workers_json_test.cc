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
  leaving.not_relayed = "leaving, its grace period over";
  leaving.sync.applied_version = "v1";
  leaving.sync.applied_generation = 41;
  leaving.sync.frozen = true;
  leaving.sync.frozen_since = absl::FromUnixMillis(1764669601000);
  leaving.sync.stale.push_back(
      {"backend/be/server/s1", "address", "10.0.0.1", "10.0.0.2", "frozen"});
  leaving.sync.refused.push_back(
      {"backend/be/server/s1", "set server be/s1 addr 10.0.0.1", "Proxy is disabled."});
  leaving.sync.sessions_on_stale_servers = 2;
  report.workers = {leaving, current};
  SortWorkers(&report.workers);
  report.observed_at = absl::FromUnixMillis(1764669600123);
  report.master_cli.connections = 2;
  report.master_cli.max_connections = 2;
  report.master_cli.slots_lost = 1;
  report.master_cli.held.push_back(
      {12155, "@!12155 show info", absl::FromUnixMillis(1764669599000)});
  EXPECT_EQ(WorkersReportToJson(report),
            R"({"masterReachable":true,"master":{"pid":9565,"reloads":10,"failedReloads":1,)"
            R"("version":"2.6.12","uptimeSeconds":112},"workers":[)"
            R"({"pid":12242,"role":"CURRENT","stopping":false,"reloads":0,"uptimeSeconds":0,)"
            R"("version":"2.6.12","connections":0,"listedAsOld":false,"appliedVersion":"",)"
            R"("inSync":false,"frozen":false,"stale":[],"refused":[],"sessionsOnStaleServers":0,)"
            R"("createdServers":[],"drainingServers":[]},)"
            R"({"pid":12155,"role":"LEAVING","stopping":true,"reloads":1,"uptimeSeconds":0,)"
            R"("version":"","connections":3,"listedAsOld":true,)"
            R"("notRelayed":"leaving, its grace period over","appliedVersion":"v1",)"
            R"("appliedGeneration":"41",)"
            R"("inSync":false,"frozen":true,"frozenSince":"2025-12-02T10:00:01.000Z",)"
            R"("stale":[{"object":"backend/be/server/s1","field":"address","desired":"10.0.0.1",)"
            R"("actual":"10.0.0.2","reason":"frozen"}],)"
            R"("refused":[{"object":"backend/be/server/s1","command":"set server be/s1 addr )"
            R"(10.0.0.1","reply":"Proxy is disabled."}],"sessionsOnStaleServers":2,)"
            R"("createdServers":[],"drainingServers":[]}],)"
            R"("observedAt":"2025-12-02T10:00:00.123Z","warnings":[],)"
            R"("masterCli":{"connections":2,"maxConnections":2,"slotsLost":1,)"
            R"("held":[{"pid":12155,"command":"@!12155 show info",)"
            R"("since":"2025-12-02T09:59:59.000Z"}]}})");
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

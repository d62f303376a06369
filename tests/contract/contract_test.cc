// The API contract cannot drift: hawk's real responses, from a hawk watching a real HAProxy,
// must parse into the messages of proto/hawk/v1/hawk.proto with protobuf's JSON parser, unknown
// fields rejected.

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "proto/hawk/v1/hawk.pb.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::seconds;

template <typename Message>
::testing::AssertionResult ParsesStrictly(const std::string& json, Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(json, message, options);
  if (!status.ok()) {
    return ::testing::AssertionFailure()
           << message->GetTypeName() << " rejects " << json << ": " << status.ToString();
  }
  return ::testing::AssertionSuccess();
}

class ContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(dir_, "app");
    ASSERT_TRUE(backend_->ok()) << backend_->error();
    port_ = FreeTcpPort();
    haproxy_ = std::make_unique<HaproxyProcess>(dir_, BasicHaproxyConfig(port_, backend_->port()));
  }

  TempDir dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  int port_ = -1;
};

TEST_F(ContractTest, ErrorsAndReadinessWithoutHaproxy) {
  HawkProcess hawk(dir_, dir_.File("master.sock"));
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();

  hawk::v1::ErrorResponse error;
  HttpResult not_ready = hawk.Get("/readyz");
  EXPECT_EQ(not_ready.status, 503);
  EXPECT_TRUE(ParsesStrictly(not_ready.body, &error));
  EXPECT_EQ(error.error().code(), "UNAVAILABLE");
  EXPECT_FALSE(error.error().message().empty());

  HttpResult missing = hawk.Get("/v1/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(ParsesStrictly(missing.body, &error));
  EXPECT_EQ(error.error().code(), "NOT_FOUND");

  HttpResult wrong_method = Fetch(hawk.api_address(), "DELETE", "/v1/workers");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_TRUE(ParsesStrictly(wrong_method.body, &error));

  HttpResult probe_only = Fetch(hawk.probe_address(), "GET", "/v1/workers");
  EXPECT_EQ(probe_only.status, 404) << "the probe listener serves only health endpoints";

  hawk::v1::HealthResponse health;
  HttpResult healthz = Fetch(hawk.probe_address(), "GET", "/healthz");
  EXPECT_EQ(healthz.status, 200);
  EXPECT_TRUE(ParsesStrictly(healthz.body, &health));
  EXPECT_EQ(health.status(), "ok");

  HttpResult unknown = hawk.Get("/v1/workers?pid=1");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_TRUE(ParsesStrictly(unknown.body, &error));
  EXPECT_EQ(error.error().field(), "pid");

  hawk::v1::DrainResponse drain;
  HttpResult unavailable = Fetch(hawk.probe_address(), "GET", "/v1/drain?quietMs=100");
  EXPECT_EQ(unavailable.status, 503);
  EXPECT_TRUE(ParsesStrictly(unavailable.body, &drain));
  EXPECT_EQ(drain.reason(), "unavailable");
  EXPECT_EQ(drain.error().code(), "UNAVAILABLE");

  hawk::v1::WorkersReport report;
  HttpResult workers = hawk.Get("/v1/workers");
  EXPECT_EQ(workers.status, 200);
  EXPECT_TRUE(ParsesStrictly(workers.body, &report));
  EXPECT_FALSE(report.master_reachable());
  EXPECT_FALSE(report.master_error().empty());
}

TEST_F(ContractTest, WorkersReportWithALeavingWorker) {
  ASSERT_TRUE(haproxy_->Start());
  HawkProcess hawk(dir_, haproxy_->master_socket());
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  ASSERT_TRUE(WaitUntil([&] { return hawk.Get("/readyz").status == 200; }, seconds(5)));

  hawk::v1::ReadyResponse ready;
  EXPECT_TRUE(ParsesStrictly(hawk.Get("/readyz").body, &ready));
  EXPECT_TRUE(ready.ready());

  pid_t old_worker = haproxy_->CurrentWorkerPid();
  InFlightRequest slow(port_, "/slow?ms=1500");
  ASSERT_TRUE(slow.WaitSent(seconds(2)));
  ASSERT_TRUE(haproxy_->ReloadViaCli());
  ASSERT_GT(haproxy_->WaitForNewWorker(old_worker), 0);

  hawk::v1::WorkersReport report;
  ASSERT_TRUE(WaitUntil(
      [&] {
        HttpResult r = hawk.Get("/v1/workers");
        report.Clear();
        // On 3.1+ the new worker is listed STARTING until it has parsed its configuration, and
        // hawk's report may show that before it shows the handover: wait for the handover.
        return r.status == 200 && ParsesStrictly(r.body, &report) && report.workers_size() == 2 &&
               report.workers(1).role() == hawk::v1::LEAVING;
      },
      seconds(3)))
      << report.DebugString();
  EXPECT_TRUE(report.master_reachable());
  EXPECT_EQ(report.master().pid(), static_cast<uint32_t>(haproxy_->master_pid()));
  EXPECT_EQ(report.workers(0).role(), hawk::v1::CURRENT);
  EXPECT_EQ(report.workers(1).role(), hawk::v1::LEAVING);
  EXPECT_EQ(report.workers(1).pid(), static_cast<uint32_t>(old_worker));
  EXPECT_TRUE(report.has_observed_at());

  hawk::v1::DrainResponse drain;
  HttpResult drained = Fetch(hawk.probe_address(), "GET", "/v1/drain?quietMs=0&boundMs=2000");
  EXPECT_EQ(drained.status, 200);
  EXPECT_TRUE(ParsesStrictly(drained.body, &drain)) << drained.body;
  EXPECT_EQ(drain.reason(), "quiet");
  EXPECT_EQ(drain.workers_size(), 2) << drained.body;
  EXPECT_EQ(drain.quiet_ms(), 0u);
  EXPECT_EQ(drain.bound_ms(), 2000u);

  // Round trip: what protobuf prints from the parsed message parses back to the same message.
  std::string printed;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(report, &printed).ok());
  hawk::v1::WorkersReport again;
  EXPECT_TRUE(ParsesStrictly(printed, &again));
  EXPECT_EQ(again.SerializeAsString(), report.SerializeAsString());
  EXPECT_TRUE(slow.Wait(seconds(5)));
}

TEST_F(ContractTest, DesiredStatePushAndWatch) {
  haproxy_ =
      std::make_unique<HaproxyProcess>(dir_, StateHaproxyConfig(dir_, port_, backend_->port()));
  ASSERT_TRUE(haproxy_->Start());
  HawkProcess hawk(dir_, haproxy_->master_socket(), {"--state-dir", dir_.File("state")});
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  ASSERT_TRUE(WaitUntil([&] { return hawk.Get("/readyz").status == 200; }, seconds(5)));

  hawk::v1::ErrorResponse error;
  HttpResult missing = hawk.Get("/v1/state");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(ParsesStrictly(missing.body, &error));

  std::string body = R"({"version":"c1","generation":"3","backends":[{"name":"be_app","servers":[)"
                     R"({"name":"SRV_1","address":"127.0.0.1","port":)" +
                     std::to_string(backend_->port()) +
                     R"(,"weight":10,"state":"READY"},{"name":"NOPE","address":"::1"}]}],)"
                     R"("maps":[{"name":")" +
                     dir_.File("hosts.map") +
                     R"(","entries":[{"key":"a","value":"be_app"}]}],"acls":[{"name":")" +
                     dir_.File("blocked.acl") + R"(","patterns":["192.0.2.0/24"]}]})";
  // The request body itself is a DesiredState.
  hawk::v1::DesiredState sent;
  ASSERT_TRUE(ParsesStrictly(body, &sent));

  HttpResult put = hawk.Put("/v1/state", body);
  ASSERT_EQ(put.status, 200) << put.body;
  hawk::v1::PushResponse push;
  ASSERT_TRUE(ParsesStrictly(put.body, &push));
  EXPECT_EQ(push.version(), "c1");
  EXPECT_EQ(push.generation(), 3);
  EXPECT_EQ(push.delivery(), hawk::v1::ALL_WORKERS);  // PARTIAL is finished too
  EXPECT_TRUE(push.warning().empty());
  ASSERT_EQ(push.workers_size(), 1);
  // The worker has no server NOPE: reported for that worker, not a failure of the push.
  EXPECT_EQ(push.workers(0).result(), hawk::v1::PARTIAL);
  ASSERT_GE(push.workers(0).stale_size(), 1);
  EXPECT_EQ(push.workers(0).stale(0).object(), "backend/be_app/server/NOPE");

  // GET returns the canonical form: servers (like backends, maps and ACLs) sorted by name.
  hawk::v1::DesiredState canonical = sent;
  for (hawk::v1::Backend& backend : *canonical.mutable_backends()) {
    std::sort(
        backend.mutable_servers()->begin(), backend.mutable_servers()->end(),
        [](const hawk::v1::Server& a, const hawk::v1::Server& b) { return a.name() < b.name(); });
  }
  hawk::v1::DesiredState state;
  HttpResult got = hawk.Get("/v1/state");
  ASSERT_TRUE(ParsesStrictly(got.body, &state));
  EXPECT_EQ(state.SerializeAsString(), canonical.SerializeAsString());

  hawk::v1::WorkersReport report;
  ASSERT_TRUE(ParsesStrictly(hawk.Get("/v1/workers").body, &report));
  ASSERT_EQ(report.workers_size(), 1);
  EXPECT_FALSE(report.workers(0).in_sync());
  EXPECT_EQ(report.workers(0).stale_size(), 1);

  HttpResult invalid = hawk.Put("/v1/state", R"({"version":"x","maps":[{"name":"rel"}]})");
  EXPECT_EQ(invalid.status, 400);
  ASSERT_TRUE(ParsesStrictly(invalid.body, &error));
  EXPECT_EQ(error.error().field(), "maps[0].name");

  std::string connect_error;
  auto watch = HttpConnection::Connect(hawk.api_address(), seconds(2), &connect_error);
  ASSERT_NE(watch, nullptr) << connect_error;
  HttpRequest request;
  request.target = "/v1/watch?heartbeatMs=100";
  ASSERT_TRUE(watch->SendRequest(request, seconds(2)));
  ASSERT_EQ(watch->ReadResponseHead(seconds(2)).status, 200);
  std::string stream;
  ASSERT_TRUE(WaitUntil(
      [&] {
        if (auto chunk = watch->ReadChunk(std::chrono::milliseconds(50))) stream += *chunk;
        return stream.find("heartbeat") != std::string::npos;
      },
      seconds(3), std::chrono::milliseconds(0)));
  size_t lines = 0;
  for (size_t start = 0, end; (end = stream.find('\n', start)) != std::string::npos;
       start = end + 1) {
    hawk::v1::WatchEvent event;
    EXPECT_TRUE(ParsesStrictly(stream.substr(start, end - start), &event));
    ++lines;
  }
  EXPECT_GE(lines, 2u);
}

// Issue 24, defect 7: a push while no worker is reachable is durable and answered 200, and the
// answer says that it reached no worker (it used to be `"workers":[]` and nothing else).
TEST_F(ContractTest, APushThatReachesNoWorkerSaysSo) {
  HawkProcess hawk(dir_, dir_.File("master.sock"), {"--state-dir", dir_.File("state")});
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  HttpResult put = hawk.Put("/v1/state?timeoutMs=200", R"({"version":"alone","generation":"1"})");
  ASSERT_EQ(put.status, 200) << put.body;
  hawk::v1::PushResponse push;
  ASSERT_TRUE(ParsesStrictly(put.body, &push));
  EXPECT_EQ(push.workers_size(), 0);
  EXPECT_EQ(push.delivery(), hawk::v1::NO_WORKER) << put.body;
  EXPECT_NE(push.warning().find("durable, but no worker is reachable"), std::string::npos)
      << put.body;
  hawk::v1::DesiredState state;
  ASSERT_TRUE(ParsesStrictly(hawk.Get("/v1/state").body, &state));
  EXPECT_EQ(state.version(), "alone");
}

TEST_F(ContractTest, DeltaPushAndOutOfOrderGenerations) {
  haproxy_ =
      std::make_unique<HaproxyProcess>(dir_, StateHaproxyConfig(dir_, port_, backend_->port()));
  ASSERT_TRUE(haproxy_->Start());
  HawkProcess hawk(dir_, haproxy_->master_socket(), {"--state-dir", dir_.File("state")});
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  ASSERT_TRUE(WaitUntil([&] { return hawk.Get("/readyz").status == 200; }, seconds(5)));
  std::string map = dir_.File("hosts.map");
  std::string base = R"({"version":"v1","generation":"10","backends":[{"name":"be_app","servers":[)"
                     R"({"name":"SRV_1","address":"127.0.0.1","port":)" +
                     std::to_string(backend_->port()) + R"(}]}],"maps":[{"name":")" + map +
                     R"(","entries":[{"key":"a","value":"be_app"}]}]})";
  ASSERT_EQ(hawk.Put("/v1/state", base).status, 200);

  // The body of PATCH is a StatePatch.
  std::string patch_body = R"({"generation":"11","baseGeneration":"10","version":"v2",)"
                           R"("upsert":{"backends":[{"name":"be_app","servers":[)"
                           R"({"name":"SRV_1","weight":20}]}],"maps":[{"name":")" +
                           map +
                           R"(","entries":[{"key":"b","value":"be_app"}]}]},)"
                           R"("remove":{"maps":[{"name":")" +
                           map + R"(","keys":["a"]}]}})";
  hawk::v1::StatePatch sent;
  ASSERT_TRUE(ParsesStrictly(patch_body, &sent));
  // A dry run first: a DryRunResponse, and nothing changes.
  HttpResult dry = hawk.Patch("/v1/state?dryRun=true", patch_body);
  ASSERT_EQ(dry.status, 200) << dry.body;
  hawk::v1::DryRunResponse preview;
  ASSERT_TRUE(ParsesStrictly(dry.body, &preview));
  EXPECT_TRUE(preview.dry_run());
  EXPECT_TRUE(preview.changes());
  EXPECT_EQ(preview.generation(), 11);
  ASSERT_EQ(preview.workers_size(), 1);
  EXPECT_EQ(preview.workers(0).basis(), hawk::v1::INCREMENTAL) << dry.body;
  EXPECT_EQ(preview.workers(0).commands_size(), 3) << dry.body;
  HttpResult patched = hawk.Patch("/v1/state", patch_body);
  ASSERT_EQ(patched.status, 200) << patched.body;
  hawk::v1::PushResponse push;
  ASSERT_TRUE(ParsesStrictly(patched.body, &push));
  EXPECT_EQ(push.version(), "v2");
  EXPECT_EQ(push.generation(), 11);
  ASSERT_EQ(push.workers_size(), 1);
  EXPECT_EQ(push.workers(0).result(), hawk::v1::APPLIED) << patched.body;

  hawk::v1::DesiredState state;
  ASSERT_TRUE(ParsesStrictly(hawk.Get("/v1/state").body, &state));
  ASSERT_EQ(state.backends_size(), 1);
  EXPECT_EQ(state.backends(0).servers(0).weight(), 20u);
  EXPECT_EQ(state.backends(0).servers(0).port(), static_cast<uint32_t>(backend_->port()));
  ASSERT_EQ(state.maps_size(), 1);
  ASSERT_EQ(state.maps(0).entries_size(), 1);
  EXPECT_EQ(state.maps(0).entries(0).key(), "b");

  // A delta against an old base: 409 naming the generation held, for PATCH and for PUT.
  hawk::v1::ErrorResponse error;
  HttpResult stale_base = hawk.Patch("/v1/state", R"({"baseGeneration":"10","generation":"12"})");
  EXPECT_EQ(stale_base.status, 409);
  ASSERT_TRUE(ParsesStrictly(stale_base.body, &error)) << stale_base.body;
  EXPECT_EQ(error.error().code(), "ABORTED");
  EXPECT_EQ(error.error().field(), "baseGeneration");
  EXPECT_EQ(error.error().current_generation(), "11");
  HttpResult older = hawk.Put("/v1/state", base);
  EXPECT_EQ(older.status, 409);
  ASSERT_TRUE(ParsesStrictly(older.body, &error));
  EXPECT_EQ(error.error().current_generation(), "11");

  HttpResult invalid = hawk.Patch(
      "/v1/state", R"({"upsert":{"backends":[{"name":"be_app","servers":[{"name":"NEW"}]}]}})");
  EXPECT_EQ(invalid.status, 400);
  ASSERT_TRUE(ParsesStrictly(invalid.body, &error));
  EXPECT_EQ(error.error().field(), "upsert.backends[0].servers[0].address");
}

TEST_F(ContractTest, ReloadResponsesAndHistory) {
  ASSERT_TRUE(haproxy_->Start());
  HawkProcess hawk(dir_, haproxy_->master_socket(),
                   {"--haproxy-config", haproxy_->config_path(), "--haproxy-binary",
                    HaproxyProcess::DefaultBinary()});
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  ASSERT_TRUE(WaitUntil([&] { return hawk.Get("/readyz").status == 200; }, seconds(5)));

  HttpResult ok = hawk.Post("/v1/reload", "{}");
  ASSERT_EQ(ok.status, 200) << ok.body;
  hawk::v1::ReloadResponse success;
  ASSERT_TRUE(ParsesStrictly(ok.body, &success));
  EXPECT_TRUE(success.success());
  EXPECT_EQ(success.result(), hawk::v1::SUCCEEDED);
  EXPECT_EQ(success.trigger(), hawk::v1::API);
  EXPECT_GT(success.new_worker_pid(), 0u);

  HttpResult rejected = hawk.Post("/v1/reload", R"({"config":"global\n    nonsense 1\n"})");
  ASSERT_EQ(rejected.status, 422) << rejected.body;
  hawk::v1::ReloadResponse failure;
  ASSERT_TRUE(ParsesStrictly(rejected.body, &failure));
  EXPECT_FALSE(failure.success());
  EXPECT_EQ(failure.result(), hawk::v1::FAILED);
  EXPECT_EQ(failure.error().code(), "FAILED_PRECONDITION");
  // The error body every endpoint shares parses too (ErrorResponse ignores nothing).
  google::protobuf::util::JsonParseOptions lenient;
  lenient.ignore_unknown_fields = true;
  hawk::v1::ErrorResponse error;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(rejected.body, &error, lenient).ok());
  EXPECT_FALSE(error.error().message().empty());

  HttpResult bad = hawk.Post("/v1/reload", R"({"config":7})");
  ASSERT_EQ(bad.status, 400);
  ASSERT_TRUE(ParsesStrictly(bad.body, &error));
  EXPECT_EQ(error.error().field(), "config");

  hawk::v1::ReloadsResponse history;
  std::string history_json = hawk.Get("/v1/reloads").body;
  ASSERT_TRUE(ParsesStrictly(history_json, &history));
  ASSERT_EQ(history.reloads_size(), 2) << history_json;
  EXPECT_EQ(history.reloads(0).result(), hawk::v1::FAILED);
  EXPECT_EQ(history.reloads(1).new_worker_pid(), success.new_worker_pid());

  hawk::v1::WorkersReport report;
  ASSERT_TRUE(ParsesStrictly(hawk.Get("/v1/workers").body, &report));
  // BasicHaproxyConfig has none of the recommended settings.
  EXPECT_GE(report.warnings_size(), 3);
}

}  // namespace
}  // namespace hawk::testing

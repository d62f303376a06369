// GET /v1/drain (a pod's preStop hook) against a real HAProxy: new connections keep it waiting,
// it answers `quiet` once they stop, `bound` when they never do, `unavailable` at once without a
// master; and every endpoint refuses a query parameter it does not know.

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// A number member of a flat JSON answer (-1 when absent).
long JsonNumber(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  at += key.size() + 3;
  size_t end = json.find_first_not_of("0123456789", at);
  long value = -1;
  if (!absl::SimpleAtoi(json.substr(at, end - at), &value)) return -1;
  return value;
}

// New connections to a frontend, one every 20 ms (each GET on its own connection), until Stop().
class NewConnections {
 public:
  explicit NewConnections(int port)
      : thread_([this, port] {
          while (!stop_) {
            if (Fetch("tcp:127.0.0.1:" + std::to_string(port), "GET", "/", "", seconds(2)).ok) {
              ++done_;
            }
            std::this_thread::sleep_for(milliseconds(20));  // pacing, not waiting
          }
        }) {}
  ~NewConnections() { Stop(); }
  // Returns once the last connection is closed: none is opened after.
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int done() const { return done_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> done_{0};
  std::thread thread_;
};

class DrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(dir_, "app");
    ASSERT_TRUE(backend_->ok()) << backend_->error();
    frontend_port_ = FreeTcpPort();
    haproxy_ = std::make_unique<HaproxyProcess>(
        dir_, BasicHaproxyConfig(frontend_port_, backend_->port()));
    Result started = haproxy_->Start();
    ASSERT_TRUE(started) << started.error;
    hawk_ = std::make_unique<HawkProcess>(dir_, haproxy_->master_socket());
    ASSERT_TRUE(hawk_->ok()) << hawk_->error();
    ASSERT_TRUE(hawk_->WaitServing()) << hawk_->LogTail();
    ASSERT_TRUE(WaitUntil([&] { return ReadyWithACurrentWorker(*hawk_); }, seconds(5)))
        << hawk_->LogTail();
  }
  void TearDown() override {
    hawk_.reset();
    haproxy_.reset();
    backend_.reset();
  }
  void StartLoad() {
    load_ = std::make_unique<NewConnections>(frontend_port_);
    ASSERT_TRUE(WaitUntil([&] { return load_->done() >= 3; }, seconds(5)));
  }

  TempDir dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<HawkProcess> hawk_;
  std::unique_ptr<NewConnections> load_;
  int frontend_port_ = -1;
};

// quietMs 300: hawk polls every 75 ms while a drain waits.
TEST_F(DrainTest, WaitsWhileConnectionsArriveThenQuiet) {
  StartLoad();
  const std::string target = "/v1/drain?quietMs=300&boundMs=10000";
  InFlightRequest probe(hawk_->probe_address(), target, seconds(15));
  InFlightRequest api(hawk_->api_address(), target, seconds(15));
  {
    // A caller that goes away: the others are answered all the same.
    InFlightRequest gone(hawk_->probe_address(), target, seconds(15));
    ASSERT_TRUE(gone.WaitSent(seconds(2)));
  }
  // New connections every 20 ms: a second of them and no answer.
  EXPECT_FALSE(probe.Wait(seconds(1)));
  EXPECT_FALSE(api.done());
  load_->Stop();
  Clock::time_point stopped = Clock::now();
  ASSERT_TRUE(probe.Wait(seconds(5)));
  long noticed_ms = MsSince(stopped);
  ASSERT_TRUE(api.Wait(seconds(1)));
  for (const HttpResult& r : {probe.result(), api.result()}) {
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(absl::StrContains(r.body, "\"reason\":\"quiet\"")) << r.body;
    EXPECT_TRUE(absl::StrContains(r.body, "\"role\":\"CURRENT\"")) << r.body;
    // At least the second the test waited, then quietMs after the last connection, which came
    // up to one load interval (20 ms) before the load stopped: 1000 + 300 - 20.
    EXPECT_GE(JsonNumber(r.body, "waitedMs"), 1280) << r.body;
  }
  // Not before quietMs after the last connection; within quietMs and two polls (75 ms each: one
  // to see the last connection, one to see none after) plus slack for a loaded machine.
  EXPECT_GE(noticed_ms, 250);
  EXPECT_LE(noticed_ms, 300 + 2 * 75 + 400);
  std::printf("drain: quiet noticed %ld ms after the last new connection (quietMs 300)\n",
              noticed_ms);
}

TEST_F(DrainTest, EndlessConnectionsEndAtTheBound) {
  StartLoad();
  Clock::time_point asked = Clock::now();
  HttpResult r =
      Fetch(hawk_->probe_address(), "GET", "/v1/drain?quietMs=300&boundMs=1500", "", seconds(5));
  long took_ms = MsSince(asked);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(absl::StrContains(r.body, "\"reason\":\"bound\"")) << r.body;
  EXPECT_GE(JsonNumber(r.body, "waitedMs"), 1500) << r.body;
  EXPECT_LE(took_ms, 1500 + 75 + 400);
  std::printf("drain: bound answered after %ld ms (boundMs 1500)\n", took_ms);
}

TEST_F(DrainTest, UnavailableAtOnceWithoutTheMaster) {
  haproxy_->Stop();
  ASSERT_TRUE(WaitUntil([&] { return !hawk_->Workers().master_reachable; }, seconds(5)));
  Clock::time_point asked = Clock::now();
  HttpResult r = Fetch(hawk_->probe_address(), "GET", "/v1/drain?quietMs=300&boundMs=5000");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_LE(MsSince(asked), 500);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_TRUE(absl::StrContains(r.body, "\"reason\":\"unavailable\"")) << r.body;
  EXPECT_TRUE(absl::StrContains(r.body, "\"code\":\"UNAVAILABLE\"")) << r.body;
}

// Every endpoint refuses a query parameter it does not know, naming it; known ones still work.
TEST_F(DrainTest, UnknownAndInvalidParametersAreRefused) {
  struct Case {
    std::string address;
    std::string method;
    std::string target;
    std::string field;
  };
  const std::string api = hawk_->api_address(), probe = hawk_->probe_address();
  const Case cases[] = {
      {probe, "GET", "/v1/drain?quietMs=fast", "quietMs"},
      {probe, "GET", "/v1/drain?boundMs=300001", "boundMs"},
      {probe, "GET", "/v1/drain?quietMs=5000&boundMs=1000", "quietMs"},
      {probe, "GET", "/v1/drain?quiet=1", "quiet"},
      {probe, "GET", "/healthz?verbose", "verbose"},
      {api, "GET", "/v1/workers?pid=42", "pid"},
      {api, "PUT", "/v1/state?dryRun=maybe", "dryRun"},
      {api, "PUT", "/v1/state?dryrun=true", "dryrun"},
      {api, "PATCH", "/v1/state?timeoutMs=10&dry%52un=1", "dryRun"},
      {api, "GET", "/v1/watch?heartbeat=100", "heartbeat"},
  };
  for (const Case& c : cases) {
    HttpResult r = Fetch(c.address, c.method, c.target, c.method == "GET" ? "" : "{}");
    ASSERT_TRUE(r.ok) << c.target << ": " << r.error;
    EXPECT_EQ(r.status, 400) << c.target << ": " << r.body;
    EXPECT_TRUE(absl::StrContains(r.body, "\"field\":\"" + c.field + "\"")) << r.body;
  }
  EXPECT_EQ(hawk_->Get("/v1/state").status, 404);  // the PUT above applied nothing
  HttpResult ok = Fetch(probe, "GET", "/v1/drain?quietMs=0&boundMs=0");
  EXPECT_EQ(ok.status, 200) << ok.body;
}

}  // namespace
}  // namespace hawk::testing

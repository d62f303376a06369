// The master CLI serves 10 connections at a time (its MASTER proxy has maxconn 10, no client
// timeout); an 11th is accepted by the kernel and waits, unserved, until a slot frees. Other
// clients (an operator's socat, a second agent) may hold slots. hawk uses at most 2
// (--max-master-connections' default), says why it is not ready while it gets none, and recovers
// by itself when slots free. Real HAProxy (Debian 12's 2.6; the cap is the same through 3.4).

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/http_client.h"
#include "tests/support/socket_util.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::seconds;

// A master CLI connection the test holds: connected, in prompt mode, and answered (so it owns one
// of the master's slots). Invalid if the master did not answer within the deadline.
UniqueFd HoldSlot(const std::string& master_socket, std::string* error) {
  auto deadline = Clock::now() + seconds(5);
  UniqueFd fd = ConnectUnix(master_socket, deadline, error);
  if (!fd.valid() || !WriteAll(fd.get(), "prompt\n", deadline, error)) return UniqueFd();
  std::string received;
  char buffer[256];
  while (received.find("> ") == std::string::npos) {
    ssize_t n = ReadSome(fd.get(), buffer, sizeof(buffer), deadline, error);
    if (n <= 0) return UniqueFd();
    received.append(buffer, static_cast<size_t>(n));
  }
  return fd;
}

// hawk's own count of its open master connections (hawk_master_cli_connections), -1 if unread.
int HawkMasterConnections(const HawkProcess& hawk) {
  HttpResult metrics = Fetch(hawk.probe_address(), "GET", "/metrics");
  const std::string kName = "\nhawk_master_cli_connections ";
  size_t at = metrics.body.find(kName);
  if (at == std::string::npos) return -1;
  size_t end = metrics.body.find('\n', at + kName.size());
  int value = -1;
  if (!absl::SimpleAtoi(metrics.body.substr(at + kName.size(), end - at - kName.size()), &value)) {
    return -1;
  }
  return value;
}

TEST(MasterSlotsTest, HawkWaitsForASlotSaysWhyAndNeverTakesMoreThanTwo) {
  TempDir dir;
  Backend backend(dir, "A");
  ASSERT_TRUE(backend.ok()) << backend.error();
  HaproxyProcess haproxy(dir, StateHaproxyConfig(dir, FreeTcpPort(), backend.port()));
  Result started = haproxy.Start();
  ASSERT_TRUE(started) << started.error;
  int worker = haproxy.CurrentWorkerPid();
  ASSERT_GT(worker, 0);

  // Every slot is held by others before hawk starts.
  std::vector<UniqueFd> held;
  for (int i = 0; i < 10; ++i) {
    std::string error;
    held.push_back(HoldSlot(haproxy.master_socket(), &error));
    ASSERT_TRUE(held.back().valid()) << "slot " << i << ": " << error;
  }
  HawkProcess hawk(dir, haproxy.master_socket());
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  HttpResult ready;
  ASSERT_TRUE(WaitUntil(
      [&] {
        ready = hawk.Get("/readyz");  // the API's detail; the probe says only the reason code
        return ready.status == 503 &&
               ready.body.find("all 10 master CLI slots busy") != std::string::npos;
      },
      seconds(10)))
      << ready.status << " " << ready.body;
  HttpResult probe = Fetch(hawk.probe_address(), "GET", "/readyz");
  EXPECT_EQ(probe.status, 503);
  EXPECT_NE(probe.body.find("MASTER_UNREACHABLE"), std::string::npos) << probe.body;
  EXPECT_EQ(probe.body.find("slots"), std::string::npos) << probe.body;
  EXPECT_LE(HawkMasterConnections(hawk), 2);

  // Two slots free: hawk gets in by itself and works within them, 8 still held by others.
  held.pop_back();
  held.pop_back();
  ASSERT_TRUE(WaitUntil([&] { return Fetch(hawk.probe_address(), "GET", "/readyz").status == 200; },
                        seconds(10)))
      << Fetch(hawk.probe_address(), "GET", "/readyz").body << "\n"
      << hawk.LogTail();
  int most = 0;
  for (int i = 1; i <= 20; ++i) {
    HttpResult put = hawk.Put(
        "/v1/state?timeoutMs=5000",
        absl::StrCat(R"({"version":"v)", i, R"(","backends":[{"name":"be_app","servers":[)",
                     R"({"name":"SRV_1","address":"127.0.0.1","port":)", backend.port(),
                     R"(,"weight":)", i, "}]}]}"));
    ASSERT_EQ(put.status, 200) << put.body;
    EXPECT_NE(put.body.find("\"APPLIED\""), std::string::npos) << put.body;
    most = std::max(most, HawkMasterConnections(hawk));
  }
  EXPECT_GT(most, 0);
  EXPECT_LE(most, 2) << "hawk took more than its 2 master connections";
  // The test's slots were never taken from it: each still answers.
  for (UniqueFd& fd : held) {
    std::string error;
    ASSERT_TRUE(WriteAll(fd.get(), "show proc\n", Clock::now() + seconds(2), &error)) << error;
    char buffer[512];
    EXPECT_GT(ReadSome(fd.get(), buffer, sizeof(buffer), Clock::now() + seconds(2), &error), 0)
        << error;
  }
  held.clear();
  EXPECT_EQ(ReadServerRow(haproxy.master_socket(), worker, "be_app", "SRV_1").weight, 20);
}

}  // namespace
}  // namespace hawk::testing

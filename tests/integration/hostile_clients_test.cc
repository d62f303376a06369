// Clients that hold hawk's API without using it: stalled headers, stalled bodies, watch streams
// nobody reads, a burst of concurrent PUTs, a flood of idle connections. hawk keeps serving its
// probes promptly and its API to others, refuses what is beyond its connection limit, drops the
// stalled, and its memory stays bounded. The real binary over its real sockets; no HAProxy is
// needed (hawk answers without a reachable master).

#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/http_client.h"
#include "tests/support/socket_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/trickle_clients.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

constexpr int kIdleConnections = 1000;
// hawk's API listener serves this many connections at once (http::ServerOptions) and answers
// the ones beyond it with a 503.
constexpr int kApiConnectionLimit = 256;

// The slowest of `tries` probe requests, in milliseconds (-1 if one failed).
long SlowestHealthzMs(const HawkProcess& hawk, int tries) {
  long slowest = 0;
  for (int i = 0; i < tries; ++i) {
    auto start = Clock::now();
    HttpResult r = Fetch(hawk.probe_address(), "GET", "/healthz");
    if (!r.ok || r.status != 200) return -1;
    slowest = std::max<long>(
        slowest, std::chrono::duration_cast<milliseconds>(Clock::now() - start).count());
  }
  return slowest;
}

// hawk's count of the open connections on its API socket (hawk_http_connections), -1 if unread.
long ApiConnections(const HawkProcess& hawk) {
  HttpResult metrics = Fetch(hawk.probe_address(), "GET", "/metrics");
  std::string series = "hawk_http_connections{listener=\"" + hawk.api_address() + "\"} ";
  size_t at = metrics.body.find(series);
  if (at == std::string::npos) return -1;
  return std::strtol(metrics.body.c_str() + at + series.size(), nullptr, 10);
}

std::string SocketPath(const HawkProcess& hawk) { return hawk.api_address().substr(5); }

UniqueFd Open(const HawkProcess& hawk, const std::string& bytes) {
  std::string error;
  UniqueFd fd = ConnectUnix(SocketPath(hawk), Clock::now() + seconds(5), &error);
  EXPECT_TRUE(fd.valid()) << error;
  if (fd.valid() && !bytes.empty()) {
    EXPECT_TRUE(WriteAll(fd.get(), bytes, Clock::now() + seconds(5), &error)) << error;
  }
  return fd;
}

// What the server sent before closing, or "" if it is still open at the deadline.
std::string ReadUntilClosed(int fd, Clock::time_point deadline, bool* closed) {
  std::string received;
  char buffer[4096];
  std::string error;
  *closed = false;
  while (true) {
    ssize_t n = ReadSome(fd, buffer, sizeof(buffer), deadline, &error);
    if (n > 0) {
      received.append(buffer, static_cast<size_t>(n));
      continue;
    }
    *closed = n == 0 || error != "timeout";
    return received;
  }
}

TEST(HostileClientsTest, StalledIdleAndUnreadClientsLeaveHawkServing) {
  // The test holds ~1,200 sockets and hawk as many: both need the descriptors (hawk inherits).
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  ASSERT_GE(files.rlim_max, rlim_t{4096})
      << "the hard limit on open files is too low for this test";
  files.rlim_cur = files.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);

  TempDir dir;
  HawkProcess hawk(dir, dir.File("master.sock"));
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  long rss_before = ResidentKib(hawk.pid());
  ASSERT_GT(rss_before, 0);

  // 20 clients stall in their headers, 20 in a PUT's body.
  std::vector<UniqueFd> stalled_headers;
  std::vector<UniqueFd> stalled_bodies;
  for (int i = 0; i < 20; ++i) {
    stalled_headers.push_back(Open(hawk, "GET /v1/workers HTTP/1.1\r\nHost: hawk\r\nX-Slow: "));
    stalled_bodies.push_back(
        Open(hawk,
             "PUT /v1/state HTTP/1.1\r\nHost: hawk\r\nContent-Type: application/json\r\n"
             "Content-Length: 100000\r\n\r\n{\"ver"));
  }
  // 50 watch streams: half are read, half are never read.
  std::vector<UniqueFd> watchers;
  for (int i = 0; i < 50; ++i) {
    watchers.push_back(Open(hawk, "GET /v1/watch HTTP/1.1\r\nHost: hawk\r\n\r\n"));
  }
  // 100 PUTs at once, each on its own connection, all sent before any answer is read.
  std::vector<UniqueFd> puts;
  for (int i = 0; i < 100; ++i) {
    std::string body = absl::StrCat(
        R"({"version":"v)", i,
        R"(","backends":[{"name":"be_app","servers":[{"name":"SRV_1","address":"10.0.0.)",
        i % 250 + 1, R"(","port":8080}]}]})");
    puts.push_back(Open(hawk, absl::StrCat("PUT /v1/state HTTP/1.1\r\nHost: hawk\r\n"
                                           "Content-Type: application/json\r\n"
                                           "Connection: close\r\nContent-Length: ",
                                           body.size(), "\r\n\r\n", body)));
  }
  EXPECT_GE(SlowestHealthzMs(hawk, 5), 0);
  EXPECT_LT(SlowestHealthzMs(hawk, 5), 100) << "a probe waited behind the clients";
  int answered = 0;
  for (UniqueFd& fd : puts) {
    bool closed = false;
    std::string response = ReadUntilClosed(fd.get(), Clock::now() + seconds(10), &closed);
    if (response.rfind("HTTP/1.1 200", 0) == 0) ++answered;
  }
  EXPECT_EQ(answered, 100) << "every concurrent PUT is answered";
  puts.clear();
  int reports = 0;
  for (size_t i = 0; i < watchers.size(); i += 2) {
    char buffer[8192];
    std::string error;
    ssize_t n =
        ReadSome(watchers[i].get(), buffer, sizeof(buffer), Clock::now() + seconds(5), &error);
    if (n > 0 &&
        std::string(buffer, static_cast<size_t>(n)).find("{\"report\":") != std::string::npos) {
      ++reports;
    }
  }
  EXPECT_EQ(reports, 25) << "the watch streams that are read get the report";
  long rss_busy = ResidentKib(hawk.pid());

  // 1,000 idle connections on top: hawk serves up to its limit and refuses the rest at once.
  // First hawk must have seen the PUTs' connections close.
  int open_before_flood = 20 + 20 + 50;
  ASSERT_TRUE(WaitUntil([&] { return ApiConnections(hawk) == open_before_flood; }, seconds(10)))
      << ApiConnections(hawk);
  std::vector<UniqueFd> idle;
  for (int i = 0; i < kIdleConnections; ++i) idle.push_back(Open(hawk, ""));
  EXPECT_LT(SlowestHealthzMs(hawk, 10), 100) << "a probe waited behind 1,000 idle connections";
  // Past the limit hawk closes connections at once: the first ones with a 503 that says why, a
  // flood of them cut short. Which of the idle ones are past it depends on when hawk saw the
  // PUTs' connections close, so they are counted, not picked by position.
  bool closed = false;
  ReadUntilClosed(idle.back().get(), Clock::now() + seconds(5), &closed);
  EXPECT_TRUE(closed) << "a connection past the limit was kept open";
  size_t served = 0;
  size_t told_why = 0;
  for (size_t i = 0; i < idle.size(); ++i) {
    // A served idle connection stays open (until hawk's idle timeout) and silent.
    if (PollFd(idle[i].get(), POLLIN, Clock::now() + milliseconds(i == 0 ? 200 : 0)) == 0) {
      ++served;
      continue;
    }
    std::string refused = ReadUntilClosed(idle[i].get(), Clock::now() + seconds(2), &closed);
    EXPECT_TRUE(closed) << "connection " << i;
    if (refused.rfind("HTTP/1.1 503", 0) == 0) ++told_why;
  }
  EXPECT_EQ(served, static_cast<size_t>(kApiConnectionLimit - open_before_flood))
      << "hawk serves exactly up to its connection limit";
  EXPECT_GT(told_why, 0u) << "no refused connection was told why";
  // Connections cost little: 190 busy ones and then 1,000 idle ones (with a 64 KiB read buffer
  // per connection, the busy ones alone took 13 MiB). Under ASan, memory says nothing.
  long rss_flooded = ResidentKib(hawk.pid());
  if (!kSanitized) {
    EXPECT_LT(rss_busy - rss_before, 6 * 1024)
        << "RSS " << rss_before << " KiB idle, " << rss_busy << " KiB after the PUTs";
    EXPECT_LT(rss_flooded - rss_busy, 4 * 1024)
        << "RSS " << rss_busy << " KiB before the flood, " << rss_flooded << " KiB during it";
  }

  // Stalled headers are dropped after hawk's header timeout (10 s), answered 408.
  for (UniqueFd& fd : stalled_headers) {
    std::string dropped = ReadUntilClosed(fd.get(), Clock::now() + seconds(15), &closed);
    EXPECT_TRUE(closed) << "a client stalled in its headers was not dropped";
    EXPECT_EQ(dropped.rfind("HTTP/1.1 408", 0), 0u) << dropped;
  }

  // Once the clients go, the API is everybody's again.
  idle.clear();
  watchers.clear();
  stalled_bodies.clear();
  // (hawk may take a loop turn or two to see ~240 connections close: until then it is full.)
  HttpResult after;
  EXPECT_TRUE(WaitUntil(
      [&] {
        after = hawk.Get("/v1/workers");
        return after.status == 200;
      },
      seconds(5)))
      << after.status << " " << after.error;
  EXPECT_TRUE(WaitUntil([&] { return ApiConnections(hawk) == 0; }, seconds(10)))
      << ApiConnections(hawk) << " connections left open";
  std::cout << "hawk RSS: " << rss_before << " KiB idle, " << rss_busy << " KiB after the PUTs, "
            << rss_flooded << " KiB holding every client\n";
}

// The slowest of `rounds` requests on fresh connections, in milliseconds; -1 if one was not
// answered `status` within `deadline` (`*failure` says what it got instead).
long SlowestAnswerMs(const std::string& address, const HttpRequest& request, int status, int rounds,
                     milliseconds deadline, std::string* failure) {
  long slowest = 0;
  for (int i = 0; i < rounds; ++i) {
    auto start = Clock::now();
    std::string error;
    std::unique_ptr<HttpConnection> connection = HttpConnection::Connect(address, deadline, &error);
    HttpResult r;
    if (connection != nullptr) {
      r = connection->RoundTrip(request, deadline);
    } else {
      r.error = error;
    }
    if (!r.ok || r.status != status) {
      *failure =
          absl::StrCat("round ", i, ": ", r.ok ? absl::StrCat(r.status, " ", r.body) : r.error);
      return -1;
    }
    slowest = std::max<long>(
        slowest, std::chrono::duration_cast<milliseconds>(Clock::now() - start).count());
    std::this_thread::sleep_for(milliseconds(20));  // spread the rounds over the churn
  }
  return slowest;
}

TEST(HostileClientsTest, TricklingClientsTakeNeitherTheControllersSlotNorTheProbes) {
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  files.rlim_cur = files.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
  TempDir dir;
  ASSERT_TRUE(WriteFile(dir.File("token"), "trickle-token-6b2e"));
  std::string api = absl::StrCat("tcp:127.0.0.1:", FreeTcpPort());
  HawkProcess hawk(dir, dir.File("master.sock"),
                   {"--listen", api, "--token-file", dir.File("token")});
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();

  // 256 slowloris clients on the token listener and 256 on the probe listener: today's limit
  // of each, held by clients that never finish a request and reconnect when dropped.
  Tricklers on_api(api, 256, milliseconds(100));
  Tricklers on_probe(hawk.probe_address(), 256, milliseconds(100));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return on_api.open() + on_api.closed_by_server() >= 256 &&
               on_probe.open() + on_probe.closed_by_server() >= 256;
      },
      seconds(10)))
      << on_api.open() << " and " << on_probe.open() << " open";

  HttpRequest controller = HttpRequest::Get("/v1/workers");
  controller.AddHeader("Authorization", "Bearer trickle-token-6b2e");
  controller.AddHeader("Connection", "close");
  HttpRequest probe = HttpRequest::Get("/healthz");
  probe.AddHeader("Connection", "close");
  std::string failure;
  long controller_ms = SlowestAnswerMs(api, controller, 200, 10, seconds(2), &failure);
  EXPECT_GE(controller_ms, 0) << "the controller was not answered: " << failure;
  long probe_ms = SlowestAnswerMs(hawk.probe_address(), probe, 200, 10, seconds(2), &failure);
  EXPECT_GE(probe_ms, 0) << "/healthz was not answered: " << failure;
  std::cout << "with 256 trickling clients on each listener: controller answered within "
            << controller_ms << " ms, /healthz within " << probe_ms << " ms ("
            << on_api.closed_by_server() << " and " << on_probe.closed_by_server()
            << " hostile connections closed by hawk)\n";
  on_api.Stop();
  on_probe.Stop();
  EXPECT_EQ(Fetch(api, "GET", "/healthz").status, 401);
}

}  // namespace
}  // namespace hawk::testing

// The e2e tools judged from outside: hawk_e2e_backend and hawk_load_client run as real processes
// against each other and against scripted servers that misbehave on purpose.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "simdjson.h"
#include "tests/e2e/load_stats.h"
#include "tests/support/free_port.h"
#include "tests/support/socket_util.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// One JSON line of hawk_load_client, read with simdjson; fields by JSON pointer.
class Summary {
 public:
  bool Parse(const std::string& line) {
    text_ = line;
    return parser_.parse(text_).get(doc_) == simdjson::SUCCESS;
  }
  // -1 if the field is missing or not an unsigned integer.
  int64_t Get(const char* pointer) const {
    uint64_t value = 0;
    if (doc_.at_pointer(pointer).get_uint64().get(value) != simdjson::SUCCESS) return -1;
    return static_cast<int64_t>(value);
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  simdjson::dom::parser parser_;
  simdjson::dom::element doc_;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // a line still being written
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The last complete line of `path` parsed into `summary`; false if there is none.
bool LastSummary(const std::string& path, Summary* summary) {
  std::vector<std::string> lines = Lines(ReadFile(path));
  return !lines.empty() && summary->Parse(lines.back());
}

std::unique_ptr<Subprocess> Start(std::vector<std::string> argv, const std::string& out,
                                  const std::string& err) {
  SubprocessOptions options;
  options.argv = std::move(argv);
  options.stdout_path = out;
  options.stderr_path = err;
  std::string error;
  auto process = Subprocess::Spawn(std::move(options), &error);
  EXPECT_NE(process, nullptr) << error;
  return process;
}

// A hawk_e2e_backend on a free port, ready (its "listening on" line is out) when it returns.
std::unique_ptr<Subprocess> StartBackend(const TempDir& dir, const std::string& name, int* port,
                                         std::vector<std::string> extra = {}) {
  *port = FreeTcpPort();
  std::string out = dir.File(name + ".out");
  std::vector<std::string> argv = {HAWK_E2E_BACKEND_PATH, "--listen",
                                   "127.0.0.1:" + std::to_string(*port), "--name", name};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto backend = Start(std::move(argv), out, dir.File(name + ".err"));
  std::string expected = "listening on 127.0.0.1:" + std::to_string(*port) + "\n";
  EXPECT_TRUE(WaitUntil([&] { return ReadFile(out) == expected; }, seconds(10)))
      << "backend stdout: " << ReadFile(out) << " stderr: " << ReadFile(dir.File(name + ".err"));
  return backend;
}

std::vector<std::string> ClientArgs(int port, std::vector<std::string> extra) {
  std::vector<std::string> argv = {HAWK_LOAD_CLIENT_PATH, "--target",
                                   "127.0.0.1:" + std::to_string(port)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// Runs the client to completion (it must stop by itself) and parses its summary.
void RunClient(const TempDir& dir, int port, std::vector<std::string> extra, Summary* summary) {
  std::string out = dir.File("client.out");
  std::string err = dir.File("client.err");
  auto client = Start(ClientArgs(port, std::move(extra)), out, err);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->WaitExit(seconds(30))) << "client did not stop";
  EXPECT_EQ(client->exit_code(), 0) << client->DescribeExit() << ": " << ReadFile(err);
  ASSERT_TRUE(LastSummary(out, summary)) << "stdout: " << ReadFile(out);
}

// True once `pid` has a handler for `sig` (SigCgt in /proc/<pid>/status): before that, SIGUSR1
// would kill the client instead of asking for a summary.
bool CatchesSignal(pid_t pid, int sig) {
  std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  auto at = status.find("SigCgt:");
  if (at == std::string::npos) return false;
  uint64_t mask = std::strtoull(status.c_str() + at + 7, nullptr, 16);
  return (mask >> (sig - 1)) & 1;
}

// Sends SIGUSR1 and waits until the client's latest summary satisfies `predicate`.
template <typename Predicate>
bool WaitForSummary(Subprocess& client, const std::string& out, Predicate predicate,
                    milliseconds deadline) {
  if (!WaitUntil([&] { return CatchesSignal(client.pid(), SIGUSR1); }, seconds(10))) return false;
  Summary summary;
  return WaitUntil(
      [&] {
        client.Signal(SIGUSR1);
        return LastSummary(out, &summary) && predicate(summary);
      },
      deadline, milliseconds(50));
}

TEST(LatencyHistogramTest, QuantilesWithinBucketError) {
  e2e::LatencyHistogram histogram;
  EXPECT_EQ(histogram.Quantile(0.5), 0u);
  for (uint64_t v = 1; v <= 10000; ++v) histogram.Record(v);
  EXPECT_EQ(histogram.count(), 10000u);
  EXPECT_EQ(histogram.max(), 10000u);
  EXPECT_NEAR(static_cast<double>(histogram.Quantile(0.5)), 5000, 5000 / 64.0);
  EXPECT_NEAR(static_cast<double>(histogram.Quantile(0.99)), 9900, 9900 / 64.0);
  EXPECT_EQ(histogram.Quantile(1.0), 10000u);
  histogram.Record(uint64_t{1} << 62);  // the largest buckets exist
  EXPECT_EQ(histogram.Quantile(1.0), uint64_t{1} << 62);
}

TEST(LoadStatsTest, SummaryIsJsonWithEveryField) {
  e2e::LoadStats stats;
  stats.RecordResponse(false, 200, 42, 1500);
  stats.RecordResponse(true, 503, 0, 800);
  stats.RecordFailure(true, "status_503");
  Summary summary;
  ASSERT_TRUE(summary.Parse(e2e::FormatSummary(stats, 1000)));
  EXPECT_EQ(summary.Get("/requests"), 2);
  EXPECT_EQ(summary.Get("/ok"), 1);
  EXPECT_EQ(summary.Get("/failures"), 1);
  EXPECT_EQ(summary.Get("/failures_by_kind/status_503"), 1);
  EXPECT_EQ(summary.Get("/failures_by_kind/connect_refused"), 0);
  EXPECT_EQ(summary.Get("/by_pid/42"), 1);
  EXPECT_EQ(summary.Get("/by_pid/0"), 1);
  EXPECT_EQ(summary.Get("/prober/requests"), 1);
  EXPECT_EQ(summary.Get("/prober/failures"), 1);
  EXPECT_EQ(summary.Get("/duration_ms"), 1000);
}

TEST(E2eToolsTest, ClientAgainstBackendHasNoFailures) {
  TempDir dir;
  int port = 0;
  auto backend = StartBackend(dir, "b1", &port);
  Summary summary;
  RunClient(dir, port,
            {"--duration-ms", "1000", "--connections", "4", "--prober-interval-ms", "50"},
            &summary);
  SCOPED_TRACE(summary.text());
  EXPECT_GT(summary.Get("/requests"), 100);
  EXPECT_EQ(summary.Get("/ok"), summary.Get("/requests"));
  EXPECT_EQ(summary.Get("/failures"), 0);
  EXPECT_EQ(summary.Get("/retries"), 0);
  EXPECT_EQ(summary.Get("/reconnects"), 0);  // every connection kept alive throughout
  EXPECT_EQ(summary.Get("/by_pid/0"), summary.Get("/requests"));  // no X-Pid without HAProxy
  EXPECT_GT(summary.Get("/prober/requests"), 5);
  backend->Stop();
  EXPECT_EQ(backend->exit_code(), 0) << backend->DescribeExit();
}

TEST(E2eToolsTest, OneShotConnectionsOpenOneConnectionPerRequest) {
  TempDir dir;
  int port = 0;
  auto backend = StartBackend(dir, "b1", &port);
  Summary summary;
  RunClient(dir, port,
            {"--duration-ms", "500", "--connections", "0", "--one-shot-connections", "4",
             "--prober-interval-ms", "50"},
            &summary);
  SCOPED_TRACE(summary.text());
  int64_t requests = summary.Get("/requests");
  int64_t probes = summary.Get("/prober/requests");
  EXPECT_GT(requests, 100);
  EXPECT_EQ(summary.Get("/failures"), 0);
  EXPECT_EQ(summary.Get("/retries"), 0);  // no connection is reused, so nothing is resent
  // Every load request but each connection's first opened a connection; the prober kept its own.
  // The requests in flight at the stop opened one without completing: up to 4 more.
  int64_t reconnects = summary.Get("/reconnects");
  EXPECT_GE(reconnects, requests - probes - 4);
  EXPECT_LE(reconnects, requests - probes);
  backend->Stop();
  EXPECT_EQ(backend->exit_code(), 0) << backend->DescribeExit();
}

// Pipelining, and the graceful stop seen from a raw socket: new connects refused at once, the
// request in progress answered with `Connection: close`, then the exit.
// Reads until at least `size` bytes came; what came (a read error or an early EOF fails the
// test).
std::string ReadAtLeast(int fd, size_t size, Clock::time_point deadline) {
  std::string received, error;
  char buffer[4096];
  while (received.size() < size) {
    ssize_t n = ReadSome(fd, buffer, sizeof(buffer), deadline, &error);
    if (n <= 0) {
      ADD_FAILURE() << "read: " << (n == 0 ? "EOF" : error) << " after: " << received;
      break;
    }
    received.append(buffer, static_cast<size_t>(n));
  }
  return received;
}

// Reads until the peer's EOF; what came (a read error fails the test).
std::string ReadToEof(int fd, Clock::time_point deadline) {
  std::string received, error;
  char buffer[4096];
  while (true) {
    ssize_t n = ReadSome(fd, buffer, sizeof(buffer), deadline, &error);
    EXPECT_GE(n, 0) << error << " after: " << received;
    if (n <= 0) return received;
    received.append(buffer, static_cast<size_t>(n));
  }
}

// True once a connect to `port` is refused (the listener is closed), within 5 s.
bool ConnectsAreRefused(int port, std::string* error) {
  return WaitUntil(
      [&] {
        int errno_value = 0;
        UniqueFd probe =
            ConnectTcp("127.0.0.1", port, Clock::now() + seconds(1), error, &errno_value);
        return !probe.valid() && errno_value == ECONNREFUSED;
      },
      seconds(5));
}

TEST(E2eToolsTest, BackendPipelinesAndFinishesTheRequestInProgressOnSigterm) {
  TempDir dir;
  int port = 0;
  auto backend = StartBackend(dir, "b2", &port);
  auto deadline = Clock::now() + seconds(10);
  std::string error;
  UniqueFd fd = ConnectTcp("127.0.0.1", port, deadline, &error);
  ASSERT_TRUE(fd.valid()) << error;

  std::string two = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(WriteAll(fd.get(), two, deadline, &error)) << error;
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nX-Backend: b2\r\n\r\n"
      "b2\n";
  ASSERT_EQ(ReadAtLeast(fd.get(), 2 * response.size(), deadline), response + response);

  // An idle keep-alive connection: answered once, so accepted and idle for sure.
  UniqueFd idle = ConnectTcp("127.0.0.1", port, deadline, &error);
  ASSERT_TRUE(idle.valid()) << error;
  ASSERT_TRUE(WriteAll(idle.get(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", deadline, &error));
  ASSERT_EQ(ReadAtLeast(idle.get(), response.size(), deadline), response);
  // A request in progress when the stop begins: sent in one write behind a complete one, so
  // once the first is answered the backend has read the start of the second.
  ASSERT_TRUE(WriteAll(
      fd.get(), "GET /c HTTP/1.1\r\nHost: x\r\n\r\nGET /d HTTP/1.1\r\nHost:", deadline, &error))
      << error;
  ASSERT_EQ(ReadAtLeast(fd.get(), response.size(), deadline), response);
  ASSERT_TRUE(backend->Signal(SIGTERM));
  // The listener is gone at once.
  ASSERT_TRUE(ConnectsAreRefused(port, &error)) << error;
  // The idle connection is closed at once.
  char buffer[4096];
  EXPECT_EQ(ReadSome(idle.get(), buffer, sizeof(buffer), deadline, &error), 0) << error;
  EXPECT_TRUE(backend->Running()) << "exited with a request in progress";

  ASSERT_TRUE(WriteAll(fd.get(), " x\r\n\r\n", deadline, &error)) << error;
  EXPECT_EQ(ReadToEof(fd.get(), deadline),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nX-Backend: "
            "b2\r\nConnection: close\r\n\r\nb2\n");
  fd.Reset();
  ASSERT_TRUE(backend->WaitExit(seconds(5)));
  EXPECT_EQ(backend->exit_code(), 0) << backend->DescribeExit();
}

TEST(E2eToolsTest, BackendInLameDuckAnswersOpenConnectionsOnceAndRefusesNewOnes) {
  TempDir dir;
  int port = 0;
  // Longer than the test: the backend exits because its last connection closed, not on a timer.
  auto backend = StartBackend(dir, "b4", &port, {"--lame-duck-ms", "60000"});
  auto deadline = Clock::now() + seconds(10);
  std::string error;
  const std::string keep_alive =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nX-Backend: b4\r\n\r\n"
      "b4\n";
  const std::string last =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nX-Backend: "
      "b4\r\nConnection: close\r\n\r\nb4\n";
  // Two idle keep-alive connections, each answered once (so accepted for sure).
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 2; ++i) {
    idle.push_back(ConnectTcp("127.0.0.1", port, deadline, &error));
    ASSERT_TRUE(idle.back().valid()) << error;
    ASSERT_TRUE(WriteAll(idle.back().get(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", deadline, &error));
    ASSERT_EQ(ReadAtLeast(idle.back().get(), keep_alive.size(), deadline), keep_alive);
  }
  ASSERT_TRUE(backend->Signal(SIGTERM));
  // New connects are refused at once...
  ASSERT_TRUE(ConnectsAreRefused(port, &error)) << error;
  // ...while both open connections still take one request each, answered with
  // `Connection: close` and then closed.
  for (UniqueFd& fd : idle) {
    ASSERT_TRUE(WriteAll(fd.get(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", deadline, &error)) << error;
    EXPECT_EQ(ReadToEof(fd.get(), deadline), last);
    fd.Reset();
  }
  // Nothing open any more: the backend exits without waiting out the lame duck.
  ASSERT_TRUE(backend->WaitExit(seconds(10)));
  EXPECT_EQ(backend->exit_code(), 0) << backend->DescribeExit();
}

TEST(E2eToolsTest, BackendSigtermUnderLoadLeavesOnlyRefusedConnects) {
  TempDir dir;
  int port = 0;
  auto backend = StartBackend(dir, "b3", &port);
  std::string out = dir.File("client.out");
  std::string events = dir.File("events.jsonl");
  auto client = Start(
      ClientArgs(port, {"--connections", "8", "--prober-interval-ms", "20", "--events", events}),
      out, dir.File("client.err"));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(WaitForSummary(
      *client, out, [](const Summary& s) { return s.Get("/requests") > 1000; }, seconds(10)));

  auto stop_begins = Clock::now();
  ASSERT_TRUE(backend->Signal(SIGTERM));
  ASSERT_TRUE(backend->WaitExit(seconds(5)));
  EXPECT_LT(Clock::now() - stop_begins, seconds(2)) << "the backend did not exit promptly";
  EXPECT_EQ(backend->exit_code(), 0) << backend->DescribeExit();

  EXPECT_TRUE(WaitForSummary(
      *client, out, [](const Summary& s) { return s.Get("/failures_by_kind/connect_refused") > 0; },
      seconds(10)));
  ASSERT_TRUE(client->Signal(SIGTERM));
  ASSERT_TRUE(client->WaitExit(seconds(10)));
  EXPECT_EQ(client->exit_code(), 0) << client->DescribeExit();
  Summary summary;
  ASSERT_TRUE(LastSummary(out, &summary));
  SCOPED_TRACE(summary.text());
  EXPECT_GT(summary.Get("/failures_by_kind/connect_refused"), 0);
  // Graceful: nothing was cut mid-response; only the connects after the exit failed.
  EXPECT_EQ(summary.Get("/failures"), summary.Get("/failures_by_kind/connect_refused"));
  EXPECT_EQ(summary.Get("/requests"), summary.Get("/ok"));
  EXPECT_NE(ReadFile(events).find("\"kind\":\"failure\""), std::string::npos);
}

// A scripted HTTP server on plain sockets in a thread: answers every request with 200 and
// `X-Pid: 4242`, except that it closes (FIN, or RST with `reset`) connection number `conn`
// (0-based, in accept order) right after reading its request number `request` (1-based),
// without answering.
struct CloseRule {
  int conn;
  int request;
  bool reset = false;
};

class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<CloseRule> rules) : rules_(std::move(rules)) {
    listener_.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listener_.get(), 64) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << ErrnoMessage("scripted server listen", errno);
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return port_; }

 private:
  struct Conn {
    UniqueFd fd;
    int index;
    int requests = 0;
    std::string buffer;
  };

  void Run() {
    static const std::string kResponse =
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Pid: 4242\r\n\r\nok\n";
    std::vector<Conn> conns;
    int accepted = 0;
    while (!stop_) {
      std::vector<pollfd> fds = {{listener_.get(), POLLIN, 0}};
      for (const Conn& conn : conns) fds.push_back({conn.fd.get(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      for (size_t i = 0; i < conns.size(); ++i) {
        if (fds[i + 1].revents == 0) continue;
        Conn& conn = conns[i];
        char buffer[4096];
        ssize_t n = ::recv(conn.fd.get(), buffer, sizeof(buffer), 0);
        if (n <= 0) {
          conn.fd.Reset();
          continue;
        }
        conn.buffer.append(buffer, static_cast<size_t>(n));
        size_t end;
        while (conn.fd.valid() && (end = conn.buffer.find("\r\n\r\n")) != std::string::npos) {
          conn.buffer.erase(0, end + 4);
          ++conn.requests;
          if (const CloseRule* rule = Rule(conn); rule != nullptr) {
            if (rule->reset) {
              linger hard{1, 0};  // close() sends an RST
              ::setsockopt(conn.fd.get(), SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
            }
            conn.fd.Reset();
          } else if (::send(conn.fd.get(), kResponse.data(), kResponse.size(), MSG_NOSIGNAL) !=
                     static_cast<ssize_t>(kResponse.size())) {
            conn.fd.Reset();
          }
        }
      }
      std::erase_if(conns, [](const Conn& conn) { return !conn.fd.valid(); });
      if (fds[0].revents != 0) {
        int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) conns.push_back(Conn{UniqueFd(fd), accepted++, 0, ""});
      }
    }
  }

  const CloseRule* Rule(const Conn& conn) const {
    for (const CloseRule& rule : rules_) {
      if (rule.conn == conn.index && rule.request == conn.requests) return &rule;
    }
    return nullptr;
  }

  std::vector<CloseRule> rules_;
  UniqueFd listener_;
  int port_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct RetryCase {
  const char* name;
  std::vector<CloseRule> rules;
  int64_t retries;
  int64_t failures;
  const char* failure_kind;  // nullptr: none
};

class RetryRuleTest : public ::testing::TestWithParam<RetryCase> {};

TEST_P(RetryRuleTest, CountsRetriesAndFailures) {
  const RetryCase& test = GetParam();
  ScriptedServer server(test.rules);
  ASSERT_GT(server.port(), 0);
  TempDir dir;
  std::string events = dir.File("events.jsonl");
  Summary summary;
  RunClient(dir, server.port(),
            {"--connections", "1", "--prober-interval-ms", "0", "--duration-ms", "300",
             "--failure-backoff-ms", "0", "--events", events},
            &summary);
  SCOPED_TRACE(summary.text());
  EXPECT_GT(summary.Get("/requests"), 10);
  EXPECT_EQ(summary.Get("/retries"), test.retries);
  EXPECT_EQ(summary.Get("/failures"), test.failures);
  if (test.failure_kind != nullptr) {
    EXPECT_EQ(summary.Get((std::string("/failures_by_kind/") + test.failure_kind).c_str()),
              test.failures);
  }
  EXPECT_EQ(summary.Get("/by_pid/4242"), summary.Get("/requests"));

  std::vector<std::string> lines = Lines(ReadFile(events));
  ASSERT_EQ(static_cast<int64_t>(lines.size()), test.retries + test.failures);
  for (const std::string& line : lines) {
    Summary event;
    ASSERT_TRUE(event.Parse(line)) << line;
    EXPECT_EQ(event.Get("/conn"), 0) << line;
    // A retry names the worker of the connection's last response; these failures all happen on
    // new connections, which have none.
    bool retry = line.find("\"kind\":\"retry\"") != std::string::npos;
    EXPECT_EQ(event.Get("/pid"), retry ? 4242 : 0) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(
    E2eToolsTest, RetryRuleTest,
    ::testing::Values(
        // A reused keep-alive connection closed unanswered: resent once, not a failure.
        RetryCase{"ReusedClosed", {{0, 2}}, 1, 0, nullptr},
        RetryCase{"ReusedReset", {{0, 2, true}}, 1, 0, nullptr},
        // A new connection closed unanswered: the request may have been processed; a failure.
        RetryCase{"FreshClosed", {{0, 1}}, 0, 1, "eof"},
        RetryCase{"FreshReset", {{0, 1, true}}, 0, 1, "reset"},
        // The resent request fails too: one retry, one failure.
        RetryCase{"RetryFailsAgain", {{0, 2}, {1, 1}}, 1, 1, "eof"}),
    [](const ::testing::TestParamInfo<RetryCase>& param) { return param.param.name; });

}  // namespace
}  // namespace hawk::testing

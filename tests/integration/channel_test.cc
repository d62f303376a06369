// The controller channel: who may reach hawk's API over TCP (--token-file), through the real
// binary and real sockets. No HAProxy is needed: the API answers without a reachable master.

#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/http_client.h"
#include "tests/support/socket_util.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

constexpr std::chrono::milliseconds kTimeout{5000};

HttpResult GetWithToken(const std::string& address, const std::string& target,
                        const std::string& authorization) {
  std::string error;
  std::unique_ptr<HttpConnection> connection = HttpConnection::Connect(address, kTimeout, &error);
  if (connection == nullptr) {
    HttpResult failed;
    failed.error = error;
    return failed;
  }
  HttpRequest request = HttpRequest::Get(target);
  if (!authorization.empty()) request.AddHeader("Authorization", authorization);
  request.AddHeader("Connection", "close");
  return connection->RoundTrip(request);
}

// Sends `bytes` on a new connection to `address` and returns what the server sent until it
// closed the connection or `wait` passed (`*closed` says which).
std::string RawExchange(const std::string& address, const std::string& bytes,
                        std::chrono::milliseconds wait, bool* closed) {
  std::string error;
  *closed = false;
  UniqueFd fd = ConnectAddress(address, Clock::now() + kTimeout, &error);
  if (!fd.valid()) return "connect failed: " + error;
  if (!WriteAll(fd.get(), bytes, Clock::now() + kTimeout, &error)) return "write failed: " + error;
  std::string received;
  Clock::time_point deadline = Clock::now() + wait;
  char buffer[4096];
  while (true) {
    ssize_t n = ReadSome(fd.get(), buffer, sizeof(buffer), deadline, &error);
    if (n <= 0) {
      *closed = n == 0 || error != "timeout";
      return received;
    }
    received.append(buffer, static_cast<size_t>(n));
  }
}

// A request as a browser page sends it, with these extra header lines.
std::string Request(const std::string& method, const std::string& target, const std::string& host,
                    const std::string& headers, const std::string& body = "") {
  return absl::StrCat(
      method, " ", target, " HTTP/1.1\r\nHost: ", host, "\r\n", headers,
      body.empty() && method == "GET" ? "" : absl::StrCat("Content-Length: ", body.size(), "\r\n"),
      "Connection: close\r\n\r\n", body);
}

int StatusOf(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

struct CurlResult {
  int exit_code = -1;
  std::string output;  // the body, then the status code (-w), then curl's errors
};

// The real curl against hawk's TCP listener over TLS, trusting the test CA.
CurlResult Curl(const TempDir& dir, int port, std::vector<std::string> extra) {
  SubprocessOptions options;
  options.argv = {"curl", "-sS",           "--max-time",
                  "10",   "--cacert",      Pki::Get().File("hawk-ca.pem"),
                  "-w",   "\n%{http_code}"};
  for (std::string& arg : extra) options.argv.push_back(std::move(arg));
  options.argv.push_back(absl::StrCat("https://127.0.0.1:", port, "/v1/workers"));
  options.stdout_path = dir.File("curl.out");
  options.stderr_path = options.stdout_path;
  CurlResult result;
  std::unique_ptr<Subprocess> curl = Subprocess::Spawn(options, &result.output);
  if (curl == nullptr) return result;
  if (curl->WaitExit(std::chrono::seconds(15))) result.exit_code = curl->exit_code();
  result.output = ReadFile(options.stdout_path);
  return result;
}

TEST(ChannelTest, ANonLoopbackListenerNeedsAToken) {
  TempDir dir;
  std::string listen = absl::StrCat("tcp:0.0.0.0:", FreeTcpPort());
  RunResult run = RunHawk(dir, {"--master-socket", dir.File("master.sock"), "--listen", listen});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("--listen " + listen + ": a non-loopback address"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("--token-file"), std::string::npos) << run.output;

  RunResult missing = RunHawk(dir, {"--master-socket", dir.File("master.sock"), "--listen", listen,
                                    "--token-file", dir.File("absent"), "--allow-plaintext-token"});
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("--token-file " + dir.File("absent") + ": cannot read it"),
            std::string::npos)
      << missing.output;
}

TEST(ChannelTest, TheTcpApiNeedsTheTokenAndFollowsItsRotation) {
  TempDir dir;
  ASSERT_TRUE(WriteFile(dir.File("token"), "first-token-7f3a\n"));
  int port = FreeTcpPort();
  std::string tcp = absl::StrCat("tcp:0.0.0.0:", port);
  std::string local = absl::StrCat("tcp:127.0.0.1:", port);
  HawkProcess hawk(dir, dir.File("master.sock"),
                   {"--listen", tcp, "--token-file", dir.File("token"), "--allow-plaintext-token"});
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();

  HttpResult anonymous = GetWithToken(local, "/v1/workers", "");
  ASSERT_TRUE(anonymous.ok) << anonymous.error;
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.Header("WWW-Authenticate"), "Bearer realm=\"hawk\"");
  EXPECT_NE(anonymous.body.find("UNAUTHENTICATED"), std::string::npos) << anonymous.body;
  HttpResult wrong = GetWithToken(local, "/v1/workers", "Bearer first-token-7f3b");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.Header("WWW-Authenticate"), "Bearer realm=\"hawk\", error=\"invalid_token\"");
  EXPECT_EQ(GetWithToken(local, "/v1/workers", "Basic Zmlyc3QtdG9rZW4tN2YzYQ==").status, 401);
  HttpResult right = GetWithToken(local, "/v1/workers", "Bearer first-token-7f3a");
  EXPECT_EQ(right.status, 200) << right.body;
  // Every endpoint is behind the gate, writes included.
  EXPECT_EQ(Fetch(local, "PUT", "/v1/state", "{}").status, 401);

  // The unix socket (mode 0600) and the probes need no token; the probes serve no API.
  EXPECT_EQ(hawk.Get("/v1/workers").status, 200);
  EXPECT_EQ(Fetch(hawk.probe_address(), "GET", "/healthz").status, 200);
  EXPECT_EQ(Fetch(hawk.probe_address(), "GET", "/metrics").status, 200);
  EXPECT_EQ(Fetch(hawk.probe_address(), "GET", "/v1/workers").status, 404);

  // A rotated Secret: the next request sees the new token, without a restart.
  ASSERT_TRUE(WriteFile(dir.File("token"), "second-token-91c2"));
  EXPECT_EQ(GetWithToken(local, "/v1/workers", "Bearer first-token-7f3a").status, 401);
  EXPECT_EQ(GetWithToken(local, "/v1/workers", "Bearer second-token-91c2").status, 200);
  // A broken rotation keeps the token in force.
  ASSERT_TRUE(WriteFile(dir.File("token"), ""));
  EXPECT_EQ(GetWithToken(local, "/v1/workers", "Bearer second-token-91c2").status, 200);

  // `hawk status` over TCP: with the token file it shows the report; without, hawk's answer.
  ASSERT_TRUE(WriteFile(dir.File("status-token"), "second-token-91c2\n"));
  RunResult status = RunHawk(dir, {"status", "--token-file", dir.File("status-token"), local});
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("master"), std::string::npos) << status.output;
  RunResult refused = RunHawk(dir, {"status", local});
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("401"), std::string::npos) << refused.output;

  // The token is a secret: never in hawk's log. The log says it travels in cleartext.
  std::string log = hawk.LogTail();
  EXPECT_NE(log.find("bearer token"), std::string::npos) << log;
  EXPECT_NE(log.find("cleartext"), std::string::npos) << log;
  for (const char* secret : {"first-token-7f3a", "second-token-91c2", "first-token-7f3b"}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << secret << " in:\n" << log;
  }
}

TEST(ChannelTest, MutualTlsLetsInOnlyClientsWithACertificateOfTheClientCa) {
  const Pki& pki = Pki::Get();
  ASSERT_TRUE(pki.error().empty()) << pki.error();
  TempDir dir;
  // TLS without client certificates authenticates nobody: not enough for a public address.
  std::string listen = absl::StrCat("tcp:0.0.0.0:", FreeTcpPort());
  RunResult plain_tls =
      RunHawk(dir, {"--master-socket", dir.File("master.sock"), "--listen", listen, "--tls-cert",
                    pki.File("hawk-a.pem"), "--tls-key", pki.File("hawk-a.key")});
  EXPECT_EQ(plain_tls.exit_code, 2) << plain_tls.output;
  EXPECT_NE(plain_tls.output.find("needs authentication"), std::string::npos) << plain_tls.output;
  RunResult mismatch =
      RunHawk(dir, {"--master-socket", dir.File("master.sock"), "--listen", listen, "--tls-cert",
                    pki.File("hawk-a.pem"), "--tls-key", pki.File("hawk-b.key"), "--tls-client-ca",
                    pki.File("hawk-ca.pem")});
  EXPECT_EQ(mismatch.exit_code, 1) << mismatch.output;
  EXPECT_NE(mismatch.output.find("do not match"), std::string::npos) << mismatch.output;

  int port = FreeTcpPort();
  ASSERT_TRUE(WriteFile(dir.File("token"), "tls-token-55aa"));
  HawkProcess hawk(dir, dir.File("master.sock"),
                   {"--listen", absl::StrCat("tcp:0.0.0.0:", port), "--tls-cert",
                    pki.File("hawk-a.pem"), "--tls-key", pki.File("hawk-a.key"), "--tls-client-ca",
                    pki.File("hawk-ca.pem"), "--token-file", dir.File("token")});
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();

  std::vector<std::string> controller = {"--cert", pki.File("controller.pem"), "--key",
                                         pki.File("controller.key")};
  std::vector<std::string> with_token = controller;
  with_token.insert(with_token.end(), {"-H", "Authorization: Bearer tls-token-55aa"});
  CurlResult ok = Curl(dir, port, with_token);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(absl::EndsWith(ok.output, "\n200")) << ok.output;
  EXPECT_NE(ok.output.find("\"workers\""), std::string::npos) << ok.output;
  // Both credentials are required when both are configured.
  CurlResult certificate_only = Curl(dir, port, controller);
  EXPECT_TRUE(absl::EndsWith(certificate_only.output, "\n401")) << certificate_only.output;
  // No client certificate, or one of another CA: the handshake fails, HTTP is never reached.
  CurlResult anonymous = Curl(dir, port, {"-H", "Authorization: Bearer tls-token-55aa"});
  EXPECT_NE(anonymous.exit_code, 0) << anonymous.output;
  EXPECT_FALSE(absl::EndsWith(anonymous.output, "\n401")) << anonymous.output;
  CurlResult rogue = Curl(dir, port,
                          {"--cert", pki.File("rogue.pem"), "--key", pki.File("rogue.key"), "-H",
                           "Authorization: Bearer tls-token-55aa"});
  EXPECT_NE(rogue.exit_code, 0) << rogue.output;
  // A client that trusts another CA does not trust hawk either.
  CurlResult untrusted = Curl(dir, port, {"--cacert", pki.File("rogue-ca.pem")});
  EXPECT_NE(untrusted.exit_code, 0) << untrusted.output;
  // The unix socket stays plain HTTP.
  EXPECT_EQ(hawk.Get("/v1/workers").status, 200);
}

TEST(ChannelTest, ATokenOnANonLoopbackListenerNeedsTlsOrAFlagThatNamesTheRisk) {
  const Pki& pki = Pki::Get();
  ASSERT_TRUE(pki.error().empty()) << pki.error();
  TempDir dir;
  ASSERT_TRUE(WriteFile(dir.File("token"), "plain-token-3c9d"));
  std::string listen = absl::StrCat("tcp:0.0.0.0:", FreeTcpPort());
  RunResult plaintext = RunHawk(dir,
                                {"--master-socket", dir.File("master.sock"), "--listen", listen,
                                 "--token-file", dir.File("token")},
                                std::chrono::seconds(3));
  EXPECT_EQ(plaintext.exit_code, 2) << plaintext.output;
  EXPECT_NE(plaintext.output.find("--listen " + listen), std::string::npos) << plaintext.output;
  EXPECT_NE(plaintext.output.find("cleartext"), std::string::npos) << plaintext.output;
  EXPECT_NE(plaintext.output.find("--tls-cert"), std::string::npos) << plaintext.output;
  EXPECT_NE(plaintext.output.find("--allow-plaintext-token"), std::string::npos)
      << plaintext.output;

  // TLS carries the token: no flag needed. Nor on loopback, where it never leaves the host.
  HawkProcess tls(dir, dir.File("master.sock"),
                  {"--listen", listen, "--token-file", dir.File("token"), "--tls-cert",
                   pki.File("hawk-a.pem"), "--tls-key", pki.File("hawk-a.key")});
  ASSERT_TRUE(tls.ok()) << tls.error();
  EXPECT_TRUE(tls.WaitServing()) << tls.LogTail();
  TempDir local_dir;
  HawkProcess local(local_dir, local_dir.File("master.sock"),
                    {"--listen", absl::StrCat("tcp:127.0.0.1:", FreeTcpPort()), "--token-file",
                     dir.File("token")});
  ASSERT_TRUE(local.ok()) << local.error();
  EXPECT_TRUE(local.WaitServing()) << local.LogTail();
}

TEST(ChannelTest, AnUnauthenticatedRequestIsAnsweredAtItsHeadersAndItsBodyNeverRead) {
  TempDir dir;
  ASSERT_TRUE(WriteFile(dir.File("token"), "head-token-81e0"));
  std::string local = absl::StrCat("tcp:127.0.0.1:", FreeTcpPort());
  HawkProcess hawk(dir, dir.File("master.sock"),
                   {"--listen", local, "--token-file", dir.File("token")});
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();

  // A 32 MiB PUT that asks for `100 Continue`: no Continue, a 401 at once, the connection closed.
  bool closed = false;
  std::string continued =
      RawExchange(local,
                  "PUT /v1/state HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  "Content-Length: 33554432\r\nExpect: 100-continue\r\n\r\n",
                  std::chrono::seconds(2), &closed);
  EXPECT_EQ(StatusOf(continued), 401) << continued;
  EXPECT_EQ(continued.find("100 Continue"), std::string::npos) << continued;
  EXPECT_TRUE(closed) << continued;
  // A body announced and not sent: answered without waiting for it.
  std::string waiting =
      RawExchange(local,
                  "PUT /v1/state HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  "Content-Length: 1000000\r\n\r\n{\"version\"",
                  std::chrono::seconds(2), &closed);
  EXPECT_EQ(StatusOf(waiting), 401) << waiting;
  // A body over the API's limit is refused for want of the token, not for its size: an
  // unauthenticated client learns nothing and nothing is read.
  std::string huge = RawExchange(local,
                                 "PUT /v1/state HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 "Content-Type: application/json\r\n"
                                 "Content-Length: 100000000000\r\n\r\n",
                                 std::chrono::seconds(2), &closed);
  EXPECT_EQ(StatusOf(huge), 401) << huge;
  // The controller's PUT goes through.
  std::string body = R"({"version":"v1"})";
  std::string controller = RawExchange(
      local,
      Request("PUT", "/v1/state", "127.0.0.1",
              "Authorization: Bearer head-token-81e0\r\nContent-Type: application/json\r\n", body),
      std::chrono::seconds(5), &closed);
  EXPECT_EQ(StatusOf(controller), 200) << controller;
}

TEST(ChannelTest, ABrowserPageCannotDriveOrReadALoopbackListener) {
  TempDir dir;
  std::string config = "global\n    master-worker\n";
  ASSERT_TRUE(WriteFile(dir.File("haproxy.cfg"), config));
  int port = FreeTcpPort();
  std::string local = absl::StrCat("tcp:127.0.0.1:", port);
  std::string host = absl::StrCat("127.0.0.1:", port);
  HawkProcess hawk(dir, dir.File("master.sock"),
                   {"--listen", local, "--haproxy-config", dir.File("haproxy.cfg")});
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  bool closed = false;
  auto status = [&](const std::string& address, const std::string& request) {
    return StatusOf(RawExchange(address, request, std::chrono::seconds(5), &closed));
  };
  std::string reload_body = R"({"config":"global\n    log stdout local0\n"})";
  std::string state_body = R"({"version":"v1"})";

  // A simple cross-origin POST (no preflight: text/plain) that would rewrite haproxy.cfg.
  EXPECT_EQ(status(local, Request("POST", "/v1/reload", host,
                                  "Origin: http://evil.example\r\nContent-Type: text/plain\r\n",
                                  reload_body)),
            403);
  EXPECT_EQ(ReadFile(dir.File("haproxy.cfg")), config);
  // Any Origin is refused unless allowed, whatever the content type; so is a body that is not
  // JSON (a form, text/plain, or none named: what a page may send without a preflight).
  EXPECT_EQ(status(local, Request("PUT", "/v1/state", host,
                                  "Origin: http://evil.example\r\n"
                                  "Content-Type: application/json\r\n",
                                  state_body)),
            403);
  EXPECT_EQ(
      status(local, Request("PUT", "/v1/state", host, "Content-Type: text/plain\r\n", state_body)),
      415);
  EXPECT_EQ(
      status(local, Request("PUT", "/v1/state", host,
                            "Content-Type: application/x-www-form-urlencoded\r\n", state_body)),
      415);
  EXPECT_EQ(status(local, Request("PUT", "/v1/state", host, "", state_body)), 415);
  EXPECT_EQ(ReadFile(dir.File("haproxy.cfg")), config);
  // DNS rebinding: a name that now resolves here is not a name hawk answers to.
  EXPECT_EQ(status(local, Request("GET", "/v1/state", absl::StrCat("evil.example:", port), "")),
            403);
  EXPECT_EQ(status(local, Request("GET", "/v1/state", "rebind.evil.example", "")), 403);
  // IP literals and localhost are what local clients send.
  EXPECT_EQ(status(local, Request("GET", "/v1/workers", host, "")), 200);
  EXPECT_EQ(status(local, Request("GET", "/v1/workers", absl::StrCat("localhost:", port), "")),
            200);
  EXPECT_EQ(status(local, Request("GET", "/v1/workers", absl::StrCat("[::1]:", port), "")), 200);
  // A controller: JSON, no Origin.
  EXPECT_EQ(status(local, Request("PUT", "/v1/state", host,
                                  "Content-Type: application/json; charset=utf-8\r\n", state_body)),
            200);
  // The unix socket: no DNS to rebind, so any Host; Origin and the content type as on TCP.
  EXPECT_EQ(status(hawk.api_address(), Request("GET", "/v1/workers", "hawk", "")), 200);
  EXPECT_EQ(status(hawk.api_address(),
                   Request("GET", "/v1/workers", "hawk", "Origin: http://evil.example\r\n")),
            403);
  EXPECT_EQ(status(hawk.api_address(),
                   Request("PUT", "/v1/state", "hawk", "Content-Type: text/plain\r\n", state_body)),
            415);

  // What the operator allows.
  TempDir allowed_dir;
  int allowed_port = FreeTcpPort();
  std::string allowed = absl::StrCat("tcp:127.0.0.1:", allowed_port);
  HawkProcess operator_choice(allowed_dir, allowed_dir.File("master.sock"),
                              {"--listen", allowed, "--allowed-origin", "https://console.example",
                               "--allowed-host", "hawk.internal"});
  ASSERT_TRUE(operator_choice.ok()) << operator_choice.error();
  ASSERT_TRUE(operator_choice.WaitServing()) << operator_choice.LogTail();
  EXPECT_EQ(
      status(allowed, Request("GET", "/v1/workers", absl::StrCat("hawk.internal:", allowed_port),
                              "Origin: https://console.example\r\n")),
      200);
  EXPECT_EQ(status(allowed, Request("GET", "/v1/workers", "HAWK.internal", "")), 200);
  EXPECT_EQ(status(allowed, Request("GET", "/v1/workers", "127.0.0.1",
                                    "Origin: https://console.example:8443\r\n")),
            403);
  RunResult bad_origin = RunHawk(dir, {"--master-socket", dir.File("master.sock"), "--listen",
                                       local, "--allowed-origin", "https://console.example/path"});
  EXPECT_EQ(bad_origin.exit_code, 2) << bad_origin.output;
  EXPECT_NE(bad_origin.output.find("--allowed-origin"), std::string::npos) << bad_origin.output;
}

TEST(ChannelTest, TheProbesReadinessSaysNoMoreThanAReasonCode) {
  TempDir dir;
  HawkProcess hawk(dir, dir.File("master.sock"));
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  HttpResult probe = Fetch(hawk.probe_address(), "GET", "/readyz");
  EXPECT_EQ(probe.status, 503);
  EXPECT_NE(probe.body.find("MASTER_UNREACHABLE"), std::string::npos) << probe.body;
  EXPECT_EQ(probe.body.find(dir.path()), std::string::npos) << probe.body;
  EXPECT_EQ(probe.body.find("master.sock"), std::string::npos) << probe.body;
  EXPECT_EQ(probe.body.find("master CLI"), std::string::npos) << probe.body;
  // The API keeps the detail.
  HttpResult api = hawk.Get("/readyz");
  EXPECT_EQ(api.status, 503);
  EXPECT_NE(api.body.find("master CLI"), std::string::npos) << api.body;
}

TEST(ChannelTest, MutualTlsAdmitsOnlyTheClientIdentitiesAllowed) {
  const Pki& pki = Pki::Get();
  ASSERT_TRUE(pki.error().empty()) << pki.error();
  TempDir dir;
  std::vector<std::string> tls = {"--tls-cert",      pki.File("hawk-a.pem"),
                                  "--tls-key",       pki.File("hawk-a.key"),
                                  "--tls-client-ca", pki.File("hawk-ca.pem")};
  RunResult without_ca =
      RunHawk(dir, {"--master-socket", dir.File("master.sock"), "--listen", "unix:" + dir.File("x"),
                    "--tls-client-allow", "controller.hawk.test"});
  EXPECT_EQ(without_ca.exit_code, 2) << without_ca.output;
  EXPECT_NE(without_ca.output.find("--tls-client-ca"), std::string::npos) << without_ca.output;

  int port = FreeTcpPort();
  std::vector<std::string> args = {"--listen", absl::StrCat("tcp:0.0.0.0:", port),
                                   "--tls-client-allow", "controller.hawk.test"};
  args.insert(args.end(), tls.begin(), tls.end());
  HawkProcess hawk(dir, dir.File("master.sock"), args);
  ASSERT_TRUE(hawk.ok()) << hawk.error();
  ASSERT_TRUE(hawk.WaitServing()) << hawk.LogTail();
  CurlResult controller =
      Curl(dir, port, {"--cert", pki.File("controller.pem"), "--key", pki.File("controller.key")});
  EXPECT_TRUE(absl::EndsWith(controller.output, "\n200")) << controller.output;
  // Signed by the same CA, but not a name hawk was told to let in.
  CurlResult stranger =
      Curl(dir, port, {"--cert", pki.File("stranger.pem"), "--key", pki.File("stranger.key")});
  EXPECT_NE(stranger.exit_code, 0) << stranger.output;
  EXPECT_FALSE(absl::EndsWith(stranger.output, "\n200")) << stranger.output;
  // hawk logs the refusal while it handles the failed handshake, which curl may have given up on
  // first: wait for the line rather than read the log once.
  EXPECT_TRUE(WaitUntil(
      [&] { return hawk.LogTail().find("stranger.hawk.test") != std::string::npos; }, kTimeout))
      << hawk.LogTail();
  std::string log = hawk.LogTail();
  EXPECT_NE(log.find("--tls-client-allow"), std::string::npos) << log;

  // A URI SAN (a SPIFFE ID) works the same way.
  TempDir uri_dir;
  int uri_port = FreeTcpPort();
  std::vector<std::string> uri_args = {"--listen", absl::StrCat("tcp:0.0.0.0:", uri_port),
                                       "--tls-client-allow", "spiffe://hawk.test/controller"};
  uri_args.insert(uri_args.end(), tls.begin(), tls.end());
  HawkProcess by_uri(uri_dir, uri_dir.File("master.sock"), uri_args);
  ASSERT_TRUE(by_uri.ok()) << by_uri.error();
  ASSERT_TRUE(by_uri.WaitServing()) << by_uri.LogTail();
  EXPECT_TRUE(absl::EndsWith(
      Curl(uri_dir, uri_port,
           {"--cert", pki.File("controller.pem"), "--key", pki.File("controller.key")})
          .output,
      "\n200"));
  EXPECT_NE(Curl(uri_dir, uri_port,
                 {"--cert", pki.File("stranger.pem"), "--key", pki.File("stranger.key")})
                .exit_code,
            0);
}

}  // namespace
}  // namespace hawk::testing

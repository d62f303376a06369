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
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"

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
                                    "--token-file", dir.File("absent")});
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
                   {"--listen", tcp, "--token-file", dir.File("token")});
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

  // The token is a secret: never in hawk's log.
  std::string log = hawk.LogTail();
  EXPECT_NE(log.find("bearer token"), std::string::npos) << log;
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

}  // namespace
}  // namespace hawk::testing

// http::Server over TLS 1.3 with client certificates, on a real loop on 127.0.0.1. The clients
// are the real `curl` (run as a subprocess while the test's loop serves) and, for the hostile
// ones, plain uv::Streams on the same loop. Certificates come from the `openssl` command line,
// made once per test binary in a temp dir: a CA, two server certificates it signed (CN hawk-a
// and hawk-b, for 127.0.0.1 and localhost), a client certificate it signed, and a second,
// unrelated CA with a client certificate of its own. The server's files sit behind symlinks laid
// out as kubelet mounts a Secret (tls.crt → ..data/tls.crt, ..data → ..<timestamp>), so rotation
// is kubelet's: a new directory, then an atomic rename of the ..data symlink.

#include "agent/http/server.h"

#include <malloc.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "agent/tls/server_context.h"
#include "agent/tls/server_stream.h"
#include "agent/uv/listener.h"
#include "agent/uv/loop.h"
#include "agent/uv/stream.h"
#include "agent/uv/timer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/run_loop_until.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"

namespace hawk::http {
namespace {

using hawk::testing::Pki;
using hawk::testing::ReadFile;
using hawk::testing::Subprocess;
using hawk::testing::SubprocessOptions;
using hawk::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

// A Secret volume as kubelet lays it out: ..<version>/{tls.crt,tls.key,ca.crt}, ..data → the
// current version, and each file a symlink through ..data.
class SecretVolume {
 public:
  explicit SecretVolume(const TempDir& dir) : path_(dir.File("secret")) {
    mkdir(path_.c_str(), 0700);
    for (const char* name : {"tls.crt", "tls.key", "ca.crt"}) {
      EXPECT_EQ(symlink((std::string("..data/") + name).c_str(), File(name).c_str()), 0);
    }
  }

  // Publishes a new version, atomically: a new directory, then rename(2) of ..data.
  void Publish(const std::string& cert_pem, const std::string& key_pem) {
    std::string version = absl::StrCat("..v", ++versions_);
    std::string dir = File(version);
    ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
    std::ofstream(dir + "/tls.crt") << cert_pem;
    std::ofstream(dir + "/tls.key") << key_pem;
    std::ofstream(dir + "/ca.crt") << ReadFile(Pki::Get().File("hawk-ca.pem"));
    std::string staging = File("..data_tmp");
    ASSERT_EQ(symlink(version.c_str(), staging.c_str()), 0);
    ASSERT_EQ(rename(staging.c_str(), File("..data").c_str()), 0);
  }
  void Publish(const std::string& server) {
    const Pki& pki = Pki::Get();
    Publish(ReadFile(pki.File(server + ".pem")), ReadFile(pki.File(server + ".key")));
  }

  tls::ServerFiles Files() const { return {File("tls.crt"), File("tls.key"), File("ca.crt")}; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  int versions_ = 0;
};

// The subject of the certificate a new session would present: "CN = hawk-a".
std::string SessionSubject(tls::ServerContext& context) {
  tls::SslPtr ssl = context.NewSession(0);
  if (ssl == nullptr) return "(no session)";
  X509* cert = SSL_get_certificate(ssl.get());
  if (cert == nullptr) return "(no certificate)";
  char buffer[256];
  X509_NAME_oneline(X509_get_subject_name(cert), buffer, sizeof(buffer));
  return buffer;
}

struct CurlResult {
  int exit_code = -1;
  std::string out;  // the body, then the status code (-w)
  std::string err;  // -v output and errors
};

// RSS of this process in bytes, once malloc has returned its free pages to the kernel: without
// the trim, RSS after a burst of 1,000 connections swings by ±15 MB with where glibc's free
// chunks happen to lie, which would hide (or fake) a leak.
size_t ResidentBytes() {
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// A client that never completes a handshake: it sends `payload` and reads until the server closes.
class RawClient {
 public:
  RawClient(uv_loop_t* loop, const base::Address& address, std::string payload)
      : stream_(std::make_unique<uv::Stream>(loop, address.kind)) {
    absl::Status status = stream_->Connect(address, [this, payload = std::move(payload)](
                                                        absl::Status connected) {
      connected_ = true;
      if (!connected.ok()) {
        ended_ = true;
        return;
      }
      EXPECT_TRUE(
          stream_->StartReading([](absl::string_view) {}, [this](absl::Status) { ended_ = true; })
              .ok());
      EXPECT_TRUE(stream_->Write(payload).ok());
    });
    EXPECT_TRUE(status.ok()) << status;
  }
  bool connected() const { return connected_; }
  bool ended() const { return ended_; }

 private:
  std::unique_ptr<uv::Stream> stream_;
  bool connected_ = false;
  bool ended_ = false;
};

// The start of a ClientHello whose record announces 512 bytes: the server waits for the rest.
std::string PartialClientHello() {
  std::string hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  hello.append(32, '\x5a');
  return hello;
}

class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Pki::Get().error().empty()) << Pki::Get().error();
    secret_ = std::make_unique<SecretVolume>(dir_);
    secret_->Publish("hawk-a");
  }

  void TearDown() override {
    server_.reset();
    EXPECT_TRUE(loop_.RunDryAndClose().ok());
  }

  // A context that re-checks its files on every connection (production: once a second).
  std::shared_ptr<tls::ServerContext> Context() {
    auto context = tls::ServerContext::Create(secret_->Files(), absl::ZeroDuration());
    EXPECT_TRUE(context.ok()) << context.status();
    return context.ok() ? std::shared_ptr<tls::ServerContext>(*std::move(context)) : nullptr;
  }

  // Without a handler: one that answers "hello <path>".
  void StartServer(ServerOptions options = {}, Handler handler = nullptr) {
    if (options.tls == nullptr) options.tls = Context();
    context_ = options.tls;
    if (!handler) {
      handler = [this](const Request& request, Responder responder) {
        ++handled_;
        Response response;
        response.content_type = "text/plain";
        response.body = absl::StrCat("hello ", request.path);
        responder.Send(std::move(response));
      };
    }
    auto server =
        Server::Create(loop_.get(), base::Address{base::Address::Kind::kTcp, "", "127.0.0.1", 0},
                       std::move(options), std::move(handler));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  bool RunUntil(const std::function<bool()>& done, uint64_t timeout_ms = 5000) {
    return hawk::testing::RunLoopUntil(loop_.get(), done, timeout_ms);
  }

  std::string Url(absl::string_view path = "/hello") const {
    return absl::StrCat("https://127.0.0.1:", server_->address().port, path);
  }

  // curl with the test CA as its trust anchor and the controller's certificate, then `extra`;
  // the loop serves while it runs. If `enough` turns true first, curl is stopped.
  CurlResult Curl(std::vector<std::string> extra, bool client_cert = true,
                  const std::function<bool()>& enough = nullptr) {
    const Pki& pki = Pki::Get();
    std::vector<std::string> argv = {"curl",       "-sS",
                                     "--noproxy",  "*",
                                     "--max-time", "10",
                                     "--cacert",   pki.File("hawk-ca.pem"),
                                     "-w",         "\n%{http_code}"};
    if (client_cert) {
      for (const std::string& arg : {std::string("--cert"), pki.File("controller.pem"),
                                     std::string("--key"), pki.File("controller.key")}) {
        argv.push_back(arg);
      }
    }
    for (std::string& arg : extra) argv.push_back(std::move(arg));
    int n = ++curls_;
    SubprocessOptions options;
    options.argv = argv;
    options.stdout_path = dir_.File(absl::StrCat("curl-", n, ".out"));
    options.stderr_path = dir_.File(absl::StrCat("curl-", n, ".err"));
    std::string error;
    std::unique_ptr<Subprocess> process = Subprocess::Spawn(options, &error);
    CurlResult result;
    if (process == nullptr) {
      ADD_FAILURE() << error;
      return result;
    }
    // curl's exit raises no event on the loop: a ticking timer lets the poll see it.
    uv::Timer tick(loop_.get());
    tick.StartRepeating(absl::Milliseconds(5), absl::Milliseconds(5), [] {});
    EXPECT_TRUE(RunUntil([&] { return (enough && enough()) || !process->Running(); }, 15000))
        << "curl still running";
    process->Stop();
    tick.Stop();
    result.exit_code = process->exit_code();
    result.out = ReadFile(options.stdout_path);
    result.err = ReadFile(options.stderr_path);
    return result;
  }

  bool WaitForNoConnections() {
    return RunUntil([&] { return server_->connection_count() == 0; });
  }

  TempDir dir_;
  std::unique_ptr<SecretVolume> secret_;
  uv::Loop loop_;
  std::shared_ptr<tls::ServerContext> context_;
  std::unique_ptr<Server> server_;
  int handled_ = 0;
  int curls_ = 0;
};

TEST_F(TlsServerTest, AClientWithAValidCertificateIsServed) {
  StartServer();
  CurlResult r = Curl({Url()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello /hello\n200");
  EXPECT_EQ(handled_, 1);

  // Keep-alive: two requests on one connection.
  CurlResult two = Curl({"-v", Url("/a"), Url("/b")});
  EXPECT_EQ(two.out, "hello /a\n200hello /b\n200") << two.err;
  EXPECT_THAT(two.err, HasSubstr("Re-using existing connection"));
  // Connection: close ends with close_notify and a half-close; curl takes that as a clean end.
  CurlResult closing = Curl({"-H", "Connection: close", Url("/c")});
  EXPECT_EQ(closing.exit_code, 0) << closing.err;
  EXPECT_EQ(closing.out, "hello /c\n200");
  EXPECT_EQ(handled_, 4);
  EXPECT_TRUE(WaitForNoConnections());
  EXPECT_EQ(tls::LiveSessions(), 0u);
}

struct RejectedCase {
  std::string name;
  bool client_cert;
  std::vector<std::string> extra;
  std::string reason;  // in curl's error
};

TEST_F(TlsServerTest, ClientsWithoutAValidCertificateOrTls13NeverReachHttp) {
  StartServer();
  const Pki& pki = Pki::Get();
  std::vector<RejectedCase> cases = {
      {"NoClientCertificate", false, {}, "certificate required"},
      {"CertificateOfAnotherCa",
       false,
       {"--cert", pki.File("rogue.pem"), "--key", pki.File("rogue.key")},
       "unknown ca"},
      {"Tls12", true, {"--tlsv1.2", "--tls-max", "1.2"}, "protocol version"},
  };
  for (RejectedCase& c : cases) {
    SCOPED_TRACE(c.name);
    c.extra.push_back(Url());
    CurlResult r = Curl(c.extra, c.client_cert);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.err, HasSubstr(c.reason));
    EXPECT_THAT(r.out, Not(HasSubstr("hello")));
    EXPECT_TRUE(WaitForNoConnections());
  }
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(tls::LiveSessions(), 0u);
}

TEST_F(TlsServerTest, ARotatedCertificateServesTheNextConnection) {
  StartServer();
  CurlResult before = Curl({"-v", Url()});
  EXPECT_EQ(before.exit_code, 0) << before.err;
  EXPECT_THAT(before.err, HasSubstr("subject: CN=hawk-a"));

  secret_->Publish("hawk-b");
  CurlResult after = Curl({"-v", Url()});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_THAT(after.err, HasSubstr("subject: CN=hawk-b"));
  EXPECT_EQ(after.out, "hello /hello\n200");
  EXPECT_EQ(context_->generation(), 2u);
}

TEST_F(TlsServerTest, ARotationThatDoesNotLoadKeepsThePreviousCertificate) {
  std::shared_ptr<tls::ServerContext> context = Context();
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(SessionSubject(*context), "/CN=hawk-a");

  // hawk-b's certificate with hawk-a's key: the pair does not match.
  const Pki& pki = Pki::Get();
  secret_->Publish(ReadFile(pki.File("hawk-b.pem")), ReadFile(pki.File("hawk-a.key")));
  EXPECT_EQ(SessionSubject(*context), "/CN=hawk-a");
  EXPECT_EQ(context->generation(), 1u);

  secret_->Publish("hawk-b");
  EXPECT_EQ(SessionSubject(*context), "/CN=hawk-b");
  EXPECT_EQ(context->generation(), 2u);
  EXPECT_EQ(tls::LiveSessions(), 0u);
}

TEST_F(TlsServerTest, ABadFileIsNamedWithItsFlag) {
  const Pki& pki = Pki::Get();
  std::string garbage = dir_.File("garbage.pem");
  std::ofstream(garbage) << "not a certificate\n";
  struct Case {
    tls::ServerFiles files;
    std::string message;
  };
  std::string cert = pki.File("hawk-a.pem");
  std::string key = pki.File("hawk-a.key");
  std::string ca = pki.File("hawk-ca.pem");
  std::string missing = dir_.File("missing.pem");
  std::vector<Case> cases = {
      {{cert, missing, ca}, absl::StrCat("--tls-key ", missing, ": no such file")},
      {{missing, key, ca}, absl::StrCat("--tls-cert ", missing, ": no such file")},
      {{cert, pki.File("hawk-b.key"), ca},
       absl::StrCat("--tls-cert ", cert, " and --tls-key ", pki.File("hawk-b.key"),
                    " do not match")},
      {{key, key, ca}, absl::StrCat("--tls-cert ", key, ": no PEM certificate in the file")},
      {{cert, cert, ca}, absl::StrCat("--tls-key ", cert, ": no PEM private key in the file")},
      {{cert, key, garbage},
       absl::StrCat("--tls-client-ca ", garbage, ": no PEM certificate in the file")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    auto context = tls::ServerContext::Create(c.files);
    ASSERT_FALSE(context.ok());
    EXPECT_EQ(context.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(context.status().message(), HasSubstr(c.message));
  }
}

TEST_F(TlsServerTest, HandshakesCountAgainstMaxConnections) {
  ServerOptions options;
  options.max_connections = 2;
  options.handshake_timeout = absl::Seconds(1);
  StartServer(options);
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < 2; ++i) {
    stalled.push_back(
        std::make_unique<RawClient>(loop_.get(), server_->address(), PartialClientHello()));
  }
  ASSERT_TRUE(RunUntil([&] { return server_->connection_count() == 2; }));

  CurlResult refused = Curl({Url()});
  EXPECT_EQ(refused.exit_code, 0) << refused.err;
  EXPECT_THAT(refused.out, HasSubstr("503"));
  EXPECT_EQ(handled_, 0);

  // The stalled handshakes time out and free their slots.
  ASSERT_TRUE(RunUntil([&] { return stalled[0]->ended() && stalled[1]->ended(); }));
  ASSERT_TRUE(WaitForNoConnections());
  CurlResult served = Curl({Url()});
  EXPECT_EQ(served.out, "hello /hello\n200");
}

TEST_F(TlsServerTest, HostileClientsAreClosedAndLeaveNothingBehind) {
  ServerOptions options;
  options.handshake_timeout = absl::Milliseconds(200);
  options.max_connections = 2000;
  StartServer(options);
  constexpr int kClients = 1000;
  constexpr int kBatch = 100;  // below the listen backlog (128)
  const std::string garbage = "GET / HTTP/1.1\r\nHost: hawk\r\n\r\n";

  // Half send garbage (closed at once), half a partial ClientHello (closed at the deadline).
  auto round = [&] {
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.push_back(std::make_unique<RawClient>(loop_.get(), server_->address(),
                                                    i % 2 == 0 ? garbage : PartialClientHello()));
      if ((i + 1) % kBatch == 0) {
        EXPECT_TRUE(RunUntil([&] {
          for (size_t j = clients.size() - kBatch; j < clients.size(); ++j) {
            if (!clients[j]->connected()) return false;
          }
          return true;
        }));
      }
    }
    EXPECT_TRUE(RunUntil([&] {
      for (const auto& client : clients) {
        if (!client->ended()) return false;
      }
      return true;
    }));
    EXPECT_TRUE(WaitForNoConnections());
    EXPECT_EQ(tls::LiveSessions(), 0u);
  };

  ::testing::internal::CaptureStderr();
  auto start = std::chrono::steady_clock::now();
  round();
  size_t rss_after_first = ResidentBytes();
  round();
  size_t rss_after_second = ResidentBytes();
  auto elapsed = std::chrono::steady_clock::now() - start;
  std::string log = ::testing::internal::GetCapturedStderr();

  std::printf(
      "2 x %d hostile clients in %lld ms; RSS after round 1: %zu KiB, after round 2: "
      "%zu KiB\n",
      kClients,
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()),
      rss_after_first / 1024, rss_after_second / 1024);
  // A second round of the same leaves the process as the first did: nothing accumulates. (Under
  // ASan, whose allocator keeps freed memory in quarantine, its leak check does this job.)
#ifndef __SANITIZE_ADDRESS__
  EXPECT_LT(rss_after_second, rss_after_first + 2 * 1024 * 1024);
#endif
  // 2,000 failed handshakes make one log line (the rate limit allows one a minute).
  std::vector<std::string> lines = absl::StrSplit(log, '\n', absl::SkipEmpty());
  EXPECT_LE(lines.size(), 2u) << log;

  CurlResult r = Curl({Url()});
  EXPECT_EQ(r.out, "hello /hello\n200") << r.err;
  EXPECT_EQ(handled_, 1);
}

TEST_F(TlsServerTest, ASlowStreamReaderIsDroppedByItsUnsentCiphertext) {
  ServerOptions options;
  options.max_stream_buffer_bytes = 512 * 1024;
  std::unique_ptr<uv::Timer> pump;
  size_t max_buffered = 0;
  bool dropped = false;
  StartServer(options, [&](const Request&, Responder responder) {
    ASSERT_TRUE(responder.StartStream(200, "application/octet-stream"));
    pump = std::make_unique<uv::Timer>(loop_.get());
    size_t sent = 0;
    pump->StartRepeating(absl::Milliseconds(1), absl::Milliseconds(1),
                         [&, responder, sent]() mutable {
                           std::string chunk(256 * 1024, 'x');
                           if (!responder.WriteChunk(chunk)) {
                             dropped = true;
                             pump->Stop();
                             return;
                           }
                           max_buffered = std::max(max_buffered, responder.buffered_bytes());
                           sent += chunk.size();
                           if (sent > 512 * 1024 * 1024)
                             pump->Stop();  // never dropped: the test fails below
                         });
  });
  // curl reads 16 KiB/s: the kernel's socket buffers fill, then hawk's queue does.
  // Stopped once dropped: it would read what the kernel holds for minutes.
  Curl({"--limit-rate", "16k", "-o", "/dev/null", Url("/stream")}, true,
       [&] { return dropped && server_->connection_count() == 0; });
  EXPECT_TRUE(dropped);
  EXPECT_GT(max_buffered, 0u);  // the ciphertext the socket has not sent is counted
  EXPECT_TRUE(WaitForNoConnections());
}

// The server drops a stream reader by write_queue_bytes(): over TLS it must count the ciphertext
// the socket has not sent and the writes held during the handshake.
TEST_F(TlsServerTest, WriteQueueBytesCountsWhatTheHandshakeHolds) {
  std::shared_ptr<tls::ServerContext> context = Context();
  std::unique_ptr<tls::ServerStream> stream;
  auto listener = uv::Listener::Create(
      loop_.get(), base::Address{base::Address::Kind::kTcp, "", "127.0.0.1", 0},
      [&](std::unique_ptr<uv::Stream> socket) {
        stream = std::make_unique<tls::ServerStream>(loop_.get(), std::move(socket), context,
                                                     absl::Seconds(5));
      });
  ASSERT_TRUE(listener.ok()) << listener.status();
  RawClient client(loop_.get(), (*listener)->address(), PartialClientHello());
  ASSERT_TRUE(RunUntil([&] { return stream != nullptr && client.connected(); }));

  bool write_failed = false;
  ASSERT_TRUE(
      stream->Write(std::string(1000, 'x'), [&](absl::Status s) { write_failed = !s.ok(); }).ok());
  EXPECT_EQ(stream->write_queue_bytes(), 1000u);
  EXPECT_FALSE(stream->handshake_done());

  bool closed = false;
  stream->Close([&] { closed = true; });
  EXPECT_EQ(stream->write_queue_bytes(), 0u);
  ASSERT_TRUE(RunUntil([&] { return closed && client.ended(); }));
  EXPECT_FALSE(write_failed);  // never called after Close()
  stream.reset();
  EXPECT_EQ(tls::LiveSessions(), 0u);
}

TEST(ClientAllowTest, EntriesAreDnsNamesOrUrisAndMatchTheSubjectAltNames) {
  EXPECT_EQ(*tls::ParseClientAllow("Controller.Hawk.Test."), "controller.hawk.test");
  EXPECT_EQ(*tls::ParseClientAllow("spiffe://hawk.test/ns/a/sa/Controller"),
            "spiffe://hawk.test/ns/a/sa/Controller");
  for (const char* bad : {"", "*.hawk.test", "a b", "controller/x", "ctl\x01"}) {
    absl::StatusOr<std::string> parsed = tls::ParseClientAllow(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_THAT(parsed.status().message(), HasSubstr("--tls-client-allow"));
    }
  }
  std::vector<std::string> allow = {"controller.hawk.test", "spiffe://hawk.test/ctl"};
  EXPECT_TRUE(tls::IdentityAllowed(allow, {{"CONTROLLER.hawk.test."}, {}}));
  EXPECT_TRUE(tls::IdentityAllowed(allow, {{"other.test"}, {"spiffe://hawk.test/ctl"}}));
  EXPECT_FALSE(tls::IdentityAllowed(allow, {{"other.test"}, {"spiffe://hawk.test/CTL"}}));
  EXPECT_FALSE(tls::IdentityAllowed(allow, {{"x.controller.hawk.test"}, {}}));
  // A DNS entry never matches a URI, nor a name with a NUL after the allowed one.
  EXPECT_FALSE(tls::IdentityAllowed(allow, {{}, {"controller.hawk.test"}}));
  EXPECT_FALSE(tls::IdentityAllowed(allow, {{std::string("controller.hawk.test\0.evil", 26)}, {}}));
  EXPECT_FALSE(tls::IdentityAllowed(allow, {}));
  // Without a client CA there is nothing to read the identities from.
  tls::ServerFiles files{Pki::Get().File("hawk-a.pem"), Pki::Get().File("hawk-a.key"), ""};
  absl::StatusOr<std::unique_ptr<tls::ServerContext>> context =
      tls::ServerContext::Create(files, absl::Seconds(1), {"controller.hawk.test"});
  ASSERT_FALSE(context.ok());
  EXPECT_THAT(context.status().message(), HasSubstr("--tls-client-ca"));
}

TEST_F(TlsServerTest, AVerifiedClientCertificateProvesTheConnection) {
  ServerOptions options;
  options.start_unproven = true;
  options.admit = [](const Request&) { return Admission::Admit(); };  // proves nothing itself
  size_t unproven_seen = 99;
  StartServer(options, [&](const Request&, Responder responder) {
    unproven_seen = server_->unproven_count();
    responder.Send(JsonResponse(200, "{}"));
  });
  CurlResult r = Curl({Url()});
  EXPECT_TRUE(absl::EndsWith(r.out, "\n200")) << r.out << r.err;
  EXPECT_EQ(unproven_seen, 0u) << "the handshake's certificate did not move it to the proven";
}

TEST_F(TlsServerTest, TheAllowListRefusesOtherIdentitiesOfTheSameCa) {
  auto context =
      tls::ServerContext::Create(secret_->Files(), absl::ZeroDuration(), {"controller.hawk.test"});
  ASSERT_TRUE(context.ok()) << context.status();
  ServerOptions options;
  options.tls = *std::move(context);
  StartServer(options);
  EXPECT_TRUE(absl::EndsWith(Curl({Url()}).out, "\n200"));
  const Pki& pki = Pki::Get();
  CurlResult stranger =
      Curl({"--cert", pki.File("stranger.pem"), "--key", pki.File("stranger.key"), Url()}, false);
  EXPECT_NE(stranger.exit_code, 0) << stranger.out;
  EXPECT_EQ(handled_, 1);
}

}  // namespace
}  // namespace hawk::http

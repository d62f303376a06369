// Self-test of the test-support library against a real HAProxy and hawk_test_backend.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "tests/support/backend_process.h"
#include "tests/support/free_port.h"
#include "tests/support/haproxy_process.h"
#include "tests/support/http_client.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/master_cli.h"
#include "tests/support/socket_util.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "tests/support/unix_relay.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Fixture(const std::string& name) { return ReadFile(HAWK_FIXTURES_DIR "/" + name); }

std::string HaproxyConfig(int frontend_port, int backend_port) {
  return "global\n"
         "    master-worker\n"
         "defaults\n"
         "    mode http\n"
         "    timeout connect 1s\n"
         "    timeout client 30s\n"
         "    timeout server 30s\n"
         "frontend fe\n"
         "    bind 127.0.0.1:" +
         std::to_string(frontend_port) +
         "\n"
         "    default_backend be_app\n"
         "backend be_app\n"
         "    server SRV_1 127.0.0.1:" +
         std::to_string(backend_port) + "\n";
}

std::string Tcp(int port) { return "tcp:127.0.0.1:" + std::to_string(port); }

// Every test must leave no child process behind (the processes are stopped by pid).
class SupportTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_THAT(ChildPids(), IsEmpty()) << "child processes left"; }
};

// A haproxy in front of one backend, both started.
class HaproxyTest : public SupportTest {
 protected:
  void SetUp() override {
    ASSERT_FALSE(TestBackendBinary().empty()) << "HAWK_TEST_BACKEND is not set";
    backend_ = std::make_unique<BackendProcess>(dir_, "app1");
    Result started = backend_->Start();
    ASSERT_TRUE(started.ok) << started.error;
    frontend_port_ = FreeTcpPort();
    ASSERT_GT(frontend_port_, 0);
    haproxy_ =
        std::make_unique<HaproxyProcess>(dir_, HaproxyConfig(frontend_port_, backend_->port()));
    started = haproxy_->Start();
    ASSERT_TRUE(started.ok) << started.error;
  }
  void TearDown() override {
    haproxy_.reset();
    backend_.reset();
    SupportTest::TearDown();
  }

  TempDir dir_;
  std::unique_ptr<BackendProcess> backend_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  int frontend_port_ = 0;
};

TEST_F(SupportTest, TempDirIsShortAndRemoved) {
  std::string path;
  {
    TempDir dir;
    path = dir.path();
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(dir.File("master.sock"), path + "/master.sock");
    EXPECT_LT(dir.File("master.sock").size(), sizeof(sockaddr_un{}.sun_path) - 20);
    ASSERT_TRUE(WriteFile(dir.File("sub.txt"), "hello"));
    EXPECT_EQ(ReadFile(dir.File("sub.txt")), "hello");
  }
  struct stat st {};
  EXPECT_NE(::stat(path.c_str(), &st), 0) << path << " still exists";
}

TEST_F(SupportTest, FreeTcpPortAndWaitUntil) {
  int port = FreeTcpPort();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
  int calls = 0;
  EXPECT_TRUE(WaitUntil([&] { return ++calls == 3; }, seconds(1), milliseconds(1)));
  auto start = Clock::now();
  EXPECT_FALSE(WaitUntil([] { return false; }, milliseconds(30)));
  EXPECT_GE(Clock::now() - start, milliseconds(30));
}

TEST_F(SupportTest, ParseShowProcFixtures) {
  std::string error;
  auto plain = ParseShowProc(Fixture("haproxy-2.6/show_proc.txt"), &error);
  ASSERT_TRUE(plain) << error;
  EXPECT_EQ(plain->master_pid, 6869);
  EXPECT_EQ(plain->master_reloads, 0);
  EXPECT_EQ(plain->master_failed, 0);
  EXPECT_THAT(plain->workers, ElementsAre(6892));
  EXPECT_THAT(plain->old_workers, IsEmpty());

  auto leaving = ParseShowProc(Fixture("haproxy-2.6/show_proc_with_old_worker.txt"), &error);
  ASSERT_TRUE(leaving) << error;
  EXPECT_EQ(leaving->master_reloads, 1);
  EXPECT_THAT(leaving->workers, ElementsAre(7011));
  EXPECT_THAT(leaving->old_workers, ElementsAre(6892));

  auto failed = ParseShowProc(Fixture("haproxy-2.6/show_proc_after_failed_reload.txt"), &error);
  ASSERT_TRUE(failed) << error;
  EXPECT_EQ(failed->master_reloads, 2);
  EXPECT_EQ(failed->master_failed, 1);
  EXPECT_THAT(failed->workers, ElementsAre(7011));

  auto v34 = ParseShowProc(Fixture("haproxy-3.4/show_proc_after_failed_reload.txt"), &error);
  ASSERT_TRUE(v34) << error;
  EXPECT_EQ(v34->master_failed, 1);
  EXPECT_THAT(v34->workers, IsEmpty());
  EXPECT_THAT(v34->old_workers, ElementsAre(8674, 8586));

  EXPECT_FALSE(ParseShowProc("", &error));
  EXPECT_THAT(error, HasSubstr("no master row"));
  EXPECT_FALSE(ParseShowProc("Unknown command\n", &error));
}

TEST_F(SupportTest, SubprocessExitStatusEnvAndStop) {
  TempDir dir;
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", "echo \"$HAWK_SUPPORT_X\"; echo oops >&2; exit 3"};
  options.stdout_path = dir.File("out.log");
  options.stderr_path = dir.File("err.log");
  options.env = {{"HAWK_SUPPORT_X", "value-x"}};
  std::string error;
  auto child = Subprocess::Spawn(options, &error);
  ASSERT_TRUE(child) << error;
  ASSERT_TRUE(child->WaitExit(seconds(5)));
  EXPECT_EQ(child->exit_code(), 3);
  EXPECT_EQ(ReadFile(dir.File("out.log")), "value-x\n");
  EXPECT_EQ(ReadFile(dir.File("err.log")), "oops\n");

  SubprocessOptions sleeper;
  sleeper.argv = {"sleep", "100"};
  child = Subprocess::Spawn(sleeper, &error);
  ASSERT_TRUE(child) << error;
  EXPECT_TRUE(child->Running());
  EXPECT_EQ(::getpgid(child->pid()), child->pid());  // its own process group
  auto start = Clock::now();
  child->Stop();
  EXPECT_LT(Clock::now() - start, seconds(2));
  EXPECT_EQ(child->term_signal(), SIGTERM);
  EXPECT_FALSE(ProcessAlive(child->pid()));

  // A group stop also reaches the grandchildren.
  SubprocessOptions group;
  group.argv = {"/bin/sh", "-c", "sleep 100 & echo $! > " + dir.File("grandchild") + "; wait"};
  group.stop_signals_group = true;
  child = Subprocess::Spawn(group, &error);
  ASSERT_TRUE(child) << error;
  pid_t grandchild = -1;
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::string text = ReadFile(dir.File("grandchild"));
        grandchild = text.empty() || text.back() != '\n' ? -1 : std::atoi(text.c_str());
        return grandchild > 0;
      },
      seconds(5)));
  EXPECT_TRUE(ProcessAlive(grandchild));
  child->Stop();
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(grandchild); }, seconds(5)));

  SubprocessOptions missing;
  missing.argv = {"/nonexistent/binary"};
  EXPECT_FALSE(Subprocess::Spawn(missing, &error));
  EXPECT_THAT(error, HasSubstr("/nonexistent/binary"));
}

TEST_F(SupportTest, BackendAnswersKeepAlivePipelinedSlowAndStatus) {
  TempDir dir;
  BackendProcess backend(dir, "b1");
  Result started = backend.Start();
  ASSERT_TRUE(started.ok) << started.error;

  HttpResult plain = Fetch(backend.address(), "GET", "/hello");
  ASSERT_TRUE(plain.ok) << plain.error;
  EXPECT_EQ(plain.status, 200);
  EXPECT_EQ(plain.body, "b1\n");
  EXPECT_EQ(plain.Header("X-Backend"), "b1");
  EXPECT_TRUE(backend.WaitForRequest("/hello"));

  std::string error;
  auto conn = HttpConnection::Connect("tcp:" + backend.address(), seconds(5), &error);
  ASSERT_TRUE(conn) << error;
  HttpResult first = conn->RoundTrip(HttpRequest::Get("/status/503"));
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.status, 503);
  EXPECT_TRUE(first.keep_alive);
  HttpResult head = conn->RoundTrip(HttpRequest::Make("HEAD", "/"));
  ASSERT_TRUE(head.ok) << head.error;
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(head.Header("content-length"), "3");
  HttpResult posted = conn->RoundTrip(HttpRequest::Make("POST", "/p", "payload"));
  ASSERT_TRUE(posted.ok) << posted.error;
  EXPECT_EQ(posted.body, "b1\n");

  // Pipelined: the slow response comes first, then the fast one, in order.
  ASSERT_TRUE(conn->SendRequest(HttpRequest::Get("/slow/200"), seconds(1)));
  ASSERT_TRUE(conn->SendRequest(HttpRequest::Get("/status/404"), seconds(1)));
  auto start = Clock::now();
  HttpResult slow = conn->ReadResponse();
  ASSERT_TRUE(slow.ok) << slow.error;
  EXPECT_EQ(slow.status, 200);
  EXPECT_GE(Clock::now() - start, milliseconds(150));
  HttpResult after = conn->ReadResponse();
  ASSERT_TRUE(after.ok) << after.error;
  EXPECT_EQ(after.status, 404);
  EXPECT_FALSE(conn->ServerClosed());

  HttpResult last =
      conn->RoundTrip(HttpRequest::Get("/slow?ms=50").AddHeader("Connection", "close"));
  ASSERT_TRUE(last.ok) << last.error;
  EXPECT_FALSE(last.keep_alive);
  EXPECT_TRUE(conn->ServerClosed(seconds(2)));

  HttpResult timed_out = Fetch(backend.address(), "GET", "/slow/2000", "", milliseconds(100));
  EXPECT_FALSE(timed_out.ok);
  EXPECT_EQ(timed_out.error, "timeout");

  HttpResult refused = Fetch(Tcp(FreeTcpPort()), "GET", "/");
  EXPECT_FALSE(refused.ok);
  EXPECT_THAT(refused.error, HasSubstr("refused"));

  pid_t pid = backend.pid();
  backend.Stop();
  EXPECT_FALSE(ProcessAlive(pid));
}

// A unix-socket server that answers one chunked response, releasing the second chunk on cue,
// then a plain response on the same connection.
TEST_F(SupportTest, HttpConnectionReadsChunksIncrementally) {
  TempDir dir;
  std::string path = dir.File("watch.sock");
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::copy(path.begin(), path.end(), addr.sun_path);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);

  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::thread server([&] {
    UniqueFd peer(::accept(listener.get(), nullptr, nullptr));
    if (!peer.valid() || !SetNonBlocking(peer.get())) return;
    auto deadline = Clock::now() + seconds(10);
    std::string request;
    char buffer[1024];
    std::string read_error;
    auto read_request = [&] {
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ReadSome(peer.get(), buffer, sizeof(buffer), deadline, &read_error);
        if (n <= 0) return false;
        request.append(buffer, static_cast<size_t>(n));
      }
      request.erase(0, request.find("\r\n\r\n") + 4);
      return true;
    };
    std::string write_error;
    if (!read_request()) return;
    WriteAll(peer.get(),
             "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
             "Transfer-Encoding: chunked\r\n\r\n8\r\n{\"n\":1}\n\r\n",
             deadline, &write_error);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, seconds(10), [&] { return release; });
    }
    WriteAll(peer.get(), "8\r\n{\"n\":2}\n\r\n0\r\n\r\n", deadline, &write_error);
    if (!read_request()) return;
    WriteAll(peer.get(), "HTTP/1.1 204 No Content\r\nX-Second: yes\r\n\r\n", deadline,
             &write_error);
    ReadSome(peer.get(), buffer, sizeof(buffer), deadline, &read_error);  // until client closes
  });

  std::string error;
  auto conn = HttpConnection::Connect("unix:" + path, seconds(5), &error);
  ASSERT_TRUE(conn) << error;
  ASSERT_TRUE(conn->SendRequest(HttpRequest::Get("/watch"), seconds(5), &error)) << error;
  HttpResult head = conn->ReadResponseHead();
  ASSERT_TRUE(head.ok) << head.error;
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Header("transfer-encoding"), "chunked");
  EXPECT_EQ(conn->ReadChunk(seconds(5), &error).value_or("<" + error + ">"), "{\"n\":1}\n");
  EXPECT_FALSE(conn->ReadChunk(milliseconds(50), &error));
  EXPECT_EQ(error, "timeout");
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_EQ(conn->ReadChunk(seconds(5), &error).value_or("<" + error + ">"), "{\"n\":2}\n");
  EXPECT_FALSE(conn->ReadChunk(seconds(5), &error));
  EXPECT_EQ(error, "end of body");

  HttpResult second = conn->RoundTrip(HttpRequest::Get("/second"));
  ASSERT_TRUE(second.ok) << second.error;
  EXPECT_EQ(second.status, 204);
  EXPECT_EQ(second.Header("x-second"), "yes");
  conn.reset();
  server.join();
}

TEST_F(SupportTest, InFlightRequestDestructorDoesNotBlock) {
  TempDir dir;
  BackendProcess backend(dir, "b2");
  Result started = backend.Start();
  ASSERT_TRUE(started.ok) << started.error;
  auto start = Clock::now();
  {
    InFlightRequest request("tcp:" + backend.address(), "/slow/20000");
    EXPECT_TRUE(request.WaitSent(seconds(5)));
    EXPECT_FALSE(request.Wait(milliseconds(20)));
    EXPECT_FALSE(request.done());
  }
  EXPECT_LT(Clock::now() - start, seconds(5));

  InFlightRequest quick(backend.port(), "/slow/10");
  ASSERT_TRUE(quick.Wait(seconds(5)));
  EXPECT_TRUE(quick.result().ok) << quick.result().error;
  EXPECT_EQ(quick.result().status, 200);

  InFlightRequest refused(FreeTcpPort(), "/");
  ASSERT_TRUE(refused.Wait(seconds(5)));
  EXPECT_FALSE(refused.result().ok);
}

TEST_F(HaproxyTest, FetchThroughHaproxyAndReloadWithRequestInFlight) {
  HttpResult first = Fetch(Tcp(frontend_port_), "GET", "/");
  ASSERT_TRUE(first.ok) << first.error << "\n" << haproxy_->LogTail();
  EXPECT_EQ(first.status, 200);
  EXPECT_THAT(first.body, HasSubstr("app1"));

  auto before = haproxy_->ShowProc();
  ASSERT_TRUE(before);
  EXPECT_EQ(before->master_pid, haproxy_->master_pid());
  EXPECT_EQ(before->master_reloads, 0);
  ASSERT_EQ(before->workers.size(), 1u);
  pid_t old_worker = before->workers[0];
  EXPECT_EQ(haproxy_->CurrentWorkerPid(), old_worker);

  InFlightRequest slow(frontend_port_, "/slow?ms=2000");
  ASSERT_TRUE(backend_->WaitForRequest("/slow?ms=2000")) << ReadFile(backend_->log_path());

  Result reloaded = haproxy_->ReloadViaCli();
  ASSERT_TRUE(reloaded.ok) << reloaded.error;
  pid_t new_worker = haproxy_->WaitForNewWorker(old_worker);
  ASSERT_GT(new_worker, 0) << haproxy_->LogTail();
  EXPECT_EQ(haproxy_->master_pid(), before->master_pid);  // the master re-executed in place

  // The old worker stays listed as leaving while the request it serves is in flight.
  auto during = haproxy_->ShowProc();
  ASSERT_TRUE(during);
  EXPECT_EQ(during->master_reloads, 1);
  EXPECT_THAT(during->workers, ElementsAre(new_worker));
  EXPECT_THAT(during->old_workers, ElementsAre(old_worker));
  EXPECT_FALSE(slow.done());
  EXPECT_TRUE(ProcessAlive(old_worker));

  HttpResult fresh = Fetch(Tcp(frontend_port_), "GET", "/");
  ASSERT_TRUE(fresh.ok) << fresh.error;
  EXPECT_EQ(fresh.status, 200);

  // Until the request completes, every `show proc` still lists the old worker as leaving.
  int checks = 0;
  while (!slow.Wait(milliseconds(50))) {
    auto snapshot = haproxy_->ShowProc();
    if (slow.done()) break;  // the snapshot may postdate the old worker's exit
    ASSERT_TRUE(snapshot);
    EXPECT_THAT(snapshot->old_workers, Contains(old_worker));
    ++checks;
  }
  EXPECT_GT(checks, 3);
  ASSERT_TRUE(slow.Wait(seconds(10)));
  HttpResult finished = slow.result();
  ASSERT_TRUE(finished.ok) << finished.error;
  EXPECT_EQ(finished.status, 200);
  EXPECT_EQ(finished.body, "app1\n");
  EXPECT_EQ(finished.Header("x-backend"), "app1");

  EXPECT_TRUE(WaitUntil(
      [&] {
        auto list = haproxy_->ShowProc();
        return list && list->old_workers.empty();
      },
      seconds(5)));
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(old_worker); }, seconds(5)));

  // Reload by signal, with a changed config.
  ASSERT_TRUE(
      haproxy_->WriteConfig(HaproxyConfig(frontend_port_, backend_->port()) + "    # changed\n")
          .ok);
  ASSERT_TRUE(haproxy_->ReloadViaSignal().ok);
  pid_t third = haproxy_->WaitForNewWorker(new_worker);
  ASSERT_GT(third, 0) << haproxy_->LogTail();
  auto after = haproxy_->ShowProc();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->master_reloads, 2);
  EXPECT_EQ(after->master_failed, 0);
  EXPECT_THAT(haproxy_->LogTail(), HasSubstr("Loading success"));

  pid_t master = haproxy_->master_pid();
  haproxy_->Stop();
  EXPECT_FALSE(ProcessAlive(master));
  for (pid_t pid : {old_worker, new_worker, third}) {
    EXPECT_FALSE(ProcessAlive(pid)) << pid;
  }
}

TEST_F(HaproxyTest, UnixRelayCountsConnectionsToTheMasterSocket) {
  UnixRelay relay(dir_.File("relay.sock"), haproxy_->master_socket());
  Result started = relay.Start();
  ASSERT_TRUE(started.ok) << started.error;
  auto deadline = Clock::now() + seconds(10);
  std::string error;

  UniqueFd a = ConnectUnix(relay.path(), deadline, &error);
  ASSERT_TRUE(a.valid()) << error;
  UniqueFd b = ConnectUnix(relay.path(), deadline, &error);
  ASSERT_TRUE(b.valid()) << error;
  ASSERT_TRUE(WaitUntil([&] { return relay.current_connections() == 2; }, seconds(5)));

  // A half-closed command through the relay: the master answers and closes; the relay passes
  // both the half-close and the close on.
  ASSERT_TRUE(WriteAll(a.get(), "show proc\n", deadline, &error)) << error;
  ASSERT_EQ(::shutdown(a.get(), SHUT_WR), 0);
  std::string reply;
  char buffer[4096];
  for (ssize_t n; (n = ReadSome(a.get(), buffer, sizeof(buffer), deadline, &error)) > 0;) {
    reply.append(buffer, static_cast<size_t>(n));
  }
  auto list = ParseShowProc(reply, &error);
  ASSERT_TRUE(list) << error;
  EXPECT_EQ(list->master_pid, haproxy_->master_pid());

  // A persistent connection: the master keeps it open after answering.
  ASSERT_TRUE(WriteAll(b.get(), "show version\n", deadline, &error)) << error;
  reply.clear();
  while (reply.find("\n\n") == std::string::npos) {
    ssize_t n = ReadSome(b.get(), buffer, sizeof(buffer), deadline, &error);
    ASSERT_GT(n, 0) << error;
    reply.append(buffer, static_cast<size_t>(n));
  }
  EXPECT_THAT(reply, HasSubstr("2."));
  a.Reset();
  EXPECT_TRUE(WaitUntil([&] { return relay.current_connections() == 1; }, seconds(5)));

  // A reload closes every master connection; the relay closes the client side too.
  pid_t old_worker = haproxy_->CurrentWorkerPid();
  ASSERT_TRUE(haproxy_->ReloadViaCli().ok);
  EXPECT_EQ(ReadSome(b.get(), buffer, sizeof(buffer), deadline, &error), 0) << error;
  b.Reset();
  EXPECT_TRUE(WaitUntil([&] { return relay.current_connections() == 0; }, seconds(5)));
  ASSERT_GT(haproxy_->WaitForNewWorker(old_worker), 0);

  // One-shot commands through the relay.
  std::string text = MasterCli::Command(relay.path(), "show proc", seconds(5), &error);
  EXPECT_THAT(text, HasSubstr("master")) << error;
  EXPECT_EQ(relay.max_concurrent_connections(), 2);
  EXPECT_EQ(relay.total_accepted(), 3);
  EXPECT_TRUE(WaitUntil([&] { return relay.current_connections() == 0; }, seconds(5)));

  // A refused target: the client is closed at once.
  UnixRelay dead(dir_.File("dead.sock"), dir_.File("missing.sock"));
  ASSERT_TRUE(dead.Start().ok);
  CliReply refused = MasterCli::Run(dead.path(), "show proc", seconds(5));
  // Connected, then closed: EOF, a reset because the command it had sent was never read, or a
  // broken pipe when the relay closed before the command was written.
  EXPECT_TRUE(refused.ok || refused.error.find("reset") != std::string::npos ||
              refused.error.find("Broken pipe") != std::string::npos)
      << refused.error;
  EXPECT_EQ(refused.text, "");
  EXPECT_EQ(dead.failed_target_connects(), 1);
  EXPECT_TRUE(WaitUntil([&] { return dead.current_connections() == 0; }, seconds(5)));

  relay.Stop();
  struct stat st {};
  EXPECT_NE(::stat(relay.path().c_str(), &st), 0);
  CliReply gone = MasterCli::Run(relay.path(), "show proc", seconds(1));
  EXPECT_FALSE(gone.ok);
  EXPECT_EQ(gone.error_number, ENOENT);
}

TEST_F(HaproxyTest, MasterCliErrorsAndRefusal) {
  CliReply unknown = MasterCli::Run(haproxy_->master_socket(), "@!999999 show info");
  ASSERT_TRUE(unknown.ok) << unknown.error;
  EXPECT_THAT(unknown.text, HasSubstr("Can't find the target PID"));
  std::string info = MasterCli::Command(haproxy_->master_socket(), "@1 show info");
  EXPECT_THAT(info, HasSubstr("Stopping: 0"));

  std::string error;
  EXPECT_EQ(MasterCli::Command(dir_.File("nope.sock"), "show proc", seconds(1), &error), "");
  EXPECT_THAT(error, HasSubstr("No such file"));
}

TEST_F(HaproxyTest, KillLeavesNoHaproxyProcess) {
  pid_t master = haproxy_->master_pid();
  pid_t worker = haproxy_->CurrentWorkerPid();
  ASSERT_GT(worker, 0);
  // Keep a client connection open on the worker; Kill() must not wait for it.
  auto conn = HttpConnection::Connect(Tcp(frontend_port_));
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->RoundTrip(HttpRequest::Get("/")).ok);

  auto start = Clock::now();
  haproxy_->Kill();
  EXPECT_LT(Clock::now() - start, seconds(3));
  for (pid_t pid : {master, worker}) {
    errno = 0;
    EXPECT_EQ(::kill(pid, 0), -1) << pid << " still exists";
    EXPECT_EQ(errno, ESRCH);
  }
  EXPECT_TRUE(ProcessGroupGone(master)) << "process group " << master << " not empty";
  EXPECT_TRUE(conn->ServerClosed(seconds(2)));
  HttpResult down = Fetch(Tcp(frontend_port_), "GET", "/", "", seconds(1));
  EXPECT_FALSE(down.ok);
}

TEST_F(SupportTest, HaproxyStartFailureCarriesTheLog) {
  TempDir dir;
  HaproxyProcess haproxy(dir, "global\n    this-is-not-a-keyword\n");
  Result started = haproxy.Start(seconds(5));
  EXPECT_FALSE(started.ok);
  EXPECT_THAT(started.error, HasSubstr("this-is-not-a-keyword"));
  EXPECT_FALSE(haproxy.MasterRunning());
}

}  // namespace
}  // namespace hawk::testing

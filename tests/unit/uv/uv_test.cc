// One test per handle type on a real loop; every test ends with uv_loop_close() == 0, which
// catches handles that were never closed.

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "agent/uv/listener.h"
#include "agent/uv/loop.h"
#include "agent/uv/signal.h"
#include "agent/uv/stream.h"
#include "agent/uv/timer.h"
#include "gtest/gtest.h"

namespace hawk::uv {
namespace {

class UvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hawk-uv-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    EXPECT_TRUE(loop_.RunDryAndClose().ok());
    rmdir(dir_.c_str());
  }
  base::Address UnixAddress() {
    return base::Address{base::Address::Kind::kUnix, dir_ + "/s.sock", "", 0};
  }
  Loop loop_;
  std::string dir_;
};

TEST_F(UvTest, TimerFiresAndMayDestroyItselfInItsCallback) {
  auto timer = std::make_unique<Timer>(loop_.get());
  int fired = 0;
  timer->Start(absl::Milliseconds(1), [&] {
    ++fired;
    timer.reset();
  });
  loop_.Run();
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(timer, nullptr);
}

TEST_F(UvTest, RepeatingTimerStops) {
  Timer timer(loop_.get());
  int fired = 0;
  timer.StartRepeating(absl::Milliseconds(1), absl::Milliseconds(1), [&] {
    if (++fired == 3) timer.Stop();
  });
  loop_.Run();
  EXPECT_EQ(fired, 3);
  EXPECT_FALSE(timer.active());
}

TEST_F(UvTest, SignalIsDelivered) {
  auto sig = std::make_unique<Signal>(loop_.get());
  int got = 0;
  sig->Start(SIGUSR1, [&](int signum) {
    got = signum;
    sig.reset();
  });
  Timer kick(loop_.get());
  kick.Start(absl::Milliseconds(1), [] { raise(SIGUSR1); });
  loop_.Run();
  EXPECT_EQ(got, SIGUSR1);
}

TEST_F(UvTest, UnixListenerIsPrivateAndEchoes) {
  std::unique_ptr<Stream> server_side;
  std::string received;
  auto listener = Listener::Create(loop_.get(), UnixAddress(), [&](std::unique_ptr<Stream> s) {
    server_side = std::move(s);
    ASSERT_TRUE(server_side
                    ->StartReading(
                        [&](absl::string_view bytes) {
                          ASSERT_TRUE(server_side->Write(std::string(bytes)).ok());
                        },
                        [&](absl::Status) { server_side->Close(); })
                    .ok());
  });
  ASSERT_TRUE(listener.ok()) << listener.status();
  struct stat st {};
  ASSERT_EQ(stat(UnixAddress().path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto client = std::make_unique<Stream>(loop_.get(), base::Address::Kind::kUnix);
  bool ended = false;
  ASSERT_TRUE(client
                  ->Connect(UnixAddress(),
                            [&](absl::Status status) {
                              ASSERT_TRUE(status.ok()) << status;
                              ASSERT_TRUE(client
                                              ->StartReading(
                                                  [&](absl::string_view bytes) {
                                                    received.append(bytes.data(), bytes.size());
                                                    if (received == "ping") client->Shutdown();
                                                  },
                                                  [&](absl::Status) {
                                                    ended = true;
                                                    client->Close([&] { client.reset(); });
                                                    listener->reset();
                                                  })
                                              .ok());
                              ASSERT_TRUE(client->Write("ping").ok());
                            })
                  .ok());
  loop_.Run();
  EXPECT_EQ(received, "ping");
  EXPECT_TRUE(ended);
  EXPECT_EQ(client, nullptr);  // destroyed from its on_closed callback
  server_side.reset();
  EXPECT_NE(access(UnixAddress().path.c_str(), F_OK), 0) << "socket file left behind";
}

TEST_F(UvTest, StaleSocketFileIsReplacedButALiveOneIsNot) {
  auto first = Listener::Create(loop_.get(), UnixAddress(), [](std::unique_ptr<Stream>) {});
  ASSERT_TRUE(first.ok());
  auto second = Listener::Create(loop_.get(), UnixAddress(), [](std::unique_ptr<Stream>) {});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  first->reset();
  // A socket file nobody serves (a crashed hawk) is replaced.
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  std::snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", UnixAddress().path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sun), sizeof(sun)), 0);
  close(fd);
  auto third = Listener::Create(loop_.get(), UnixAddress(), [](std::unique_ptr<Stream>) {});
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST_F(UvTest, ConnectRefusedIsReported) {
  auto client = std::make_unique<Stream>(loop_.get(), base::Address::Kind::kUnix);
  absl::Status result;
  ASSERT_TRUE(client->Connect(UnixAddress(), [&](absl::Status s) { result = s; }).ok());
  loop_.Run();
  EXPECT_EQ(result.code(), absl::StatusCode::kUnavailable) << result;
  client.reset();
}

TEST_F(UvTest, DestroyingAStreamWithPendingWritesIsSafe) {
  std::unique_ptr<Stream> accepted;
  auto listener = Listener::Create(loop_.get(), UnixAddress(),
                                   [&](std::unique_ptr<Stream> s) { accepted = std::move(s); });
  ASSERT_TRUE(listener.ok());
  auto client = std::make_unique<Stream>(loop_.get(), base::Address::Kind::kUnix);
  Timer later(loop_.get());
  ASSERT_TRUE(client
                  ->Connect(UnixAddress(),
                            [&](absl::Status) {
                              for (int i = 0; i < 100; ++i) {
                                (void)client->Write(std::string(64 * 1024, 'x'));
                              }
                              later.Start(absl::Milliseconds(1), [&] {
                                client.reset();  // writes still queued: they are cancelled
                                accepted.reset();
                                listener->reset();
                              });
                            })
                  .ok());
  loop_.Run();
  EXPECT_EQ(client, nullptr);
}

}  // namespace
}  // namespace hawk::uv

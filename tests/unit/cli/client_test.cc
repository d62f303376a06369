// MasterClient on a real libuv loop against a scripted peer that speaks the master CLI's
// prompt-mode byte format (as recorded from HAProxy 2.6/3.x). The client's behaviour against real
// HAProxy is covered by tests/integration/master_client_test.cc; this test drives the failure
// orderings that real HAProxy produces only by chance.

#include "agent/cli/client.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/uv/listener.h"
#include "agent/uv/loop.h"
#include "agent/uv/timer.h"
#include "gtest/gtest.h"
#include "tests/support/run_loop_until.h"

namespace hawk::cli {
namespace {

// A fake master: answers each received line through `respond`, in order. A reply of "<close>"
// closes the connection, and one ending with it ("master> <close>") writes what comes before
// and then closes; "<silent>" does not answer (until ReleaseSilent) and, like the real master,
// reads no further command on that connection meanwhile.
class ScriptedMaster {
 public:
  using Respond = std::function<std::string(const std::string& line)>;

  ScriptedMaster(uv_loop_t* loop, std::string path, Respond respond)
      : loop_(loop), path_(std::move(path)), respond_(std::move(respond)) {}

  void Listen() {
    auto listener = uv::Listener::Create(
        loop_, base::Address{base::Address::Kind::kUnix, path_, "", 0},
        [this](std::unique_ptr<uv::Stream> stream) { Accept(std::move(stream)); });
    ASSERT_TRUE(listener.ok()) << listener.status();
    listener_ = *std::move(listener);
  }
  void StopListening() { listener_.reset(); }
  // The prompt written after `prompt` (a worker's own stats socket: "> ").
  void SetPrompt(std::string prompt) { prompt_ = std::move(prompt); }
  void CloseAll() {
    for (auto& c : conns_) {
      if (c && !c->stream->closing()) c->stream->Close();
    }
    open_ = 0;
  }
  // The next `count` connections get no answer to `prompt` (like a master whose 10 slots are
  // busy, or that lost a session); ReleasePrompts() answers the held ones and holds no more.
  void HoldPrompts(int count = std::numeric_limits<int>::max()) { prompts_to_hold_ = count; }
  void ReleasePrompts() {
    prompts_to_hold_ = 0;
    for (auto& c : conns_) {
      if (c->prompt_held && !c->stream->closing()) {
        c->prompt_held = false;
        (void)c->stream->Write(prompt_);
      }
    }
  }
  // The next `count` connections are closed when they send `prompt` (a master that accepts,
  // then drops the session during the handshake).
  void ClosePrompts(int count) { prompts_to_close_ = count; }
  // Answers every silent connection with `reply`; they read their next commands again.
  void ReleaseSilent(const std::string& reply) {
    for (auto& c : conns_) {
      if (!c->stalled || c->stream->closing()) continue;
      c->stalled = false;
      (void)c->stream->Write(reply);
      c->drain();
    }
  }
  int open() const { return open_; }
  int max_open() const { return max_open_; }
  int accepted() const { return accepted_; }
  // Connections the client closed while their prompt was held.
  int closed_while_held() const { return closed_while_held_; }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  struct Conn {
    std::unique_ptr<uv::Stream> stream;
    std::string buffer;
    bool stalled = false;  // like the real master: no next command before the current reply
    bool prompt_held = false;
    std::function<void()> drain;  // answers the complete lines buffered
  };
  void Accept(std::unique_ptr<uv::Stream> stream) {
    ++accepted_;
    max_open_ = std::max(max_open_, ++open_);
    auto conn = std::make_unique<Conn>();
    conn->stream = std::move(stream);
    Conn* raw = conn.get();
    conns_.push_back(std::move(conn));
    raw->drain = [this, raw] {
      size_t nl;
      while (!raw->stalled && (nl = raw->buffer.find('\n')) != std::string::npos) {
        std::string line = raw->buffer.substr(0, nl);
        raw->buffer.erase(0, nl + 1);
        lines_.push_back(line);
        if (line == "prompt" && prompts_to_close_ > 0) {
          --prompts_to_close_;
          --open_;
          raw->stream->Close();
          return;
        }
        if (line == "prompt" && prompts_to_hold_ > 0) {
          --prompts_to_hold_;
          raw->prompt_held = true;
          continue;
        }
        std::string reply = line == "prompt" ? prompt_ : respond_(line);
        if (absl::EndsWith(reply, "<close>")) {
          reply.resize(reply.size() - std::string("<close>").size());
          if (!reply.empty()) (void)raw->stream->Write(reply);
          --open_;
          raw->stream->Close();
          return;
        }
        if (reply == "<silent>") {
          raw->stalled = true;
        } else {
          (void)raw->stream->Write(reply);
        }
      }
    };
    (void)raw->stream->StartReading(
        [raw](absl::string_view bytes) {
          raw->buffer.append(bytes.data(), bytes.size());
          raw->drain();
        },
        [this, raw](absl::Status) {
          if (raw->prompt_held) ++closed_while_held_;
          --open_;
          raw->stream->Close();
        });
  }

  uv_loop_t* loop_;
  std::string path_;
  Respond respond_;
  std::string prompt_ = "master> ";
  std::unique_ptr<uv::Listener> listener_;
  std::vector<std::unique_ptr<Conn>> conns_;
  int prompts_to_hold_ = 0;
  int prompts_to_close_ = 0;
  int open_ = 0;
  int max_open_ = 0;
  int accepted_ = 0;
  int closed_while_held_ = 0;
  std::vector<std::string> lines_;
};

class MasterClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hawk-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/master.sock";
  }
  void TearDown() override {
    client_.reset();
    master_.reset();
    EXPECT_TRUE(loop_.RunDryAndClose().ok());
    rmdir(dir_.c_str());
  }

  void StartMaster(ScriptedMaster::Respond respond) {
    master_ = std::make_unique<ScriptedMaster>(loop_.get(), path_, std::move(respond));
    master_->Listen();
  }
  MasterClient& Client(MasterClientOptions options = {}) {
    options.address = base::Address{base::Address::Kind::kUnix, path_, "", 0};
    client_ = std::make_unique<MasterClient>(loop_.get(), options);
    client_->Start();
    return *client_;
  }
  // Runs the loop until `done` or a 5 s safety deadline.
  void RunUntil(const std::function<bool()>& done) {
    ASSERT_TRUE(hawk::testing::RunLoopUntil(loop_.get(), done))
        << "condition not reached within 5 s";
  }
  std::vector<CommandResult> RunBatch(std::vector<Command> commands,
                                      absl::Duration timeout = absl::ZeroDuration()) {
    bool finished = false;
    std::vector<CommandResult> out;
    client_->Submit(
        std::move(commands),
        [&](std::vector<CommandResult> r) {
          out = std::move(r);
          finished = true;
        },
        timeout);
    RunUntil([&] { return finished; });
    return out;
  }

  uv::Loop loop_;
  std::string dir_;
  std::string path_;
  std::unique_ptr<ScriptedMaster> master_;
  std::unique_ptr<MasterClient> client_;
};

std::string Answer(const std::string& line) {
  if (line == "show version") return "2.6.12-1+deb12u4\n\nmaster> ";
  if (absl::StrContains(line, "get weight")) return "20 (initial 50)\n\nmaster> ";
  if (absl::StrContains(line, "set weight")) return "\nmaster> ";
  if (absl::StartsWith(line, "@!999")) {
    return "Can't find the target PID matching the prefix '@!999'\nmaster> ";
  }
  return "Unknown command.\n\nmaster> ";
}

TEST_F(MasterClientTest, PipelinedBatchGetsRepliesInOrder) {
  StartMaster(Answer);
  Client();
  std::vector<CommandResult> r =
      RunBatch({Command::ForWorker(1, "get weight be/s"),
                Command::ForWorker(1, "set weight be/s 3"), Command::Master("show version")});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(*r[0], "20 (initial 50)\n\n");
  EXPECT_EQ(*r[1], "\n");
  EXPECT_EQ(*r[2], "2.6.12-1+deb12u4\n\n");
  EXPECT_TRUE(client_->reachable());
}

// 2.8+: the master keeps the connection after a master error but discards what it had buffered.
TEST_F(MasterClientTest, MasterErrorFailsTheRestAndRetiresTheConnection) {
  StartMaster([](const std::string& line) -> std::string {
    if (absl::StartsWith(line, "@!999")) {
      return "Can't find the target PID matching the prefix '@!999'\nmaster> ";
    }
    return Answer(line);
  });
  Client();
  std::vector<CommandResult> r =
      RunBatch({Command::ForWorker(1, "get weight be/s"), Command::ForWorker(999, "show info"),
                Command::ForWorker(1, "get weight be/s")});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[0].ok());
  EXPECT_EQ(r[1].status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(r[1].status().message(), "@!999"));
  EXPECT_EQ(r[2].status().code(), absl::StatusCode::kUnavailable);
  // The next batch runs on a fresh connection and is attributed correctly.
  std::vector<CommandResult> next = RunBatch({Command::Master("show version")});
  EXPECT_EQ(*next[0], "2.6.12-1+deb12u4\n\n");
  EXPECT_GE(master_->accepted(), 2);
}

// 2.6: the master closes the connection after a master error.
TEST_F(MasterClientTest, MasterErrorThenCloseOn26) {
  StartMaster([](const std::string& line) -> std::string {
    if (absl::StartsWith(line, "@!999")) return "<close>";
    return Answer(line);
  });
  Client();
  std::vector<CommandResult> r = RunBatch({Command::ForWorker(999, "show info")});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].ok());
  std::vector<CommandResult> next = RunBatch({Command::Master("show version")});
  EXPECT_TRUE(next[0].ok());
}

TEST_F(MasterClientTest, DeadlineThenRecovery) {
  bool stuck = true;
  StartMaster([&](const std::string& line) -> std::string {
    if (stuck && absl::StrContains(line, "show info")) return "<silent>";
    return Answer(line);
  });
  Client();
  std::vector<CommandResult> r =
      RunBatch({Command::ForWorker(1, "show info"), Command::Master("show version")},
               absl::Milliseconds(100));
  EXPECT_EQ(r[0].status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r[1].status().code(), absl::StatusCode::kDeadlineExceeded);
  stuck = false;
  std::vector<CommandResult> next = RunBatch({Command::Master("show version")});
  EXPECT_EQ(*next[0], "2.6.12-1+deb12u4\n\n");  // not the late reply of the stuck command
}

TEST_F(MasterClientTest, ReloadClosesTheConnectionAndTheClientComesBack) {
  StartMaster(Answer);
  MasterClient& client = Client();
  int lost = 0;
  base::Subscription subscription = client.AddConnectionLostListener([&] { ++lost; });
  RunUntil([&] { return client.reachable(); });
  master_->CloseAll();  // what a reload does to every master connection
  RunUntil([&] { return lost == 1; });
  RunUntil([&] { return client.reachable(); });
  EXPECT_TRUE(RunBatch({Command::Master("show version")})[0].ok());
}

TEST_F(MasterClientTest, ReloadCommandCompletesAtEof) {
  StartMaster([](const std::string& line) -> std::string {
    if (line == "reload") return "<close>";  // 2.6: no reply, the connection closes
    return Answer(line);
  });
  Client();
  Command reload = Command::Master("reload");
  reload.closes_connection = true;
  std::vector<CommandResult> r = RunBatch({reload});
  ASSERT_TRUE(r[0].ok()) << r[0].status();
  EXPECT_EQ(*r[0], "");
}

TEST_F(MasterClientTest, NeverMoreThanTwoConnections) {
  StartMaster([](const std::string& line) -> std::string { return Answer(line); });
  MasterClientOptions options;
  options.max_connections = 2;
  Client(options);
  int finished = 0;
  for (int i = 0; i < 20; ++i) {
    client_->Submit({Command::ForWorker(1, "get weight be/s"), Command::Master("show version")},
                    [&](std::vector<CommandResult> r) {
                      EXPECT_TRUE(r[0].ok());
                      ++finished;
                    });
  }
  RunUntil([&] { return finished == 20; });
  EXPECT_LE(master_->max_open(), 2);
  EXPECT_LE(client_->stats().max_open_connections, 2);
}

TEST_F(MasterClientTest, UnreachableThenReachable) {
  MasterClientOptions options;
  options.max_retry_interval = absl::Milliseconds(20);
  Client(options);
  std::vector<CommandResult> r =
      RunBatch({Command::Master("show version")}, absl::Milliseconds(50));
  EXPECT_EQ(r[0].status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(client_->reachable());
  StartMaster(Answer);
  RunUntil([&] { return client_->reachable(); });
  EXPECT_TRUE(RunBatch({Command::Master("show version")})[0].ok());
}

TEST_F(MasterClientTest, SlowHandshakeIsReportedKeepsItsPlaceAndTriesASecondConnection) {
  StartMaster(Answer);
  master_->HoldPrompts();
  MasterClientOptions options;
  options.handshake_report_after = absl::Milliseconds(20);
  options.handshake_give_up_after = absl::Seconds(30);
  Client(options);
  RunUntil([&] { return absl::StrContains(client_->last_error().message(), "still waiting"); });
  EXPECT_FALSE(client_->reachable());
  RunUntil([&] { return master_->accepted() == 2; });
  master_->ReleasePrompts();
  RunUntil([&] { return client_->reachable(); });
  EXPECT_TRUE(RunBatch({Command::Master("show version")})[0].ok());
  EXPECT_EQ(master_->accepted(), 2) << "the client closed a connection the master would serve";
  EXPECT_LE(master_->max_open(), 2);
}

TEST_F(MasterClientTest, OneWedgedConnectionDoesNotKeepTheMasterUnreachable) {
  StartMaster(Answer);
  master_->HoldPrompts(1);
  MasterClientOptions options;
  options.handshake_report_after = absl::Milliseconds(20);
  options.handshake_give_up_after = absl::Seconds(30);
  Client(options);
  // Well before the 30 s give-up: RunUntil fails after 5 s.
  RunUntil([&] { return client_->reachable(); });
  EXPECT_TRUE(RunBatch({Command::Master("show version")})[0].ok());
  EXPECT_EQ(master_->accepted(), 2);
}

TEST_F(MasterClientTest, HandshakeThatNeverCompletesIsGivenUpAndRetried) {
  StartMaster(Answer);
  master_->HoldPrompts();
  MasterClientOptions options;
  options.handshake_report_after = absl::Milliseconds(10);
  options.handshake_give_up_after = absl::Milliseconds(50);
  options.max_retry_interval = absl::Milliseconds(10);
  Client(options);
  RunUntil([&] { return master_->closed_while_held() >= 1; });
  EXPECT_TRUE(absl::StrContains(client_->last_error().message(), "connecting again"))
      << client_->last_error();
  RunUntil([&] { return master_->accepted() >= 3; });
  EXPECT_LE(master_->max_open(), 2);
  master_->ReleasePrompts();
  RunUntil([&] { return client_->reachable(); });
}

// A master that accepts and then closes during the prompt handshake is a failed connect: the
// client retries with backoff (5 ms doubling to 250 ms), never in a tight loop.
TEST_F(MasterClientTest, AHandshakeClosedByTheMasterIsRetriedWithBackoff) {
  StartMaster(Answer);
  master_->ClosePrompts(std::numeric_limits<int>::max());
  Client();
  bool window_over = false;
  uv::Timer window(loop_.get());
  window.Start(absl::Milliseconds(400), [&] { window_over = true; });
  RunUntil([&] { return window_over; });
  // 5 + 10 + 20 + 40 + 80 + 160 ms: about 7 attempts fit in 400 ms (the loop without backoff
  // made thousands).
  EXPECT_GE(master_->accepted(), 3);
  EXPECT_LE(master_->accepted(), 12);
  EXPECT_FALSE(client_->reachable());
  EXPECT_GE(client_->stats().connect_failures, 3u);
  master_->ClosePrompts(0);
  RunUntil([&] { return client_->reachable(); });
  EXPECT_TRUE(RunBatch({Command::Master("show version")})[0].ok());
}

TEST_F(MasterClientTest, InvalidCommandIsRejectedBeforeSending) {
  StartMaster(Answer);
  Client();
  bool in_submit = true;
  bool called_in_submit = false;
  bool finished = false;
  std::vector<CommandResult> r;
  client_->Submit({Command::Master("show version"), Command::Master("show info; reload")},
                  [&](std::vector<CommandResult> results) {
                    called_in_submit = in_submit;
                    r = std::move(results);
                    finished = true;
                  });
  in_submit = false;
  RunUntil([&] { return finished; });
  EXPECT_FALSE(called_in_submit);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r[1].status().code(), absl::StatusCode::kInvalidArgument);
  for (const std::string& line : master_->lines()) EXPECT_NE(line, "show version");
}

// A fake 3.2+ master for `@@!<pid>` lines: each command of the line answers like Answer() would
// answer it alone (without the prompt), `set server be/nope` is "No such server.", and the
// master's prompt follows the whole line, as 3.2.26 and 3.4.7 do. `exit_after` commands into a
// line, the worker "exits": the rest of the line gets no reply.
std::string WholeLineAnswer(const std::string& line, size_t exit_after = 1000) {
  if (!absl::StartsWith(line, "@@!")) return Answer(line);
  if (absl::StartsWith(line, "@@!999")) {
    return "Can't find the target PID matching the prefix '@@!999'\nmaster> ";
  }
  std::string body = line.substr(line.find(' ') + 1);
  std::string out;
  size_t n = 0;
  for (absl::string_view command : absl::StrSplit(body, "; ")) {
    if (n++ == exit_after) break;
    if (absl::StrContains(command, "be/nope")) {
      out += "No such server.\n\n";
    } else {
      std::string one = Answer(std::string(command));
      out += one.substr(0, one.size() - std::string("master> ").size());
    }
  }
  return out + "master> ";
}

MasterClientOptions WholeLines() {
  MasterClientOptions options;
  options.dialect = Dialect::kMasterWholeLines;
  return options;
}

TEST_F(MasterClientTest, WholeLineCarriesManyCommandsAndAttributesEachReply) {
  StartMaster([](const std::string& line) { return WholeLineAnswer(line); });
  Client(WholeLines());
  std::vector<CommandResult> r = RunBatch(
      {Command::ForWorker(7, "set weight be/s 3"),
       Command::ForWorker(7, "set server be/nope weight 3"),
       Command::ForWorker(7, "get weight be/s"), Command::Master("show version"),
       Command::ForWorker(7, "get weight be/s"), Command::ForWorker(7, "set weight be/s 4")});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(*r[0], "\n");
  EXPECT_EQ(*r[1], "No such server.\n\n");  // exactly that command failed
  EXPECT_EQ(*r[2], "20 (initial 50)\n\n");
  EXPECT_EQ(*r[3], "2.6.12-1+deb12u4\n\n");
  EXPECT_EQ(*r[4], "20 (initial 50)\n\n");
  EXPECT_EQ(*r[5], "\n");
  // Three lines to the master after `prompt`: one `@@!7` line of three commands, the master
  // command, and a second `@@!7` line — each sent only once the one before was answered.
  std::vector<std::string> sent(master_->lines().begin() + 1, master_->lines().end());
  ASSERT_EQ(sent.size(), 3u) << absl::StrJoin(sent, " | ");
  EXPECT_EQ(sent[0], "@@!7 set weight be/s 3; set server be/nope weight 3; get weight be/s");
  EXPECT_EQ(sent[1], "show version");
  EXPECT_EQ(sent[2], "@@!7 get weight be/s; set weight be/s 4");
  EXPECT_EQ(client_->stats().whole_lines, 2u);
}

TEST_F(MasterClientTest, WholeLinesStayWithinTheLineLimit) {
  StartMaster([](const std::string& line) { return WholeLineAnswer(line); });
  Client(WholeLines());
  std::vector<Command> commands;
  for (int i = 0; i < 2000; ++i) commands.push_back(Command::ForWorker(7, "set weight be/s 3"));
  std::vector<CommandResult> r = RunBatch(commands);
  ASSERT_EQ(r.size(), 2000u);
  for (const CommandResult& result : r) EXPECT_EQ(*result, "\n");
  for (size_t i = 1; i < master_->lines().size(); ++i) {
    EXPECT_LE(master_->lines()[i].size() + 1, kMaxLineBytes);
  }
  EXPECT_GT(master_->lines().size(), 3u);
}

TEST_F(MasterClientTest, AWorkerThatExitsMidLineLeavesTheRestUnansweredNotMisattributed) {
  StartMaster([](const std::string& line) { return WholeLineAnswer(line, /*exit_after=*/2); });
  Client(WholeLines());
  std::vector<CommandResult> r = RunBatch(
      {Command::ForWorker(7, "get weight be/s"), Command::ForWorker(7, "set weight be/s 3"),
       Command::ForWorker(7, "get weight be/s"), Command::ForWorker(7, "set weight be/s 4")});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(*r[0], "20 (initial 50)\n\n");
  EXPECT_EQ(*r[1], "\n");
  for (int i : {2, 3}) {
    EXPECT_EQ(r[i].status().code(), absl::StatusCode::kUnavailable) << r[i].status();
    EXPECT_TRUE(absl::StrContains(r[i].status().message(), "may or may not have run"));
  }
  // The connection still serves: the prompt came.
  std::vector<CommandResult> next = RunBatch({Command::Master("show version")});
  EXPECT_TRUE(next[0].ok());
}

TEST_F(MasterClientTest, AWholeLineToAGoneWorkerFailsEveryCommandOfIt) {
  StartMaster([](const std::string& line) { return WholeLineAnswer(line); });
  Client(WholeLines());
  std::vector<CommandResult> r = RunBatch(
      {Command::ForWorker(999, "get weight be/s"), Command::ForWorker(999, "set weight be/s 3")});
  ASSERT_EQ(r.size(), 2u);
  for (const CommandResult& result : r) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound) << result.status();
  }
}

TEST_F(MasterClientTest, AWholeLineReplyWithMoreThanItsCommandsPoisonsTheConnection) {
  StartMaster([](const std::string& line) -> std::string {
    if (absl::StartsWith(line, "@@!")) return "\n\n\nmaster> ";  // three replies for two
    return Answer(line);
  });
  Client(WholeLines());
  std::vector<CommandResult> r = RunBatch(
      {Command::ForWorker(7, "set weight be/s 3"), Command::ForWorker(7, "set weight be/s 4")});
  ASSERT_EQ(r.size(), 2u);
  for (const CommandResult& result : r) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  }
  RunUntil([&] { return master_->accepted() >= 2; });  // dropped, and a new one opened
}

// haproxy#3351: closing a connection whose relayed command is unanswered does not give the
// master's slot back. Past the deadline the batch fails, the connection is kept (held, and
// reported), its late replies are read and dropped, and it then serves again.
TEST_F(MasterClientTest, ADeadlineWithARelayedCommandUnansweredKeepsTheConnection) {
  StartMaster([](const std::string& line) -> std::string {
    if (absl::StrContains(line, "show info")) return "<silent>";
    return Answer(line);
  });
  MasterClientOptions options;
  options.max_connections = 1;
  Client(options);
  std::vector<CommandResult> r =
      RunBatch({Command::ForWorker(7, "show info"), Command::Master("show version")},
               absl::Milliseconds(100));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r[1].status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(master_->open(), 1);
  EXPECT_EQ(client_->stats().held_connections, 1);
  ASSERT_EQ(client_->held().size(), 1u);
  EXPECT_EQ(client_->held()[0].pid, 7);
  EXPECT_EQ(client_->held()[0].command, "@!7 show info");

  // Its one connection held, the client opens no other: the next batch waits for it.
  bool finished = false;
  std::vector<CommandResult> next;
  client_->Submit({Command::Master("show version")}, [&](std::vector<CommandResult> results) {
    next = std::move(results);
    finished = true;
  });
  bool waited = false;
  uv::Timer wait(loop_.get());
  wait.Start(absl::Milliseconds(100), [&] { waited = true; });
  RunUntil([&] { return waited; });
  EXPECT_FALSE(finished);
  master_->ReleaseSilent("Name: HAProxy\nPid: 7\n\nmaster> ");  // the worker answers at last
  RunUntil([&] { return finished; });
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(*next[0], "2.6.12-1+deb12u4\n\n");  // not a late reply of the held batch
  EXPECT_EQ(master_->accepted(), 1) << "the held connection was closed";
  EXPECT_EQ(client_->stats().held_connections, 0);
  EXPECT_EQ(client_->stats().connections_held_total, 1u);
}

// HAProxy 2.6 answers a command it cannot relay to an exiting worker with a bare prompt, then
// closes the connection and keeps its slot. The client tells its listener, sends that worker
// nothing more until told otherwise, and other workers' batches go on.
TEST_F(MasterClientTest, AfterTheMasterClosesRightAfterARelayThatWorkerGetsNothingMore) {
  StartMaster([](const std::string& line) -> std::string {
    if (absl::StartsWith(line, "@!7 ")) return "master> <close>";
    return Answer(line);
  });
  Client();
  std::vector<int> closed;
  base::Subscription subscription =
      client_->AddRelayClosedListener([&](int pid) { closed.push_back(pid); });
  RunBatch({Command::ForWorker(7, "show info")});
  RunUntil([&] { return !closed.empty(); });
  EXPECT_EQ(closed, std::vector<int>{7});
  EXPECT_FALSE(client_->RelayAllowed(7));
  for (int i = 0; i < 5; ++i) {
    std::vector<CommandResult> r = RunBatch({Command::ForWorker(7, "show info")});
    EXPECT_EQ(r[0].status().code(), absl::StatusCode::kUnavailable) << r[0].status();
    EXPECT_TRUE(absl::StrContains(r[0].status().message(), "not sent")) << r[0].status();
  }
  EXPECT_EQ(std::count(master_->lines().begin(), master_->lines().end(), "@!7 show info"), 1);
  EXPECT_TRUE(RunBatch({Command::ForWorker(1, "get weight be/s")})[0].ok());
  EXPECT_EQ(client_->stats().relay_closes, 1u);
  client_->SetRelayWindow(7, absl::InfiniteDuration());  // the registry found it was a reload
  EXPECT_TRUE(client_->RelayAllowed(7));
}

// A master that closes every connection once hawk sends on it (issue 25's debug log: about 200
// reconnects a second) is reconnected to with a delay that grows while the closes go on; a
// connection that served a while (a reload closes those) is reconnected at once.
TEST_F(MasterClientTest, EveryCloseByTheMasterBacksOffMoreWhileTheyComeInARow) {
  StartMaster([](const std::string&) -> std::string { return "<close>"; });
  Client();
  bool window_over = false;
  uv::Timer window(loop_.get());
  window.Start(absl::Milliseconds(500), [&] { window_over = true; });
  // Like the registry: a new batch as soon as the last one failed.
  std::function<void()> again = [&] {
    if (window_over) return;
    client_->Submit({Command::Master("show proc")}, [&](std::vector<CommandResult>) { again(); });
  };
  again();
  RunUntil([&] { return window_over; });
  // 5 + 10 + 20 + 40 + 80 + 160 ms between reconnects: about 7 fit in 500 ms (without the
  // backoff, one every 5 ms: a hundred).
  EXPECT_GE(master_->accepted(), 3);
  EXPECT_LE(master_->accepted(), 10);
  EXPECT_GE(client_->stats().connections_lost, 3u);
}

TEST_F(MasterClientTest, AConnectionThatServedAWhileIsReconnectedAtOnceAfterAClose) {
  StartMaster(Answer);
  MasterClientOptions options;
  options.stable_after = absl::Milliseconds(50);
  Client(options);
  for (int reload = 1; reload <= 5; ++reload) {
    RunUntil([&] { return client_->reachable(); });
    bool served = false;  // past stable_after
    uv::Timer wait(loop_.get());
    wait.Start(absl::Milliseconds(60), [&] { served = true; });
    RunUntil([&] { return served; });
    int accepted = master_->accepted();
    master_->CloseAll();  // a reload
    bool back = false;
    uint64_t closed_at = uv_now(loop_.get());
    RunUntil([&] {
      back = master_->accepted() > accepted;
      return back;
    });
    EXPECT_LE(uv_now(loop_.get()) - closed_at, 30u) << "reload " << reload;
  }
}

// Reloads faster than stable_after: each closes a young connection, but once the registry has
// seen the master re-execute (ForgetCloseStreak), the next close backs off as a first one.
TEST_F(MasterClientTest, ClosesForgottenAsReloadsDoNotBackOffTheNextReconnect) {
  StartMaster(Answer);
  MasterClientOptions options;
  options.stable_after = absl::Seconds(10);  // every connection here is young
  Client(options);
  for (int reload = 1; reload <= 8; ++reload) {
    RunUntil([&] { return client_->reachable(); });
    int accepted = master_->accepted();
    master_->CloseAll();
    uint64_t closed_at = uv_now(loop_.get());
    RunUntil([&] { return master_->accepted() > accepted; });
    EXPECT_LE(uv_now(loop_.get()) - closed_at, 30u) << "reload " << reload;
    client_->ForgetCloseStreak();  // the registry saw the master's reload counter move
  }
}

TEST_F(MasterClientTest, CommandsGoOnlyToListedWorkersAndWithinTheirRelayWindow) {
  StartMaster(Answer);
  Client();
  client_->SetListedWorkers({1, 7});
  std::vector<CommandResult> r = RunBatch({Command::ForWorker(9, "get weight be/s")});
  EXPECT_EQ(r[0].status().code(), absl::StatusCode::kNotFound) << r[0].status();
  EXPECT_TRUE(absl::StrContains(r[0].status().message(), "not listed")) << r[0].status();

  // A batch must reach the worker 100 ms (+ 0.5 ms a command) before its window closes.
  client_->SetRelayWindow(7, absl::Milliseconds(250), "its grace period may be over");
  EXPECT_TRUE(RunBatch({Command::ForWorker(7, "get weight be/s")})[0].ok());
  bool passed = false;
  uv::Timer wait(loop_.get());
  wait.Start(absl::Milliseconds(200), [&] { passed = true; });
  RunUntil([&] { return passed; });
  r = RunBatch(
      {Command::ForWorker(7, "get weight be/s"), Command::ForWorker(1, "get weight be/s")});
  EXPECT_EQ(r[0].status().code(), absl::StatusCode::kUnavailable) << r[0].status();
  EXPECT_TRUE(absl::StrContains(r[0].status().message(), "grace period may be over"));
  EXPECT_TRUE(RunBatch({Command::ForWorker(1, "get weight be/s")})[0].ok());
  EXPECT_EQ(std::count(master_->lines().begin(), master_->lines().end(), "@!9 get weight be/s"), 0);
  EXPECT_EQ(std::count(master_->lines().begin(), master_->lines().end(), "@!7 get weight be/s"), 1);
  EXPECT_GE(client_->stats().batches_held_back, 2u);
}

// A reload closes every master connection and tells the old workers to stop: what was queued
// for a worker is failed unsent, and what comes next waits until the master has listed its
// workers again; master commands go on meanwhile.
TEST_F(MasterClientTest, AfterTheMasterClosesAConnectionRelaysWaitForTheNextListing) {
  StartMaster(Answer);
  Client();
  client_->SetListedWorkers({1});
  RunUntil([&] { return client_->reachable(); });
  master_->CloseAll();
  RunUntil([&] { return client_->stats().connections_lost >= 1; });
  bool finished = false;
  std::vector<CommandResult> relayed;
  client_->Submit({Command::ForWorker(1, "get weight be/s")},
                  [&](std::vector<CommandResult> results) {
                    relayed = std::move(results);
                    finished = true;
                  });
  EXPECT_TRUE(RunBatch({Command::Master("show version")})[0].ok());  // on the new connection
  EXPECT_FALSE(finished);
  EXPECT_EQ(std::count(master_->lines().begin(), master_->lines().end(), "@!1 get weight be/s"), 0);
  client_->SetListedWorkers({1});
  RunUntil([&] { return finished; });
  EXPECT_TRUE(relayed[0].ok()) << relayed[0].status();
}

// Slots the master keeps for sessions it closed on hawk are hawk's: it opens that many fewer
// connections, never fewer than one.
TEST_F(MasterClientTest, SlotsLostCountAgainstTheConnectionsHawkOpens) {
  StartMaster(Answer);
  MasterClientOptions options;
  options.max_connections = 2;
  Client(options);
  client_->SetSlotsLost(1);
  EXPECT_EQ(client_->ConnectionBudget(), 1);
  int finished = 0;
  for (int i = 0; i < 20; ++i) {
    client_->Submit({Command::ForWorker(1, "get weight be/s")},
                    [&](std::vector<CommandResult>) { ++finished; });
  }
  RunUntil([&] { return finished == 20; });
  EXPECT_EQ(master_->max_open(), 1);
  client_->SetSlotsLost(5);
  EXPECT_EQ(client_->ConnectionBudget(), 1);
  EXPECT_TRUE(RunBatch({Command::Master("show version")})[0].ok());
  client_->SetSlotsLost(0);
  EXPECT_EQ(client_->ConnectionBudget(), 2);
}

// A worker's own stats socket (--worker-socket), as HAProxy 2.6-3.4 answer on it in prompt
// mode: `> ` after every reply, `show info` names the worker's pid. `pid` is the worker the
// socket leads to now; `name_pid` false: `show info` without its Pid line.
std::string WorkerAnswer(int pid, bool name_pid, const std::string& line) {
  if (line == "show info") {
    return absl::StrCat("Name: HAProxy\nVersion: 3.2.26\n",
                        name_pid ? absl::StrCat("Pid: ", pid, "\n") : "",
                        "Uptime_sec: 5\nStopping: 0\nCurrConns: 0\n\n> ");
  }
  if (line == "get weight be/s") return "20 (initial 50)\n\n> ";
  if (line == "set weight be/s 3") return "\n> ";
  return "Unknown command.\n\n> ";  // a `@!<pid>` prefix too: a worker does not know it
}

MasterClientOptions WorkerSocket() {
  MasterClientOptions options;
  options.dialect = Dialect::kWorkerSocket;
  options.max_retry_interval = absl::Milliseconds(20);
  return options;
}

// The worker-socket dialect: the handshake asks `show info` which worker the connection reached
// (worker_pid()), commands go without their `@!<pid>` prefix and are framed by the worker's
// `> ` prompt, and the master's relay bookkeeping (listing, windows) does not apply.
TEST_F(MasterClientTest, AWorkerSocketConfirmsItsWorkerAndSendsCommandsWithoutPrefix) {
  int pid = 4242;
  bool name_pid = true;
  StartMaster([&](const std::string& line) { return WorkerAnswer(pid, name_pid, line); });
  master_->SetPrompt("> ");
  MasterClient& client = Client(WorkerSocket());
  EXPECT_EQ(client.dialect(), Dialect::kWorkerSocket);
  EXPECT_EQ(client.worker_pid(), 0);  // not confirmed yet
  RunUntil([&] { return client.reachable(); });
  EXPECT_EQ(client.worker_pid(), 4242);
  ASSERT_GE(master_->lines().size(), 2u);
  EXPECT_EQ(master_->lines()[0], "prompt");
  EXPECT_EQ(master_->lines()[1], "show info");

  client.SetListedWorkers({1});  // the master's listing: not this socket's business
  std::vector<CommandResult> r = RunBatch(
      {Command::ForWorker(4242, "get weight be/s"), Command::ForWorker(4242, "set weight be/s 3")});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(*r[0], "20 (initial 50)\n\n");
  EXPECT_EQ(*r[1], "\n");
  std::vector<std::string> sent(master_->lines().begin() + 2, master_->lines().end());
  EXPECT_EQ(sent, (std::vector<std::string>{"get weight be/s", "set weight be/s 3"}));
  EXPECT_EQ(client.stats().batches_held_back, 0u);
  EXPECT_EQ(client.stats().whole_lines, 0u);

  // After a reload the path leads to the new worker: Reconnect asks again.
  pid = 4343;
  client.Reconnect();
  EXPECT_EQ(client.worker_pid(), 0);
  RunUntil([&] { return client.worker_pid() == 4343; });
  EXPECT_TRUE(client.reachable());
  EXPECT_EQ(*RunBatch({Command::ForWorker(4343, "get weight be/s")})[0], "20 (initial 50)\n\n");
}

// A socket whose `show info` names no pid does not count as reached: the client reports why,
// connects again, and is reachable once a worker answers for itself. A close by the worker makes
// it unreachable (its next connection may lead to another worker) and tells the listeners.
TEST_F(MasterClientTest, AWorkerSocketIsReachableOnlyOnceAWorkerNamedItself) {
  int pid = 4242;
  bool name_pid = false;
  StartMaster([&](const std::string& line) { return WorkerAnswer(pid, name_pid, line); });
  master_->SetPrompt("> ");
  MasterClient& client = Client(WorkerSocket());
  int lost = 0;
  base::Subscription subscription = client.AddConnectionLostListener([&] { ++lost; });
  RunUntil([&] { return absl::StrContains(client.last_error().message(), "did not name a pid"); });
  EXPECT_FALSE(client.reachable());
  EXPECT_EQ(client.worker_pid(), 0);
  EXPECT_TRUE(absl::StrContains(client.last_error().message(), "worker socket"))
      << client.last_error();
  name_pid = true;
  RunUntil([&] { return client.reachable(); });
  EXPECT_EQ(client.worker_pid(), 4242);
  EXPECT_GE(master_->accepted(), 2);

  master_->CloseAll();  // the worker exits (a reload)
  RunUntil([&] { return lost == 1; });
  pid = 4343;
  RunUntil([&] { return client.worker_pid() == 4343; });
  EXPECT_TRUE(client.reachable());
}

}  // namespace
}  // namespace hawk::cli

#include "tests/unit/fake_master/fake_master.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/base/address.h"
#include "agent/cli/command.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::fake {
namespace {

constexpr char kVersion[] = "2.6.12-1+deb12u4";

// The first `count` lines of a fixture, each with its LF.
std::string FixtureLines(absl::string_view name, size_t count) {
  std::string text = Fixture(name);
  size_t end = 0;
  for (size_t i = 0; i < count && end != std::string::npos; ++i) {
    end = text.find('\n', end);
    if (end != std::string::npos) ++end;
  }
  return end == std::string::npos ? text : text.substr(0, end);
}

}  // namespace

std::string Fixture(absl::string_view name) { return parse::testing::ReadFixture("2.6", name); }

struct FakeMaster::Conn {
  int id = 0;  // in the order of accept(), from 1
  std::unique_ptr<uv::Stream> stream;
  std::string buffer;
  bool prompt = false;
  bool closed = false;
  bool in_payload = false;
  std::string payload_command;  // the line that opened the payload, without " <<"
  std::string payload;          // its lines so far, each ended by LF
};

FakeMaster::FakeMaster(uv_loop_t* loop, std::string socket_path, int master_pid,
                       const plan::ObservedWorker& config)
    : loop_(loop), path_(std::move(socket_path)), master_pid_(master_pid), config_(config) {}

FakeMaster::~FakeMaster() = default;

void FakeMaster::Listen() {
  auto listener = uv::Listener::Create(
      loop_, base::Address{base::Address::Kind::kUnix, path_, "", 0},
      [this](std::unique_ptr<uv::Stream> stream) { Accept(std::move(stream)); });
  ASSERT_TRUE(listener.ok()) << listener.status();
  listener_ = *std::move(listener);
}

FakeWorker& FakeMaster::AddWorker(int pid) {
  workers_.erase(pid);
  FakeWorker& worker = workers_.try_emplace(pid, pid, config_).first->second;
  // Only hawk's own CLI session (the fixture's second line).
  worker.sessions = absl::StrCat(
      "0x7efee4039b60: proto=sockpair src=unix:2 fe=GLOBAL be=<NONE> srv=<none> ts=00 epoch=0x1 "
      "age=0s calls=1 rate=0 cpu=0 lat=0 rq[f=c08000h,i=0,an=00h,rx=,wx=,ax=] "
      "rp[f=80008002h,i=0,an=00h,rx=,wx=,ax=] scf=[8,200h,fd=6] scb=[8,1h,fd=-1] exp= rc=0 "
      "c_exp=\n\n");
  return worker;
}

FakeWorker& FakeMaster::FinishStarting(int pid) {
  starting_.erase(std::remove(starting_.begin(), starting_.end(), pid), starting_.end());
  return AddWorker(pid);
}

FakeWorker& FakeMaster::Reload(int new_pid) {
  ++master_reloads_;
  for (auto& [pid, worker] : workers_) {
    worker.stopping = true;
    ++worker.reloads;
  }
  FakeWorker& fresh = AddWorker(new_pid);
  CloseAllConnections();
  return fresh;
}

void FakeMaster::CloseAllConnections() {
  for (auto& conn : conns_) Close(conn.get());
}

FakeWorker* FakeMaster::worker(int pid) {
  auto it = workers_.find(pid);
  return it == workers_.end() ? nullptr : &it->second;
}

void FakeMaster::Accept(std::unique_ptr<uv::Stream> stream) {
  ++accepted_;
  auto conn = std::make_unique<Conn>();
  conn->id = accepted_;
  conn->stream = std::move(stream);
  Conn* raw = conn.get();
  conns_.push_back(std::move(conn));
  absl::Status status =
      raw->stream->StartReading([this, raw](absl::string_view bytes) { OnData(raw, bytes); },
                                [this, raw](absl::Status) { Close(raw); });
  EXPECT_TRUE(status.ok()) << status;
}

void FakeMaster::Close(Conn* conn) {
  if (conn->closed) return;
  conn->closed = true;
  conn->stream->Close();
}

void FakeMaster::Reply(Conn* conn, const std::string& text) {
  (void)conn->stream->Write(conn->prompt ? absl::StrCat(text, "master> ") : text);
}

void FakeMaster::OnData(Conn* conn, absl::string_view bytes) {
  conn->buffer.append(bytes.data(), bytes.size());
  size_t nl;
  // Like the master, one command at a time: each reply is written before the next line is read.
  while (!conn->closed && (nl = conn->buffer.find('\n')) != std::string::npos) {
    std::string line = conn->buffer.substr(0, nl);
    conn->buffer.erase(0, nl + 1);
    if (conn->in_payload) {
      if (line.empty()) {
        conn->in_payload = false;
        RunLine(conn, conn->payload_command, std::move(conn->payload));
        conn->payload.clear();
        continue;
      }
      absl::StrAppend(&conn->payload, line, "\n");
      if (conn->prompt) (void)conn->stream->Write("+ ");
      continue;
    }
    // 2.6 starts a payload only when the line ends exactly with "<<".
    if (absl::EndsWith(line, " <<")) {
      conn->in_payload = true;
      conn->payload_command = line.substr(0, line.size() - 3);
      if (conn->prompt) (void)conn->stream->Write("+ ");
      continue;
    }
    RunLine(conn, line, {});
  }
}

void FakeMaster::RunLine(Conn* conn, const std::string& line, std::string payload) {
  if (!absl::StartsWith(line, "@!")) {
    master_lines_.push_back(line);
    master_line_connections_.push_back(conn->id);
    if (line == "reload" && next_reload_pid_ != 0) {
      Reload(next_reload_pid_++);  // 2.6 answers nothing: the connection closes
      return;
    }
    if (line == "prompt") {
      conn->prompt = !conn->prompt;
      if (conn->prompt) (void)conn->stream->Write("master> ");
      return;
    }
    Reply(conn, line == "show proc" ? ShowProc() : MasterUnknownCommand());
    return;
  }
  size_t space = line.find(' ');
  std::string prefix = line.substr(0, space);
  int pid = 0;
  FakeWorker* target = nullptr;
  if (space != std::string::npos && absl::SimpleAtoi(prefix.substr(2), &pid)) target = worker(pid);
  if (target == nullptr) {
    unrouted_lines_.push_back(line);
    // A master error has no blank line; 2.6 then closes the connection, dropping what follows.
    conn->closed = true;
    std::string error = absl::StrCat("Can't find the target PID matching the prefix '", prefix,
                                     "'\n", conn->prompt ? "master> " : "");
    uv::Stream* stream = conn->stream.get();
    absl::Status written =
        stream->Write(std::move(error), [stream](absl::Status) { stream->Close(); });
    if (!written.ok()) stream->Close();
    return;
  }
  ReceivedCommand command{line.substr(space + 1), std::move(payload)};
  target->received.push_back(command);
  if (cut_hook_ && cut_hook_(pid, command)) {
    ++cuts_;
    Close(conn);
    return;
  }
  Reply(conn, Execute(target, command));
}

std::string FakeMaster::ShowProc() const {
  std::string out = FixtureLines("show_proc.txt", 1);  // the `#<PID> <type> …` header
  absl::StrAppend(&out, absl::StrFormat("%-15d %-15s %-15s %-15s %-15s\n", master_pid_, "master",
                                        absl::StrFormat("%d [failed: 0]", master_reloads_),
                                        "0d00h00m05s", kVersion));
  auto rows = [&](bool stopping) {
    for (const auto& [pid, worker] : workers_) {
      if (worker.stopping != stopping) continue;
      absl::StrAppend(&out, absl::StrFormat("%-15d %-15s %-15d %-15s %-15s\n", pid, "worker",
                                            worker.reloads, "0d00h00m02s", kVersion));
    }
  };
  out += "# workers\n";
  for (int pid : starting_) {
    absl::StrAppend(&out, absl::StrFormat("%-15d %-15s %-15d %-15s %-15s\n", pid, "worker", 0,
                                          "0d00h00m00s", kVersion));
  }
  rows(false);
  bool any_old = std::any_of(workers_.begin(), workers_.end(),
                             [](const auto& entry) { return entry.second.stopping; });
  if (any_old) {
    out += "# old workers\n";
    rows(true);
  }
  out += "# programs\n\n";
  return out;
}

std::string FakeMaster::MasterUnknownCommand() const {
  std::string help = Fixture("master_help.txt");
  help.erase(0, help.find('\n') + 1);  // "The following commands are valid at this level:"
  return absl::StrCat("Unknown command. Please enter one of the following commands only:\n", help);
}

std::string FakeMaster::ShowInfo(const FakeWorker& worker) const {
  std::vector<std::string> lines = absl::StrSplit(Fixture("worker_show_info.txt"), '\n');
  for (std::string& line : lines) {
    if (absl::StartsWith(line, "Pid: ")) line = absl::StrCat("Pid: ", worker.pid);
    if (absl::StartsWith(line, "Stopping: ")) {
      line = absl::StrCat("Stopping: ", worker.stopping ? 1 : 0);
    }
  }
  return absl::StrJoin(lines, "\n");
}

std::string FakeMaster::Execute(FakeWorker* worker, const ReceivedCommand& command) {
  std::vector<std::string> args = plan::testing::SplitCliWords(command.line);
  args.resize(std::max<size_t>(args.size(), 2));
  if (args[0] == "show" && args[1] == "info") return ShowInfo(*worker);
  if (args[0] == "show" && args[1] == "sess") return worker->sessions;
  // Everything else reads or changes the worker's runtime state.
  return worker->runtime.Answer(
      cli::Command::ForWorkerWithPayload(worker->pid, command.line, command.payload));
}

}  // namespace hawk::fake

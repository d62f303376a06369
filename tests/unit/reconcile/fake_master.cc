#include "tests/unit/reconcile/fake_master.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/types/optional.h"
#include "agent/base/address.h"
#include "gtest/gtest.h"

namespace hawk::reconcile::fake {
namespace {

constexpr char kVersion[] = "2.6.12-1+deb12u4";
constexpr char kUnknownMap[] = "Unknown map identifier. Please use #<id> or <file>.\n\n";

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

// HAProxy's cli_parse_request: words end at an unescaped space or tab; a backslash makes the
// next byte literal.
std::vector<std::string> SplitWords(absl::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    std::string word;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      word.push_back(line[i++]);
    }
    words.push_back(std::move(word));
  }
  return words;
}

// src/map.c cli_parse_add_map, payload form: the key up to the first blank, then the blanks are
// skipped and the rest of the line is the value.
FakeMapEntry PayloadEntry(absl::string_view line) {
  size_t blank = line.find_first_of(" \t");
  if (blank == absl::string_view::npos) return {std::string(line), ""};
  size_t value = line.find_first_not_of(" \t", blank);
  return {std::string(line.substr(0, blank)),
          value == absl::string_view::npos ? "" : std::string(line.substr(value))};
}

// The admin bits `show servers state` prints (srv_admin_state): FMAINT 0x01, FDRAIN 0x08.
int AdminBits(FakeServerState state) {
  switch (state) {
    case FakeServerState::kReady:
      return 0;
    case FakeServerState::kDrain:
      return 0x08;
    case FakeServerState::kMaint:
      return 0x01;
  }
  return 0;
}

}  // namespace

std::string Fixture(absl::string_view name) {
  std::string path = absl::StrCat(HAWK_FIXTURES_DIR, "/haproxy-2.6/", name);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read fixture " << path;
    return "";
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct FakeMaster::Conn {
  std::unique_ptr<uv::Stream> stream;
  std::string buffer;
  bool prompt = false;
  bool closed = false;
  bool in_payload = false;
  std::string payload_command;  // the line that opened the payload, without " <<"
  std::vector<std::string> payload;
};

FakeMaster::FakeMaster(uv_loop_t* loop, std::string socket_path, int master_pid, FakeRuntime config)
    : loop_(loop),
      path_(std::move(socket_path)),
      master_pid_(master_pid),
      config_(std::move(config)) {}

FakeMaster::~FakeMaster() = default;

void FakeMaster::Listen() {
  auto listener = uv::Listener::Create(
      loop_, base::Address{base::Address::Kind::kUnix, path_, "", 0},
      [this](std::unique_ptr<uv::Stream> stream) { Accept(std::move(stream)); });
  ASSERT_TRUE(listener.ok()) << listener.status();
  listener_ = *std::move(listener);
}

FakeWorker& FakeMaster::AddWorker(int pid) {
  FakeWorker& worker = workers_[pid];
  worker.pid = pid;
  worker.runtime = config_;
  // Only hawk's own CLI session (the fixture's second line).
  worker.sessions = absl::StrCat(
      "0x7efee4039b60: proto=sockpair src=unix:2 fe=GLOBAL be=<NONE> srv=<none> ts=00 epoch=0x1 "
      "age=0s calls=1 rate=0 cpu=0 lat=0 rq[f=c08000h,i=0,an=00h,rx=,wx=,ax=] "
      "rp[f=80008002h,i=0,an=00h,rx=,wx=,ax=] scf=[8,200h,fd=6] scb=[8,1h,fd=-1] exp= rc=0 "
      "c_exp=\n\n");
  return worker;
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
      conn->payload.push_back(std::move(line));
      if (conn->prompt) (void)conn->stream->Write("+ ");
      continue;
    }
    // 2.6 starts a payload only when the line ends exactly with "<<" (reference §4.5).
    if (absl::EndsWith(line, " <<")) {
      conn->in_payload = true;
      conn->payload_command = line.substr(0, line.size() - 3);
      if (conn->prompt) (void)conn->stream->Write("+ ");
      continue;
    }
    RunLine(conn, line, {});
  }
}

void FakeMaster::RunLine(Conn* conn, const std::string& line, std::vector<std::string> payload) {
  if (!absl::StartsWith(line, "@!")) {
    master_lines_.push_back(line);
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

std::string FakeMaster::ShowServersState(const FakeWorker& worker,
                                         const std::string& backend) const {
  std::vector<std::pair<const std::string*, const FakeBackend*>> backends;
  for (const auto& [name, be] : worker.runtime.backends) {
    if (backend.empty() || name == backend) backends.emplace_back(&name, &be);
  }
  if (backends.empty()) return "Can't find backend.\n\n";
  // The format version and the `# be_id be_name …` header.
  std::string out = FixtureLines("worker_show_servers_state_be_app.txt", 2);
  for (const auto& [be_name, be] : backends) {
    std::vector<std::pair<const std::string*, const FakeServer*>> servers;
    for (const auto& [name, server] : be->servers) servers.emplace_back(&name, &server);
    std::sort(servers.begin(), servers.end(),
              [](const auto& a, const auto& b) { return a.second->id < b.second->id; });
    for (const auto& [name, s] : servers) {
      int op_state = s->state == FakeServerState::kMaint ? 0 : 2;
      absl::StrAppend(&out, be->id, " ", *be_name, " ", s->id, " ", *name, " ", s->address, " ",
                      op_state, " ", AdminBits(s->state), " ", s->weight, " ", s->initial_weight,
                      " 0 1 0 ", op_state == 2 ? 2 : 0, " 0 0 0 0 - ", s->port, " - 0 0 - - 0\n");
    }
  }
  out += "\n";
  return out;
}

std::string FakeMaster::ShowMap(const FakeWorker& worker, const std::string& name) const {
  if (name.empty()) {
    std::string out = "# id (file) description\n";
    for (const auto& [file, map] : worker.runtime.maps) {
      absl::StrAppend(&out, map.id, " (", file, ") pattern loaded from file '", file,
                      "' used by map at file '/etc/haproxy/h.cfg' line 13. curr_ver=", map.curr_ver,
                      " next_ver=", map.next_ver, " entry_cnt=", map.entries.size(), "\n");
    }
    return out + "\n";
  }
  auto it = worker.runtime.maps.find(name);
  if (it == worker.runtime.maps.end()) return kUnknownMap;
  std::string out;
  for (size_t i = 0; i < it->second.entries.size(); ++i) {
    const FakeMapEntry& entry = it->second.entries[i];
    absl::StrAppend(&out, absl::StrFormat("0x5579090%02x%03x", it->second.id, i * 0x90), " ",
                    entry.key, " ", entry.value, "\n");
  }
  return out + "\n";
}

std::string FakeMaster::Execute(FakeWorker* worker, const ReceivedCommand& command) {
  std::vector<std::string> args = SplitWords(command.line);
  args.resize(std::max<size_t>(args.size(), 8));  // HAProxy fills unused slots with ""
  if (args[0] == "show" && args[1] == "info") return ShowInfo(*worker);
  if (args[0] == "show" && args[1] == "sess") return worker->sessions;
  if (args[0] == "show" && args[1] == "servers" && args[2] == "state") {
    return ShowServersState(*worker, args[3]);
  }
  if (args[0] == "show" && args[1] == "map") return ShowMap(*worker, args[2]);
  if (args[0] == "set" && args[1] == "server") return SetServer(worker, args);
  if (args[0] == "set" && args[1] == "weight") {
    // `set weight b/s N` is `set server b/s weight N` in HAProxy.
    return SetServer(worker, {"set", "server", args[2], "weight", args[3], "", "", ""});
  }
  if (args[1] == "map" &&
      (args[0] == "prepare" || args[0] == "add" || args[0] == "commit" || args[0] == "clear")) {
    return MapCommand(worker, args, command.payload);
  }
  return Fixture("err_unknown_command.txt");
}

std::string FakeMaster::SetServer(FakeWorker* worker, const std::vector<std::string>& args) {
  // src/server.c cli_find_server: backend, then server, then the proxy's state.
  size_t slash = args[2].rfind('/');
  if (slash == std::string::npos) return "Require 'backend/server'.\n\n";
  auto be = worker->runtime.backends.find(args[2].substr(0, slash));
  if (be == worker->runtime.backends.end()) return Fixture("err_no_such_backend.txt");
  auto server = be->second.servers.find(args[2].substr(slash + 1));
  if (server == be->second.servers.end()) return Fixture("err_no_such_server.txt");
  if (worker->frozen) return Fixture("old_worker_set_server_refused.txt");
  FakeServer& s = server->second;
  if (args[3] == "addr") {
    // src/server.c srv_update_addr_port, as recorded in ok_set_server_addr_port.txt.
    std::string message =
        s.address == args[4] ? std::string("no need to change the addr")
                             : absl::StrCat("IP changed from '", s.address, "' to '", args[4], "'");
    s.address = args[4];
    if (args[5] == "port") {
      int port = 0;
      if (!absl::SimpleAtoi(args[6], &port)) return "Invalid port.\n\n";
      absl::StrAppend(&message, s.port == port ? ", no need to change the port"
                                               : absl::StrCat(", port changed from '", s.port,
                                                              "' to '", port, "'"));
      s.port = port;
    }
    return absl::StrCat(message, " by 'stats socket command'\n\n");
  }
  if (args[3] == "state") {
    if (args[4] == "ready") {
      s.state = FakeServerState::kReady;
    } else if (args[4] == "drain") {
      s.state = FakeServerState::kDrain;
    } else if (args[4] == "maint") {
      s.state = FakeServerState::kMaint;
    } else {
      return "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n\n";
    }
    return Fixture("ok_set_server_state_ready.txt");
  }
  if (args[3] == "weight") {
    int weight = 0;
    if (!absl::SimpleAtoi(args[4], &weight) || weight < 0 || weight > 256) {
      return "Trailing garbage in weight string";  // 2.6: no LF, no blank line (§4.2)
    }
    s.weight = weight;
    return Fixture("ok_set_weight.txt");
  }
  return "'set server <srv>' only supports 'agent', 'health', 'state', 'weight', 'addr', 'fqdn', "
         "'check-addr' and 'check-port'.\n\n";
}

std::string FakeMaster::MapCommand(FakeWorker* worker, const std::vector<std::string>& args,
                                   const std::vector<std::string>& payload) {
  // `<verb> map [@<ver>] <name> [key value]`
  size_t name_at = 2;
  absl::optional<int64_t> version;
  if (absl::StartsWith(args[2], "@")) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(args[2].substr(1), &v)) return "Malformed version.\n\n";
    version = v;
    name_at = 3;
  }
  auto it = worker->runtime.maps.find(args[name_at]);
  if (it == worker->runtime.maps.end()) return kUnknownMap;
  FakeMap& map = it->second;
  if (args[0] == "prepare") {
    ++map.next_ver;
    map.prepared[map.next_ver] = {};
    return absl::StrCat("New version created: ", map.next_ver, "\n\n");
  }
  std::vector<FakeMapEntry>* target = &map.entries;
  if (version) {
    auto prepared = map.prepared.find(*version);
    if (prepared == map.prepared.end()) return "This version is not ongoing.\n\n";
    target = &prepared->second;
  }
  if (args[0] == "add") {
    if (!payload.empty()) {
      for (const std::string& line : payload) target->push_back(PayloadEntry(line));
    } else if (!args[name_at + 1].empty()) {
      target->push_back({args[name_at + 1], args[name_at + 2]});
    } else {
      return "'add map' expects three parameters: map identifier, key and value.\n\n";
    }
    return Fixture("ok_add_map.txt");
  }
  if (args[0] == "clear") {
    target->clear();
    return "\n";
  }
  // commit
  if (!version) return "'commit map' expects a version and a map identifier.\n\n";
  map.entries = std::move(*target);
  map.curr_ver = *version;
  map.prepared.erase(map.prepared.begin(), map.prepared.upper_bound(*version));
  return "\n";
}

}  // namespace hawk::reconcile::fake

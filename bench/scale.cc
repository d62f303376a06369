// Scale (issue 11): a change costs what it changes. Against a real HAProxy per version given, with
// `backend be_app` of 10,000 servers (server-template) and a routing map, in one run:
//   1. push latency, request sent → every live worker APPLIED (the push's own answer), one object
//      changed, via PATCH and via whole-state PUT, for states of 100, 1,000 and 10,000 servers and
//      for the ingress state (10,000 servers + a map of 100,000 entries); each row with one worker
//      and again with a leaving worker in grace beside the current one (`grace 60s`, a slow
//      request held on the old worker, reload through the master, both CURRENT/LEAVING and inSync
//      in GET /v1/workers before measuring);
//   2. k = 1, 100, 10,000 servers (and separately map entries) changed in the ingress state: per
//      push, the lines and bytes hawk sent the master (a UnixRelay between them, hawk run with
//      --poll-interval 60s --resync-interval 3600s), the growth of --state-dir, hawk's CPU time
//      (every thread's /proc/<pid>/task/<tid>/schedstat) and the latency;
//   3. hawk's RSS: idle, loaded (ingress state on two workers, 11 s after the last large PUT, once
//      hawk released its parser), after 100 one-object PATCHes (every push path run once) and
//      after 1,000 more, with the heap / file-page split;
//   4. a raw baseline: the same one-object change sent by this program through the master socket
//      (`@!<pid> set server …`, `@!<pid> set map …`) on one connection kept open in prompt mode;
//   5. the resync cost: a hawk started against a worker that already holds the ingress state (it
//      observes and diffs in full at start), timed until GET /v1/workers shows it inSync; and the
//      latency of pushes issued while --resync-interval 1s keeps re-observing it;
//   7. hawk's RSS under whole-state PUTs of the ingress state (one server's address changed each
//      time, one worker), sampled every 2 ms on a thread of this program, peak reported: the
//      first PUT of the ingress state (its map becomes managed: change, undo and journal record
//      are each the whole map), then --whole-puts PUTs back to back and --periodic-puts PUTs
//      every 2 s; beside the state held before them (the baseline, measured in the same run).
// Prints one set of markdown tables per version, the command line and the load average first.
//
//   build/bench-scale/bench/scale [--haproxy LABEL[=PATH][,…]] [--manifest FILE] [--pushes N]
//                                 [--k-reps N] [--whole-puts N] [--periodic-puts N]
//                                 [--hawk PATH] [--backend PATH]
//
// --haproxy: labels of the manifest (scripts/haproxy-versions.sh writes it), or LABEL=PATH;
//   default 2.6,3.4. --pushes: pushes per latency row (default 200). --k-reps: pushes per k in
//   part 2 (default 10). --whole-puts, --periodic-puts: part 7's PUTs back to back (default 1000)
//   and every 2 s (default 1000: 33 minutes per version; 0 leaves the row out). --hawk, --backend:
//   the binaries (default: this build's, or $HAWK_BINARY and $HAWK_TEST_BACKEND when set).

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/bench_haproxy.h"
#include "bench/stats.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/free_port.h"
#include "tests/support/in_flight_request.h"
#include "tests/support/master_cli.h"
#include "tests/support/socket_util.h"
#include "tests/support/unix_relay.h"
#include "tests/support/wait_until.h"

namespace {

using hawk::bench::Haproxy;
using hawk::bench::Median;
using hawk::bench::Ms;
using hawk::bench::ParseHaproxy;
using hawk::bench::Percentile;
using hawk::bench::PromptCli;
using hawk::bench::ShellWord;
using hawk::bench::VersionLine;
using hawk::testing::Backend;
using hawk::testing::ConnectUnix;
using hawk::testing::HaproxyProcess;
using hawk::testing::HawkProcess;
using hawk::testing::HttpConnection;
using hawk::testing::HttpRequest;
using hawk::testing::HttpResult;
using hawk::testing::InFlightRequest;
using hawk::testing::MasterCli;
using hawk::testing::ParseWorkersView;
using hawk::testing::ReadFile;
using hawk::testing::ReadSome;
using hawk::testing::TempDir;
using hawk::testing::UniqueFd;
using hawk::testing::UnixRelay;
using hawk::testing::WaitUntil;
using hawk::testing::WorkersView;
using hawk::testing::WorkerView;
using hawk::testing::WriteAll;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kTemplateServers = 10000;  // servers of be_app in the configuration
constexpr int kIngressEntries = 100000;  // entries of the ingress state's map
constexpr int kPushTimeoutMs = 10000;    // ?timeoutMs of measured pushes
constexpr int kLoadTimeoutMs = 60000;    // ?timeoutMs of the pushes that load a state

// ---------------------------------------------------------------------------------------------
// Readings from /proc and the file system.

// CPU time of every thread of `pid` (the first field of each task's schedstat), ns.
uint64_t CpuNs(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  uint64_t total = 0;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name + "/schedstat");
    uint64_t ns = 0;
    if (in >> ns) total += ns;
  }
  ::closedir(d);
  return total;
}

// A process's resident memory from /proc/<pid>/status, KiB: all of it, and its split into
// anonymous memory (heap, stacks: what a leak grows) and file pages (mostly code, which grows as
// paths run for the first time).
struct Rss {
  long vm = -1, anon = -1, file = -1;
};

Rss RssOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  Rss rss;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss.vm = std::atol(line.c_str() + 6);
    if (line.rfind("RssAnon:", 0) == 0) rss.anon = std::atol(line.c_str() + 8);
    if (line.rfind("RssFile:", 0) == 0) rss.file = std::atol(line.c_str() + 8);
  }
  return rss;
}

// VmRSS of `pid`, KiB (-1 if unreadable).
long RssKib(pid_t pid) { return RssOf(pid).vm; }

// Samples `pid`'s VmRSS every 2 ms on a thread of its own, from construction to Stop(): the peak.
class RssSampler {
 public:
  explicit RssSampler(pid_t pid) : pid_(pid), thread_([this] { Run(); }) {}
  ~RssSampler() { Stop(); }
  RssSampler(const RssSampler&) = delete;
  RssSampler& operator=(const RssSampler&) = delete;

  // The peak, KiB.
  long Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return peak_;
  }
  size_t samples() const { return samples_; }

 private:
  void Run() {
    while (!stop_) {
      long kib = RssKib(pid_);
      if (kib > peak_) peak_ = kib;
      ++samples_;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  const pid_t pid_;
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_{-1};
  std::atomic<size_t> samples_{0};
  std::thread thread_;  // last: it starts reading the members above at once
};

// The sum of the sizes of the regular files in `dir` (not recursive; hawk's state dir is flat).
int64_t DirBytes(const std::string& dir) {
  int64_t total = 0;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    struct stat st {};
    if (::stat((dir + "/" + e->d_name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      total += st.st_size;
    }
  }
  ::closedir(d);
  return total;
}

std::string Fmt(double v, const char* format = "%.2f") {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, v);
  return buffer;
}

std::string Thousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ",";
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

// "tmpfs", "ext4", … for the file system holding `path`.
std::string FsType(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return "?";
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0x01021994UL:
      return "tmpfs";
    case 0xEF53UL:
      return "ext4";
    case 0x794C7630UL:
      return "overlayfs";
    case 0x58465342UL:
      return "xfs";
    default:
      return "f_type 0x" + Fmt(static_cast<double>(fs.f_type), "%.0f");
  }
}

std::string LoadAvg() {
  std::string text = ReadFile("/proc/loadavg");
  std::istringstream in(text);
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string UtcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M UTC", &tm);
  return buffer;
}

// ---------------------------------------------------------------------------------------------
// The desired-state documents, built once and changed in place: every field that changes has a
// fixed width, so a change rewrites a few bytes and the document never moves.
//
//   {"version":"g1000000001","generation":1000000001,"backends":[{"name":"be_app","servers":[
//    {"name":"SRV_1","address":"127.1.100.101","port":8001,"state":"READY"}, …]}],
//    "maps":[{"name":"<map>","entries":[{"key":"host0.example.com","value":"be_0"}, …]}]}
//
// Server i's address is 127.1.<b + (i/100)%50>.<100 + i%100> with b = 100 or 200 (a change
// flips b); entry i's value is be_<digit> (a change steps the digit). The document is the single
// source of truth: a PATCH changes it too, so the next whole-state PUT differs from the state
// hawk holds by exactly the change it carries.
class StateDoc {
 public:
  StateDoc(int servers, int entries, std::string map_path)
      : servers_(servers), entries_(entries), map_(std::move(map_path)) {
    json_.reserve(static_cast<size_t>(servers) * 80 + static_cast<size_t>(entries) * 52 + 256);
    json_ += R"({"version":"g)";
    version_at_ = json_.size();
    json_ += R"(1000000000","generation":)";
    generation_at_ = json_.size();
    json_ += R"(1000000000,"backends":[{"name":"be_app","servers":[)";
    address_at_.resize(static_cast<size_t>(servers) + 1);
    for (int i = 1; i <= servers; ++i) {
      json_ += i > 1 ? "," : "";
      json_ += R"({"name":"SRV_)" + std::to_string(i) + R"(","address":")";
      address_at_[i] = json_.size();
      json_ += "127.1." + std::to_string(100 + (i / 100) % 50) + "." +
               std::to_string(100 + i % 100) + R"(","port":)" + std::to_string(Port(i)) +
               R"(,"state":"READY"})";
    }
    json_ += "]}]";
    if (entries > 0) {
      json_ += R"(,"maps":[{"name":")" + map_ + R"(","entries":[)";
      value_at_.resize(static_cast<size_t>(entries));
      for (int i = 0; i < entries; ++i) {
        json_ += i > 0 ? "," : "";
        json_ += R"({"key":")" + EntryKey(i) + R"(","value":")";
        value_at_[i] = json_.size();
        json_ += "be_" + std::to_string(i % 7) + R"("})";
      }
      json_ += "]}]";
    }
    json_ += "}";
  }

  const std::string& json() const { return json_; }
  int servers() const { return servers_; }
  int entries() const { return entries_; }
  const std::string& map() const { return map_; }

  void SetGeneration(int64_t generation) {
    std::string digits = std::to_string(generation);  // 10 digits (see NextGeneration)
    json_.replace(version_at_, digits.size(), digits);
    json_.replace(generation_at_, digits.size(), digits);
  }
  // Server i (1-based) moves to its other address.
  void FlipServer(int i) {
    char& c = json_[address_at_[i] + 6];
    c = c == '1' ? '2' : '1';
  }
  std::string ServerAddress(int i) const { return json_.substr(address_at_[i], 13); }
  static int Port(int i) { return 8000 + i % 100; }
  // Entry i (0-based) takes the next value.
  void StepEntry(int i) {
    char& c = json_[value_at_[i] + 3];
    c = c == '9' ? '0' : static_cast<char>(c + 1);
  }
  static std::string EntryKey(int i) { return "host" + std::to_string(i) + ".example.com"; }
  std::string EntryValue(int i) const { return json_.substr(value_at_[i], 4); }

 private:
  int servers_;
  int entries_;
  std::string map_;
  std::string json_;
  size_t version_at_ = 0;
  size_t generation_at_ = 0;
  std::vector<size_t> address_at_;
  std::vector<size_t> value_at_;
};

std::string PatchHead(int64_t generation) {
  std::string g = std::to_string(generation);
  return R"({"generation":)" + g + R"(,"version":"g)" + g + R"(","upsert":{)";
}

// Moves servers first..first+k-1 in `doc` and returns the PATCH that says so.
std::string ServersPatch(StateDoc* doc, int first, int k, int64_t generation) {
  std::string body = PatchHead(generation) + R"("backends":[{"name":"be_app","servers":[)";
  for (int i = first; i < first + k; ++i) {
    doc->FlipServer(i);
    body += i > first ? "," : "";
    body += R"({"name":"SRV_)" + std::to_string(i) + R"(","address":")" + doc->ServerAddress(i) +
            R"(","port":)" + std::to_string(StateDoc::Port(i)) + "}";
  }
  return body + "]}]}}";
}

// Steps entries first..first+k-1 in `doc` and returns the PATCH that says so.
std::string EntriesPatch(StateDoc* doc, int first, int k, int64_t generation) {
  std::string body =
      PatchHead(generation) + R"("maps":[{"name":")" + doc->map() + R"(","entries":[)";
  for (int i = first; i < first + k; ++i) {
    doc->StepEntry(i);
    body += i > first ? "," : "";
    body += R"({"key":")" + StateDoc::EntryKey(i) + R"(","value":")" + doc->EntryValue(i) + "\"}";
  }
  return body + "]}]}}";
}

// ---------------------------------------------------------------------------------------------
// hawk's API over one keep-alive connection.

struct PushReply {
  bool ok = false;  // a 200 with a per-worker outcome
  double ms = 0;
  int workers = 0;  // workers in the answer
  int applied = 0;  // of which APPLIED
  std::string text;
};

class Api {
 public:
  explicit Api(std::string address) : address_(std::move(address)) {}

  // Sends `body` as METHOD /v1/state?timeoutMs=…: the head, then the body as it is (no copy).
  PushReply Push(const char* method, const std::string& body, int timeout_ms = kPushTimeoutMs) {
    PushReply reply;
    if (!Connected(&reply.text)) return reply;
    std::string head = std::string(method) + " /v1/state?timeoutMs=" + std::to_string(timeout_ms) +
                       " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                       "Content-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n";
    auto deadline = Clock::now() + milliseconds(timeout_ms) + seconds(30);
    Clock::time_point start = Clock::now();
    if (!WriteAll(conn_->fd(), head, deadline, &reply.text) ||
        !WriteAll(conn_->fd(), body, deadline, &reply.text)) {
      conn_.reset();
      return reply;
    }
    HttpResult r = conn_->ReadResponse(milliseconds(timeout_ms) + seconds(30));
    reply.ms = Ms(Clock::now() - start);
    if (!r.ok || !r.keep_alive) conn_.reset();
    if (!r.ok) {
      reply.text = r.error;
      return reply;
    }
    reply.text = std::to_string(r.status) + " " + r.body;
    if (r.status != 200) return reply;
    reply.ok = true;
    reply.workers = Count(r.body, "\"result\":\"");
    reply.applied = Count(r.body, "\"result\":\"APPLIED\"");
    return reply;
  }

  WorkersView Workers() {
    WorkersView view;
    if (!Connected(&view.error)) return view;
    HttpResult r = conn_->RoundTrip(HttpRequest::Get("/v1/workers"), seconds(5));
    if (!r.ok || !r.keep_alive) conn_.reset();
    if (!r.ok || r.status != 200) {
      view.error = r.ok ? std::to_string(r.status) + " " + r.body : r.error;
      return view;
    }
    return ParseWorkersView(r.body);
  }

  // GET `path`: the time to the whole answer (ms), or -1.
  double TimedGet(const std::string& path) {
    std::string error;
    if (!Connected(&error)) return -1;
    Clock::time_point start = Clock::now();
    HttpResult r = conn_->RoundTrip(HttpRequest::Get(path), seconds(5));
    double ms = Ms(Clock::now() - start);
    if (!r.ok || !r.keep_alive) conn_.reset();
    return r.ok && r.status == 200 ? ms : -1;
  }

  void Close() { conn_.reset(); }

 private:
  static int Count(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
  bool Connected(std::string* error) {
    if (!conn_) conn_ = HttpConnection::Connect(address_, seconds(5), error);
    return conn_ != nullptr;
  }

  std::string address_;
  std::unique_ptr<HttpConnection> conn_;
};

// ---------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------
// Results.

struct LatencyRow {
  std::string state;
  std::string change;
  std::string verb;
  int workers = 1;
  std::vector<double> ms;
  int not_applied = 0;  // answered, but some worker not APPLIED
  int failed = 0;       // no 200 answer, or fewer workers than live
  std::string first_bad;
  double goal_ms = 0;
};

struct RawRow {
  std::string command;
  int workers = 1;
  std::vector<double> ms;
  int errors = 0;
  std::string first_error;
};

struct CostRow {
  std::string objects;
  int k = 0;
  std::string verb;
  std::vector<double> lines, bytes, dir_bytes, cpu_ms, ms;
  int not_applied = 0;
};

// Part 7: hawk's RSS over whole-state PUTs sent back to back or every 2 s.
struct WholePutRssRow {
  bool periodic = false;
  int puts = 0;
  long held_kib = -1;  // before the first of them, quiet (the baseline)
  long peak_kib = -1;
  long after_kib = -1;  // right after the last answer
  long later_kib = -1;  // 2 s later
  size_t samples = 0;
  std::vector<double> ms;
  int failed = 0;
  std::string first_bad;
};

struct Options {
  std::vector<Haproxy> versions;
  int pushes = 200;
  int k_reps = 10;
  int whole_puts = 1000;
  int periodic_puts = 1000;
  std::string hawk;
  std::string backend;
  std::string state_root;  // where hawk's --state-dir is made; "" = the run's temp dir
};

// ---------------------------------------------------------------------------------------------
// One version's run.

class ScaleRun {
 public:
  ScaleRun(const Haproxy& haproxy, const Options& options)
      : version_(haproxy), options_(options), backend_(dir_, "app") {}

  bool Run() {
    if (!backend_.ok()) return Fail("backend: " + backend_.error());
    map_path_ = dir_.File("hosts.map");
    hawk::testing::WriteFile(map_path_, "");
    frontend_port_ = hawk::testing::FreeTcpPort();
    haproxy_ = std::make_unique<HaproxyProcess>(dir_, Config(), version_.binary);
    if (auto r = haproxy_->Start(seconds(30)); !r) return Fail("haproxy: " + r.error);
    goal_ms_ = version_.label == "2.6" ? 5.0 : 2.0;
    state_dir_ = options_.state_root.empty()
                     ? dir_.File("state")
                     : options_.state_root + "/hawk-scale-" + std::to_string(::getpid()) + "-" +
                           version_.label;
    if (::mkdir(state_dir_.c_str(), 0700) != 0) return Fail("mkdir " + state_dir_);
    state_fs_ = FsType(state_dir_);
    ProbeFdatasync();

    // hawk 1: straight to the master socket; parts 1, 3 and 4.
    hawk_ = std::make_unique<HawkProcess>(
        hawk_dir_, haproxy_->master_socket(),
        std::vector<std::string>{"--log-level", "warn", "--state-dir", state_dir_,
                                 "--resync-interval", "3600s", "--haproxy-config",
                                 haproxy_->config_path()});
    api_ = std::make_unique<Api>(hawk_->api_address());
    if (!hawk_->WaitServing(seconds(10)) ||
        !WaitUntil([&] { return hawk_->Get("/readyz").status == 200; }, seconds(10))) {
      return Fail("hawk did not become ready:\n" + hawk_->LogTail());
    }
    if (!WaitWorkers(1, seconds(10), false))
      return Fail("hawk does not list the worker: " + error_);
    std::this_thread::sleep_for(seconds(1));
    rss_idle_ = RssKib(hawk_->pid());

    for (int servers : {100, 1000, 10000, -1}) {
      if (!LatencyGroup(servers)) return false;
    }
    api_->Close();
    hawk_.reset();

    // hawk 2: through the relay, started against the worker that holds the ingress state.
    relay_ = std::make_unique<UnixRelay>(relay_dir_.File("master.sock"), haproxy_->master_socket());
    if (auto r = relay_->Start(); !r) return Fail("relay: " + r.error);
    if (!StartupResync()) return false;
    if (!CostRows()) return false;
    api_->Close();
    hawk_.reset();

    // hawk 3: through the relay, re-observing every second.
    if (!PeriodicResync()) return false;
    api_->Close();
    hawk_.reset();
    return true;
  }

  ~ScaleRun() {
    if (!options_.state_root.empty() && !state_dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(state_dir_, ignored);
    }
  }

  void Print() const;
  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& message) {
    error_ = message;
    if (hawk_) error_ += "\nhawk log tail:\n" + hawk_->LogTail();
    return false;
  }

  std::string Config() const {
    std::string backend = "127.0.0.1:" + std::to_string(backend_.port());
    return "global\n"
           "    grace 60s\n"
           "defaults\n"
           "    mode http\n"
           "    timeout connect 1s\n"
           "    timeout client 300s\n"
           "    timeout server 300s\n"
           "frontend fe\n"
           "    bind 127.0.0.1:" +
           std::to_string(frontend_port_) +
           "\n"
           "    use_backend be_slow if { path_beg /slow }\n"
           "    use_backend %[req.hdr(host),lower,map(" +
           map_path_ +
           ",be_app)]\n"
           "backend be_slow\n"
           "    server s1 " +
           backend +
           "\n"
           "backend be_app\n"
           "    balance roundrobin\n"
           "    server-template SRV_ " +
           std::to_string(kTemplateServers) + " " + backend +
           "\n"
           "backend be_other\n"
           "    server o1 " +
           backend + "\n";
  }

  // 10 digits for a long time: the documents patch it in place.
  int64_t NextGeneration() { return ++generation_; }

  // Waits until hawk lists exactly `count` workers, all inSync (unless `sync` is false; without a
  // desired state none is) and none frozen.
  bool WaitWorkers(size_t count, milliseconds deadline, bool sync = true) {
    WorkersView last;
    bool ok = WaitUntil(
        [&] {
          last = api_->Workers();
          if (!last.ok || last.workers.size() != count) return false;
          for (const WorkerView& w : last.workers) {
            if ((sync && !w.in_sync) || w.frozen) return false;
          }
          return true;
        },
        deadline, milliseconds(5));
    if (!ok) error_ = "GET /v1/workers: " + (last.ok ? last.raw : last.error);
    return ok;
  }

  bool Load(StateDoc* doc) {
    doc->SetGeneration(NextGeneration());
    PushReply r = api_->Push("PUT", doc->json(), kLoadTimeoutMs);
    if (!r.ok || r.applied != r.workers) return Fail("loading the state: PUT answered " + r.text);
    return WaitWorkers(1, seconds(30)) || Fail("after loading the state: " + error_);
  }

  // `count` pushes of the body `next` builds (outside the timing); one row.
  LatencyRow Measure(const std::string& state, const std::string& change, const char* verb,
                     int workers, int count, const std::function<const std::string&()>& next,
                     double goal_ms) {
    LatencyRow row{state, change, verb, workers, {}, 0, 0, "", goal_ms};
    for (int i = 0; i < count; ++i) {
      const std::string& body = next();
      PushReply r = api_->Push(verb, body);
      if (!r.ok || r.workers < workers) {
        ++row.failed;
        if (row.first_bad.empty()) row.first_bad = r.text;
        continue;
      }
      row.ms.push_back(r.ms);
      if (r.applied != r.workers) {
        ++row.not_applied;
        if (row.first_bad.empty()) row.first_bad = r.text;
      }
    }
    return row;
  }

  bool LatencyGroup(int servers) {
    bool ingress = servers < 0;
    StateDoc doc(ingress ? kTemplateServers : servers, ingress ? kIngressEntries : 0, map_path_);
    std::string state = ingress ? "ingress (10,000 servers + 100,000 map entries)"
                                : Thousands(servers) + " servers";
    if (ingress) doc_size_ = doc.json().size();
    if (ingress) {
      // The first PUT of the ingress state: its map becomes managed (and its servers move).
      first_put_held_kib_ = RssKib(hawk_->pid());
      RssSampler sampler(hawk_->pid());
      Clock::time_point start = Clock::now();
      bool loaded = Load(&doc);
      first_put_ms_ = Ms(Clock::now() - start);
      first_put_peak_kib_ = sampler.Stop();
      if (!loaded) return false;
    } else if (!Load(&doc)) {
      return false;
    }
    std::string patch;
    auto patch_server = [&]() -> const std::string& {
      patch = ServersPatch(&doc, 1, 1, NextGeneration());
      return patch;
    };
    auto patch_entry = [&]() -> const std::string& {
      patch = EntriesPatch(&doc, 0, 1, NextGeneration());
      return patch;
    };
    auto put_server = [&]() -> const std::string& {
      doc.FlipServer(1);
      doc.SetGeneration(NextGeneration());
      return doc.json();
    };
    double put_goal = ingress ? 40.0 : goal_ms_;
    int n = options_.pushes;
    for (int workers : {1, 2}) {
      if (workers == 2 && !EnterTwoWorkers(ingress)) return false;
      rows_.push_back(
          Measure(state, "one server's address", "PATCH", workers, n, patch_server, goal_ms_));
      if (ingress) {
        rows_.push_back(
            Measure(state, "one map entry's value", "PATCH", workers, n, patch_entry, goal_ms_));
      }
      rows_.push_back(
          Measure(state, "one server's address", "PUT", workers, n, put_server, put_goal));
      if (ingress) {
        last_large_put_ = Clock::now();
        if (workers == 2) rss_after_puts_ = RssKib(hawk_->pid());
        if (!RawBaseline(doc, workers)) return false;
      }
      if (workers == 2 && !LeaveTwoWorkers(state)) return false;
    }
    if (ingress) {
      // The RSS on two workers, in a grace period of its own (60 s would not cover the rows
      // above on 2.6 too): once hawk released its parser, 11 s after the last large PUT (the
      // reload and the seed of the new worker, from the state held, parse no document), then
      // after 1,000 one-object PATCHes.
      if (!EnterTwoWorkers(true)) return false;
      std::this_thread::sleep_until(last_large_put_ + seconds(11));
      rss_loaded_ = RssKib(hawk_->pid());
      // A Prometheus scrape of this state (two workers, 10,000 servers, a 100,000-entry map),
      // against GET /v1/workers (the same report as JSON) in the same phase.
      for (int i = 0; i < 50; ++i) {
        scrape_ms_.push_back(api_->TimedGet("/metrics"));
        workers_ms_.push_back(api_->TimedGet("/v1/workers"));
      }
      // Growth is judged from a hawk whose push paths have all run once: the first pushes fault
      // in code pages (file-backed) that no leak makes.
      LatencyRow servers_warm = Measure(state, "RSS run", "PATCH", 2, 50, patch_server, goal_ms_);
      LatencyRow entries_warm = Measure(state, "RSS run", "PATCH", 2, 50, patch_entry, goal_ms_);
      rss_warm_ = RssOf(hawk_->pid());
      LatencyRow servers_run = Measure(state, "RSS run", "PATCH", 2, 500, patch_server, goal_ms_);
      LatencyRow entries_run = Measure(state, "RSS run", "PATCH", 2, 500, patch_entry, goal_ms_);
      rss_after_patches_ = RssOf(hawk_->pid());
      for (const LatencyRow* row : {&servers_warm, &entries_warm, &servers_run, &entries_run}) {
        rss_patch_failures_ += row->failed + row->not_applied;
      }
      if (!LeaveTwoWorkers(state + ", RSS run")) return false;
      if (!WholePutRss(put_server)) return false;
    }
    if (ingress) ingress_doc_ = std::make_unique<StateDoc>(std::move(doc));
    return true;
  }

  // Part 7: whole-state PUTs of the ingress state (one worker), back to back, then every 2 s, with
  // hawk's RSS sampled throughout.
  bool WholePutRss(const std::function<const std::string&()>& put_server) {
    for (bool periodic : {false, true}) {
      WholePutRssRow row;
      row.periodic = periodic;
      row.puts = periodic ? options_.periodic_puts : options_.whole_puts;
      if (row.puts <= 0) continue;
      // Quiet first: hawk gives a large document's memory back 1 s after the last one.
      std::this_thread::sleep_for(seconds(2));
      pid_t pid = hawk_->pid();
      row.held_kib = RssKib(pid);
      RssSampler sampler(pid);
      Clock::time_point next = Clock::now();
      for (int i = 0; i < row.puts; ++i) {
        if (periodic) {
          std::this_thread::sleep_until(next);
          next += seconds(2);
        }
        const std::string& body = put_server();
        PushReply r = api_->Push("PUT", body);
        if (r.ok) row.ms.push_back(r.ms);
        if (!r.ok || r.applied != r.workers) {
          ++row.failed;
          if (row.first_bad.empty()) row.first_bad = r.text;
        }
      }
      row.peak_kib = sampler.Stop();
      row.samples = sampler.samples();
      row.after_kib = RssKib(pid);
      std::this_thread::sleep_for(seconds(2));
      row.later_kib = RssKib(pid);
      whole_put_rss_.push_back(std::move(row));
      std::fflush(stdout);
    }
    return true;
  }

  // A slow request held on the current worker, a reload through the master, and both workers
  // CURRENT/LEAVING and inSync in hawk's report.
  bool EnterTwoWorkers(bool ingress) {
    pid_t old = haproxy_->CurrentWorkerPid();
    if (old <= 0) return Fail("no current worker");
    std::string target = "/slow?ms=240000&r=" + std::to_string(++reloads_);
    std::string log = dir_.File("backend-app.log");
    slow_ = std::make_unique<InFlightRequest>(frontend_port_, target, seconds(250));
    if (!slow_->WaitSent(seconds(5)) ||
        !WaitUntil([&] { return ReadFile(log).find("GET " + target) != std::string::npos; },
                   seconds(5))) {
      return Fail("the slow request did not reach the backend: " + slow_->result().error);
    }
    if (auto r = haproxy_->ReloadViaCli(); !r) return Fail(r.error);
    pid_t fresh = haproxy_->WaitForNewWorker(old, seconds(30));
    if (fresh <= 0) return Fail("no new worker after the reload:\n" + haproxy_->LogTail());
    reloaded_ = Clock::now();
    leaving_pid_ = old;
    WorkersView view;
    bool ok = WaitUntil(
        [&] {
          view = api_->Workers();
          const WorkerView* c = view.Find(fresh);
          const WorkerView* l = view.Find(old);
          return view.ok && view.workers.size() == 2 && c != nullptr && l != nullptr &&
                 c->role == "CURRENT" && l->role == "LEAVING" && c->in_sync && l->in_sync &&
                 !l->frozen && l->connections >= 1;
        },
        ingress ? seconds(120) : seconds(30), milliseconds(5));
    seed_ms_ = Ms(Clock::now() - reloaded_);
    if (!ok) return Fail("hawk did not show CURRENT + LEAVING inSync: " + view.raw + view.error);
    return true;
  }

  // Notes how the grace period went, then ExitTwoWorkers.
  bool LeaveTwoWorkers(const std::string& what) {
    WorkersView view = api_->Workers();
    const WorkerView* old = view.Find(leaving_pid_);
    std::string where = old == nullptr ? "gone" : old->frozen ? "frozen" : "still in grace";
    grace_notes_.push_back(
        what + ": the new worker was seeded (both inSync) " + Fmt(seed_ms_, "%.0f") +
        " ms after the reload; the leaving worker was " + where + " after the rows, " +
        Fmt(Ms(Clock::now() - reloaded_) / 1000.0, "%.1f") + " s after the reload");
    return ExitTwoWorkers();
  }

  // SIGTERM to the leaving worker (it would stay 60 s), until neither HAProxy nor hawk lists it.
  bool ExitTwoWorkers() {
    ::kill(leaving_pid_, SIGTERM);
    bool gone = WaitUntil(
        [&] {
          auto list = haproxy_->ShowProc(milliseconds(500));
          if (!list) return false;
          for (int pid : list->old_workers) {
            if (pid == leaving_pid_) return false;
          }
          return true;
        },
        seconds(10));
    slow_.reset();
    if (!gone) return Fail("the leaving worker did not exit");
    return WaitWorkers(1, seconds(10)) || Fail("after the leaving worker exited: " + error_);
  }

  // The same one-object changes through the bench's own prompt-mode master connection.
  bool RawBaseline(const StateDoc& doc, int workers) {
    std::vector<pid_t> pids{haproxy_->CurrentWorkerPid()};
    if (workers == 2) pids.push_back(leaving_pid_);
    PromptCli cli;
    std::string error;
    if (!cli.Open(haproxy_->master_socket(), &error)) return Fail("raw baseline: " + error);
    auto run = [&](const std::string& command, const std::function<std::string(int)>& line) {
      RawRow row{command, workers, {}, 0, ""};
      for (int i = 0; i < options_.pushes; ++i) {
        std::string lines;
        for (pid_t pid : pids) lines += "@!" + std::to_string(pid) + " " + line(i) + "\n";
        std::string reply;
        Clock::time_point start = Clock::now();
        bool ok = cli.Send(lines, workers, &reply, &error);
        double ms = Ms(Clock::now() - start);
        bool refused = reply.find("No such") != std::string::npos ||
                       reply.find("Unknown") != std::string::npos ||
                       reply.find("not found") != std::string::npos ||
                       reply.find("Can't") != std::string::npos;
        if (!ok || refused) {
          ++row.errors;
          if (row.first_error.empty()) row.first_error = ok ? reply : error;
          if (!ok && !cli.Open(haproxy_->master_socket(), &error)) break;
          continue;
        }
        row.ms.push_back(ms);
      }
      raw_rows_.push_back(row);
    };
    run("set server be_app/SRV_1 addr … port …", [](int i) {
      return std::string("set server be_app/SRV_1 addr 127.1.") + (i % 2 ? "150" : "151") +
             ".101 port 8001";
    });
    run("set map hosts.map host0.example.com …", [&](int i) {
      return "set map " + map_path_ + " host0.example.com raw_" + std::to_string(i % 10);
    });
    // Back to what hawk holds as desired.
    std::string restore;
    for (pid_t pid : pids) {
      std::string p = "@!" + std::to_string(pid) + " ";
      restore += p + "set server be_app/SRV_1 addr " + doc.ServerAddress(1) + " port " +
                 std::to_string(StateDoc::Port(1)) + "\n";
      restore += p + "set map " + map_path_ + " host0.example.com " + doc.EntryValue(0) + "\n";
    }
    std::string reply;
    if (!cli.Send(restore, 2 * workers, &reply, &error)) return Fail("raw restore: " + error);
    return true;
  }

  // The storage's own cost: what the journal's group commit waits for on every push.
  void ProbeFdatasync() {
    std::string path = state_dir_ + "/probe";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0) return;
    std::string record(200, 'x');
    for (int i = 0; i < options_.pushes; ++i) {
      Clock::time_point start = Clock::now();
      if (::write(fd, record.data(), record.size()) != static_cast<ssize_t>(record.size()) ||
          ::fdatasync(fd) != 0) {
        break;
      }
      fdatasync_ms_.push_back(Ms(Clock::now() - start));
    }
    ::close(fd);
    ::unlink(path.c_str());
  }

  std::vector<std::string> HawkArgs(const char* resync) const {
    return {"--log-level",       "warn",
            "--state-dir",       state_dir_,
            "--poll-interval",   "60s",
            "--resync-interval", resync,
            "--haproxy-config",  haproxy_->config_path()};
  }

  // Waits for hawk (just spawned at `spawned`) to serve, then to show the worker inSync.
  bool WaitStarted(Clock::time_point spawned, double* serving_ms, double* in_sync_ms) {
    pid_t current = haproxy_->CurrentWorkerPid();
    bool serving = WaitUntil(
        [&] {
          HttpResult r =
              hawk::testing::Fetch(hawk_->api_address(), "GET", "/healthz", "", seconds(1));
          return r.ok && r.status == 200;
        },
        seconds(30), milliseconds(2));
    *serving_ms = Ms(Clock::now() - spawned);
    if (!serving) return Fail("hawk did not serve");
    WorkersView view;
    bool ok = WaitUntil(
        [&] {
          view = api_->Workers();
          const WorkerView* w = view.Find(current);
          return view.ok && view.workers.size() == 1 && w != nullptr && w->in_sync;
        },
        seconds(120), milliseconds(2));
    *in_sync_ms = Ms(Clock::now() - spawned);
    return ok || Fail("hawk did not show the worker inSync: " + view.raw + view.error);
  }

  bool StartupResync() {
    uint64_t lines = relay_->lines_to_target();
    uint64_t bytes = relay_->bytes_to_target();
    Clock::time_point spawned = Clock::now();
    hawk_ = std::make_unique<HawkProcess>(hawk2_dir_, relay_->path(), HawkArgs("3600s"));
    api_ = std::make_unique<Api>(hawk_->api_address());
    if (!WaitStarted(spawned, &startup_serving_ms_, &startup_in_sync_ms_)) return false;
    startup_cpu_ms_ = static_cast<double>(CpuNs(hawk_->pid())) / 1e6;
    startup_lines_ = relay_->lines_to_target() - lines;
    startup_bytes_ = relay_->bytes_to_target() - bytes;
    startup_rss_ = RssKib(hawk_->pid());
    // The quiet reference for the resync run: one-server PATCHes through the relay.
    std::string patch;
    quiet_ = Measure(
        "ingress", "one server's address", "PATCH", 1, options_.pushes,
        [&]() -> const std::string& {
          patch = ServersPatch(ingress_doc_.get(), 1, 1, NextGeneration());
          return patch;
        },
        goal_ms_);
    std::this_thread::sleep_until(spawned + seconds(11));
    startup_rss_later_ = RssKib(hawk_->pid());
    return true;
  }

  bool CostRows() {
    StateDoc& doc = *ingress_doc_;
    pid_t pid = hawk_->pid();
    std::string patch;
    for (const char* objects : {"servers", "map entries"}) {
      bool servers = objects[0] == 's';
      for (int k : {1, 100, 10000}) {
        for (const char* verb : {"PATCH", "PUT"}) {
          CostRow row{objects, k, verb, {}, {}, {}, {}, {}, 0};
          for (int rep = 0; rep < options_.k_reps; ++rep) {
            const std::string* body = &doc.json();
            if (verb[1] == 'A') {
              patch = servers ? ServersPatch(&doc, 1, k, NextGeneration())
                              : EntriesPatch(&doc, 0, k, NextGeneration());
              body = &patch;
            } else {
              for (int i = 0; i < k; ++i) servers ? doc.FlipServer(1 + i) : doc.StepEntry(i);
              doc.SetGeneration(NextGeneration());
            }
            uint64_t lines = relay_->lines_to_target();
            uint64_t bytes = relay_->bytes_to_target();
            int64_t dir_bytes = DirBytes(state_dir_);
            uint64_t cpu = CpuNs(pid);
            PushReply r = api_->Push(verb, *body);
            // Anything hawk does right after answering belongs to the push too.
            std::this_thread::sleep_for(milliseconds(200));
            if (!r.ok || r.applied != r.workers) {
              ++row.not_applied;
              if (cost_first_bad_.empty()) cost_first_bad_ = r.text;
              continue;
            }
            row.ms.push_back(r.ms);
            row.lines.push_back(static_cast<double>(relay_->lines_to_target() - lines));
            row.bytes.push_back(static_cast<double>(relay_->bytes_to_target() - bytes));
            row.dir_bytes.push_back(static_cast<double>(DirBytes(state_dir_) - dir_bytes));
            row.cpu_ms.push_back(static_cast<double>(CpuNs(pid) - cpu) / 1e6);
          }
          cost_rows_.push_back(row);
        }
      }
    }
    return true;
  }

  bool PeriodicResync() {
    Clock::time_point spawned = Clock::now();
    hawk_ = std::make_unique<HawkProcess>(hawk3_dir_, relay_->path(), HawkArgs("1s"));
    api_ = std::make_unique<Api>(hawk_->api_address());
    double serving = 0, in_sync = 0;
    if (!WaitStarted(spawned, &serving, &in_sync)) return false;
    pid_t pid = hawk_->pid();
    uint64_t cpu = CpuNs(pid);
    uint64_t lines = relay_->lines_to_target();
    uint64_t bytes = relay_->bytes_to_target();
    std::this_thread::sleep_for(seconds(10));
    resync_cpu_ms_per_s_ = static_cast<double>(CpuNs(pid) - cpu) / 1e6 / 10;
    resync_lines_per_s_ = static_cast<double>(relay_->lines_to_target() - lines) / 10;
    resync_bytes_per_s_ = static_cast<double>(relay_->bytes_to_target() - bytes) / 10;
    // One-server PATCHes, 2 ms apart, for 6 s: most land while a resync runs or just after.
    std::string patch;
    Clock::time_point until = Clock::now() + seconds(6);
    during_ = LatencyRow{"ingress", "one server's address", "PATCH", 1, {}, 0, 0, "", goal_ms_};
    while (Clock::now() < until) {
      LatencyRow one = Measure(
          "ingress", "", "PATCH", 1, 1,
          [&]() -> const std::string& {
            patch = ServersPatch(ingress_doc_.get(), 1, 1, NextGeneration());
            return patch;
          },
          goal_ms_);
      during_.ms.insert(during_.ms.end(), one.ms.begin(), one.ms.end());
      during_.failed += one.failed;
      during_.not_applied += one.not_applied;
      if (during_.first_bad.empty()) during_.first_bad = one.first_bad;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return true;
  }

  Haproxy version_;
  const Options& options_;
  TempDir dir_;
  TempDir hawk_dir_;
  TempDir hawk2_dir_;
  TempDir hawk3_dir_;
  TempDir relay_dir_;
  Backend backend_;
  std::unique_ptr<HaproxyProcess> haproxy_;
  std::unique_ptr<UnixRelay> relay_;
  std::unique_ptr<HawkProcess> hawk_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<InFlightRequest> slow_;
  std::unique_ptr<StateDoc> ingress_doc_;
  std::string map_path_;
  std::string state_dir_;
  std::string state_fs_;
  std::string error_;
  int frontend_port_ = 0;
  int reloads_ = 0;
  int64_t generation_ = 1000000000;
  double goal_ms_ = 2.0;
  pid_t leaving_pid_ = -1;
  Clock::time_point reloaded_;
  Clock::time_point last_large_put_;
  double seed_ms_ = 0;
  size_t doc_size_ = 0;

  std::vector<LatencyRow> rows_;
  std::vector<RawRow> raw_rows_;
  std::vector<double> fdatasync_ms_;
  std::vector<CostRow> cost_rows_;
  std::vector<std::string> grace_notes_;
  std::string cost_first_bad_;
  long rss_idle_ = -1, rss_after_puts_ = -1, rss_loaded_ = -1;
  long first_put_held_kib_ = -1, first_put_peak_kib_ = -1;
  double first_put_ms_ = 0;
  std::vector<WholePutRssRow> whole_put_rss_;
  Rss rss_warm_, rss_after_patches_;
  std::vector<double> scrape_ms_, workers_ms_;
  long startup_rss_ = -1, startup_rss_later_ = -1;
  int rss_patch_failures_ = 0;
  double startup_serving_ms_ = 0, startup_in_sync_ms_ = 0, startup_cpu_ms_ = 0;
  uint64_t startup_lines_ = 0, startup_bytes_ = 0;
  LatencyRow quiet_, during_;
  double resync_cpu_ms_per_s_ = 0, resync_lines_per_s_ = 0, resync_bytes_per_s_ = 0;
};

std::string Met(double value, double goal) {
  if (value <= goal) return "yes";
  return "**no** (+" + Fmt(value - goal) + " ms)";
}

void ScaleRun::Print() const {
  const std::string& v = version_.label;
  std::printf("### HAProxy %s\n\n`%s`\n\n", v.c_str(), version_.version_line.c_str());

  std::printf(
      "**1. Push latency**, request sent → answer showing every live worker APPLIED, %d pushes "
      "per row, back to back on one keep-alive connection (ms). Goal: p99 ≤ %.0f ms; the "
      "whole-state PUT of the ingress state (%s bytes) ≤ 40 ms. hawk: --resync-interval 3600s "
      "(part 5 measures resyncs), --state-dir on %s.\n\n",
      options_.pushes, goal_ms_, Thousands(static_cast<int64_t>(doc_size_)).c_str(),
      state_fs_.c_str());
  std::printf(
      "| state | change | verb | workers | p50 | p99 | max | not APPLIED | goal | p99 met |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n");
  for (const LatencyRow& r : rows_) {
    if (r.ms.empty()) {
      std::printf("| %s | %s | %s | %d | – | – | – | %d failed | ≤ %.0f | **no** |\n",
                  r.state.c_str(), r.change.c_str(), r.verb.c_str(), r.workers, r.failed,
                  r.goal_ms);
      continue;
    }
    std::string bad = std::to_string(r.not_applied);
    if (r.failed > 0) bad += " (+" + std::to_string(r.failed) + " failed)";
    double p99 = Percentile(r.ms, 0.99);
    std::printf("| %s | %s | %s | %s | %.2f | %.2f | %.2f | %s | ≤ %.0f | %s |\n", r.state.c_str(),
                r.change.c_str(), r.verb.c_str(),
                r.workers == 1 ? "1" : "2 (current + leaving in grace)", Percentile(r.ms, 0.5), p99,
                *std::max_element(r.ms.begin(), r.ms.end()), bad.c_str(), r.goal_ms,
                Met(p99, r.goal_ms).c_str());
  }
  std::printf("\n");
  for (const std::string& note : grace_notes_) std::printf("- %s\n", note.c_str());
  for (const LatencyRow& r : rows_) {
    if (!r.first_bad.empty()) {
      std::printf("- first answer not APPLIED in \"%s, %s, %s, %d\": `%.600s`\n", r.state.c_str(),
                  r.change.c_str(), r.verb.c_str(), r.workers, r.first_bad.c_str());
    }
  }

  std::printf(
      "\n**4. Raw baseline**: the same change sent by this program, `@!<pid> …` on one master "
      "connection kept open in prompt mode (one command per worker, pipelined; the reply read to "
      "the prompt), %d rounds, ingress state loaded (ms). Ratio: hawk's PATCH p50 / raw p50.\n\n",
      options_.pushes);
  std::printf(
      "| command | workers | p50 | p99 | max | errors | hawk PATCH p50 | ratio p50 |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (const RawRow& r : raw_rows_) {
    double hawk_p50 = 0;
    bool map = r.command.rfind("set map", 0) == 0;
    for (const LatencyRow& h : rows_) {
      if (h.state.rfind("ingress", 0) == 0 && h.verb == "PATCH" && h.workers == r.workers &&
          (h.change.find("map") != std::string::npos) == map && !h.ms.empty()) {
        hawk_p50 = Percentile(h.ms, 0.5);
      }
    }
    if (r.ms.empty()) {
      std::printf("| `%s` | %d | – | – | – | %d: `%.200s` | | |\n", r.command.c_str(), r.workers,
                  r.errors, r.first_error.c_str());
      continue;
    }
    double p50 = Percentile(r.ms, 0.5);
    std::printf("| `%s` | %d | %.3f | %.3f | %.3f | %d | %.2f | %.1f |\n", r.command.c_str(),
                r.workers, p50, Percentile(r.ms, 0.99), *std::max_element(r.ms.begin(), r.ms.end()),
                r.errors, hawk_p50, hawk_p50 / p50);
  }
  if (!fdatasync_ms_.empty()) {
    std::printf(
        "| storage: write 200 B + `fdatasync` in --state-dir (every push's answer waits for "
        "one; a change to managed objects is sent meanwhile) | – | %.3f | %.3f | %.3f | | | |\n",
        Percentile(fdatasync_ms_, 0.5), Percentile(fdatasync_ms_, 0.99),
        *std::max_element(fdatasync_ms_.begin(), fdatasync_ms_.end()));
  }

  std::printf(
      "\n**2. Cost per push, k objects changed in the ingress state** (one worker; hawk behind a "
      "UnixRelay with --poll-interval 60s --resync-interval 3600s; median over %d pushes; "
      "counters read 200 ms after the answer). Lines: commands and payload lines hawk sent the "
      "master. State dir: growth of the sum of file sizes in --state-dir. CPU: hawk's, every "
      "thread.\n\n",
      options_.k_reps);
  std::printf(
      "| objects | k | verb | lines to master | bytes to master | state dir + bytes | hawk CPU ms "
      "| "
      "CPU µs per object | latency p50 ms | latency max ms |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n");
  for (const CostRow& r : cost_rows_) {
    if (r.ms.empty()) {
      std::printf("| %s | %s | %s | – | – | – | – | – | – | %d not APPLIED |\n", r.objects.c_str(),
                  Thousands(r.k).c_str(), r.verb.c_str(), r.not_applied);
      continue;
    }
    double cpu = Median(r.cpu_ms);
    std::printf(
        "| %s | %s | %s | %s | %s | %s | %.2f | %.1f | %.2f | %.2f |%s\n", r.objects.c_str(),
        Thousands(r.k).c_str(), r.verb.c_str(),
        Thousands(static_cast<int64_t>(Median(r.lines))).c_str(),
        Thousands(static_cast<int64_t>(Median(r.bytes))).c_str(),
        Thousands(static_cast<int64_t>(Median(r.dir_bytes))).c_str(), cpu, cpu * 1000 / r.k,
        Median(r.ms), *std::max_element(r.ms.begin(), r.ms.end()),
        r.not_applied > 0 ? (" " + std::to_string(r.not_applied) + " not APPLIED").c_str() : "");
  }
  if (!cost_first_bad_.empty()) {
    std::printf("\nfirst answer not APPLIED: `%.600s`\n", cost_first_bad_.c_str());
  }

  auto mib = [](long kib) { return Fmt(static_cast<double>(kib) / 1024.0, "%.1f"); };
  std::printf(
      "\n**3. hawk RSS** (VmRSS)\n\n| when | KiB | MiB | goal | met |\n|---|---|---|---|---|\n");
  std::printf("| idle: started, workers observed, no state | %s | %s | ≤ 4 MiB | %s |\n",
              Thousands(rss_idle_).c_str(), mib(rss_idle_).c_str(),
              rss_idle_ <= 4096 ? "yes" : "**no**");
  std::printf("| right after %d ingress PUTs to two workers (parser held) | %s | %s | | |\n",
              options_.pushes, Thousands(rss_after_puts_).c_str(), mib(rss_after_puts_).c_str());
  std::printf(
      "| loaded: ingress state on two workers (current + leaving), 11 s after the last PUT | %s "
      "| %s | ≤ 16 MiB | %s |\n",
      Thousands(rss_loaded_).c_str(), mib(rss_loaded_).c_str(),
      rss_loaded_ <= 16384 ? "yes" : "**no**");
  std::printf(
      "| … then after 100 one-object PATCHes, every push path run once (heap %s, code and other "
      "files %s) | %s | %s | | |\n",
      Thousands(rss_warm_.anon).c_str(), Thousands(rss_warm_.file).c_str(),
      Thousands(rss_warm_.vm).c_str(), mib(rss_warm_.vm).c_str());
  long growth = rss_after_patches_.vm - rss_warm_.vm;
  std::printf(
      "| … then after 1,000 more (500 servers, 500 map entries; %d of all 1,100 not APPLIED; heap "
      "%s, files %s) | %s | %s | no growth | %s (%+ld KiB) |\n",
      rss_patch_failures_, Thousands(rss_after_patches_.anon).c_str(),
      Thousands(rss_after_patches_.file).c_str(), Thousands(rss_after_patches_.vm).c_str(),
      mib(rss_after_patches_.vm).c_str(), growth <= 64 ? "yes" : "**no**", growth);
  std::printf(
      "| a fresh hawk that loaded the ingress state from --state-dir, one worker: at "
      "inSync | %s | %s | | |\n",
      Thousands(startup_rss_).c_str(), mib(startup_rss_).c_str());
  std::printf("| … the same hawk, 11 s after its start | %s | %s | | |\n",
              Thousands(startup_rss_later_).c_str(), mib(startup_rss_later_).c_str());

  std::printf(
      "\n**7. Whole-state PUTs of the ingress state: hawk's RSS** (VmRSS sampled every 2 ms by "
      "this "
      "program, peak over the whole row; one worker; one server's address changed per PUT, each "
      "answered with the worker APPLIED; \"held\": hawk quiet with the ingress state just before "
      "the row, the baseline of the same run). Goal: peak ≤ 16 MiB; PUT p50 ≤ 40 ms.\n\n"
      "| PUTs | held KiB | peak KiB | peak MiB | peak − held KiB | peak / held | right after; 2 s "
      "later, KiB | p50 / p99 / max ms | not APPLIED | peak ≤ 16 MiB |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n");
  auto ratio = [](long a, long b) { return b > 0 ? Fmt(static_cast<double>(a) / b) : "–"; };
  std::printf(
      "| the first PUT of the ingress state (its 100,000-entry map becomes managed; answered in "
      "%.0f "
      "ms) | %s | %s | %s | %s | %s | | | | %s |\n",
      first_put_ms_, Thousands(first_put_held_kib_).c_str(), Thousands(first_put_peak_kib_).c_str(),
      mib(first_put_peak_kib_).c_str(),
      Thousands(first_put_peak_kib_ - first_put_held_kib_).c_str(),
      ratio(first_put_peak_kib_, first_put_held_kib_).c_str(),
      first_put_peak_kib_ <= 16384 ? "yes" : "**no**");
  for (const WholePutRssRow& r : whole_put_rss_) {
    std::string latency = r.ms.empty()
                              ? "–"
                              : Fmt(Percentile(r.ms, 0.5)) + " / " + Fmt(Percentile(r.ms, 0.99)) +
                                    " / " + Fmt(*std::max_element(r.ms.begin(), r.ms.end()));
    std::printf("| %s, %s | %s | %s | %s | %s | %s | %s; %s | %s | %d | %s |\n",
                Thousands(r.puts).c_str(), r.periodic ? "one every 2 s" : "back to back",
                Thousands(r.held_kib).c_str(), Thousands(r.peak_kib).c_str(),
                mib(r.peak_kib).c_str(), Thousands(r.peak_kib - r.held_kib).c_str(),
                ratio(r.peak_kib, r.held_kib).c_str(), Thousands(r.after_kib).c_str(),
                Thousands(r.later_kib).c_str(), latency.c_str(), r.failed,
                r.peak_kib <= 16384 ? "yes" : "**no**");
  }
  for (const WholePutRssRow& r : whole_put_rss_) {
    if (!r.first_bad.empty()) {
      std::printf("\nfirst PUT not APPLIED (%s): `%.600s`\n",
                  r.periodic ? "every 2 s" : "back to back", r.first_bad.c_str());
    }
  }

  std::printf(
      "\n**5. Resync cost at ingress scale** (one worker, hawk behind the relay)\n\n"
      "| what | value |\n|---|---|\n");
  std::printf(
      "| hawk started with the ingress state in --state-dir: spawn → API serving | %.0f ms "
      "|\n",
      startup_serving_ms_);
  std::printf(
      "| spawn → worker inSync (full observation + diff; the worker held the state) | "
      "%.0f ms |\n",
      startup_in_sync_ms_);
  std::printf("| … hawk CPU until then; lines / bytes to master | %.0f ms; %s / %s |\n",
              startup_cpu_ms_, Thousands(static_cast<int64_t>(startup_lines_)).c_str(),
              Thousands(static_cast<int64_t>(startup_bytes_)).c_str());
  std::printf(
      "| --resync-interval 1s, idle: hawk CPU per second; lines / bytes per second | %.1f "
      "ms; %.1f / %s |\n",
      resync_cpu_ms_per_s_, resync_lines_per_s_,
      Thousands(static_cast<int64_t>(resync_bytes_per_s_)).c_str());
  auto dist = [](const LatencyRow& r) {
    if (r.ms.empty()) return std::string("no samples");
    int over = 0;
    for (double m : r.ms) over += m > r.goal_ms;
    return "n=" + std::to_string(r.ms.size()) + ", p50 " + Fmt(Percentile(r.ms, 0.5)) + ", p99 " +
           Fmt(Percentile(r.ms, 0.99)) + ", max " +
           Fmt(*std::max_element(r.ms.begin(), r.ms.end())) + " ms; " + std::to_string(over) +
           " over " + Fmt(r.goal_ms, "%.0f") + " ms; " + std::to_string(r.not_applied + r.failed) +
           " not APPLIED";
  };
  std::printf("| one-server PATCH, quiet (resync 3600 s), through the relay | %s |\n",
              dist(quiet_).c_str());
  std::printf("| one-server PATCH every 2 ms for 6 s with --resync-interval 1s | %s |\n",
              dist(during_).c_str());
  if (!during_.first_bad.empty()) {
    std::printf("\nfirst answer not APPLIED during resyncs: `%.600s`\n", during_.first_bad.c_str());
  }
  std::printf(
      "\n**6. Scrape cost**: GET /metrics on the ingress state, two workers (current + leaving), "
      "50 scrapes, request sent → whole answer (an upper bound of hawk's loop time); GET "
      "/v1/workers (the same report as JSON) alternated with it\n\n"
      "| request | p50 ms | p99 ms | goal | met |\n|---|---|---|---|---|\n");
  if (scrape_ms_.empty()) {
    std::printf("| GET /metrics | not measured (the run stopped before) | | | |\n");
    return;
  }
  std::printf("| GET /metrics | %.2f | %.2f | ≤ 5 ms | %s |\n", Percentile(scrape_ms_, 0.5),
              Percentile(scrape_ms_, 0.99), Percentile(scrape_ms_, 0.99) <= 5 ? "yes" : "**no**");
  std::printf("| GET /v1/workers | %.2f | %.2f | | |\n", Percentile(workers_ms_, 0.5),
              Percentile(workers_ms_, 0.99));
  std::printf("\n");
}

// ---------------------------------------------------------------------------------------------
// Flags.

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string spec = "2.6,3.4";
  std::string manifest = HAWK_DEFAULT_HAPROXY_MANIFEST;
  const char* env_hawk = std::getenv("HAWK_BINARY");
  const char* env_backend = std::getenv("HAWK_TEST_BACKEND");
  options.hawk = env_hawk != nullptr ? env_hawk : HAWK_DEFAULT_BINARY;
  options.backend = env_backend != nullptr ? env_backend : HAWK_DEFAULT_TEST_BACKEND;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--haproxy") {
      spec = value();
    } else if (arg == "--manifest") {
      manifest = value();
    } else if (arg == "--pushes") {
      options.pushes = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--k-reps") {
      options.k_reps = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--whole-puts") {
      options.whole_puts = std::max(0, std::atoi(value().c_str()));
    } else if (arg == "--periodic-puts") {
      options.periodic_puts = std::max(0, std::atoi(value().c_str()));
    } else if (arg == "--hawk") {
      options.hawk = value();
    } else if (arg == "--backend") {
      options.backend = value();
    } else if (arg == "--state-root") {
      options.state_root = value();
    } else {
      std::fprintf(stderr, "unknown argument %s (see the header of bench/scale.cc)\n", arg.c_str());
      return 2;
    }
  }
  if (!ParseHaproxy(spec, manifest, &options.versions)) return 2;
  ::setenv("HAWK_BINARY", options.hawk.c_str(), 1);
  ::setenv("HAWK_TEST_BACKEND", options.backend.c_str(), 1);

  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + ShellWord(argv[i]);
  std::printf("```\n%s   # started %s; hawk %s\n```\n\n", command.c_str(), UtcNow().c_str(),
              options.hawk.c_str());
  std::printf("Load average (1/5/15 min) at the start: %s\n\n", LoadAvg().c_str());
  std::fflush(stdout);
  int status = 0;
  for (Haproxy& h : options.versions) {
    h.version_line = h.binary + ": " + VersionLine(h.binary);
    Clock::time_point start = Clock::now();
    ScaleRun run(h, options);
    bool ok = run.Run();
    run.Print();
    std::printf("(%s: %.0f s)\n\n", h.label.c_str(), Ms(Clock::now() - start) / 1000);
    if (!ok) {
      std::printf("**%s: the run stopped early**: %s\n\n", h.label.c_str(), run.error().c_str());
      status = 1;
    }
    std::fflush(stdout);
  }
  std::printf("Load average (1/5/15 min) at the end: %s\n", LoadAvg().c_str());
  return status;
}

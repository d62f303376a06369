// What a whole-state PUT of the ingress state costs in memory and time while its document is read
// into the change from the state held (issue 25): the ingress document (10,000 servers, 100,000
// map entries, ~5.4 MB; one map entry changed) read against the ingress state held, the way
// StateService::Put reads it (parse + diff, before the journal and the reconciler), by each of
// the ways of parsing below. Each way runs in a forked child with hawk's malloc settings (main.cc)
// unless it names others; the child builds the state held and the request body, gives the heap
// back (malloc_trim), resets its peak (/proc/self/clear_refs `5`) and then reads the document
// `--puts` times, each from a body received anew (a fresh allocation, as the HTTP layer makes),
// printing for each way:
//   - peak 1st, peak: the peak RSS above the state (VmHWM - VmRSS before, MiB) during the first
//     PUT and over all of them: body, parser and delta;
//   - kept: the RSS kept after the last PUT (what stays between PUTs: freed pages malloc keeps
//     count), and after release: once the way's release ran (hawk's, kReleaseParserAfterMs after
//     the last large document);
//   - times (ms): the first PUT (body + read); then medians of the others: receiving the body
//     (copying it into its fresh allocation: page faults when its pages went back), reading it
//     (parse + diff, p50 and p90), and both in this thread's CPU time (steadier on a busy machine).
// The floor comes first: the process alone, the state held alone, the body alone, and the index
// simdjson builds of the body's structural characters before any parse reads it.
//
//   build/default/bench/put_memory [--puts N] [--way SUBSTRING]   (default: 30 PUTs, every way)
//
// Before hawk read documents with On-Demand (adf4558), this program also measured simdjson's DOM,
// hawk's parser then: bench/RESULTS.md has both.
//
// No assertions: it prints numbers (bench/RESULTS.md keeps them with the command that made
// them). The machine's other load shows in the times, not in the RSS figures.

#include <malloc.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/model/delta.h"
#include "agent/model/desired_json.h"
#include "agent/model/json_input.h"
#include "bench/ingress_document.h"
#include "bench/stats.h"
#include "simdjson.h"  // the floor: simdjson's index of the body

namespace {

using hawk::bench::Ms;
using hawk::bench::Percentile;
using hawk::model::Delta;
using hawk::model::DesiredState;
using Clock = std::chrono::steady_clock;

using hawk::bench::IngressDocument;

struct Memory {
  long rss_kib = 0;
  long hwm_kib = 0;
};

Memory ReadMemory() {
  std::ifstream status("/proc/self/status");
  Memory m;
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) m.rss_kib = std::atol(line.c_str() + 6);
    if (line.rfind("VmHWM:", 0) == 0) m.hwm_kib = std::atol(line.c_str() + 6);
  }
  return m;
}

// VmHWM back to VmRSS (Linux ≥ 4.0).
void ResetPeak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

double MiB(long kib) { return kib / 1024.0; }

// This thread's CPU time (user + system, page faults included): what a read costs without the
// time it waits for a core the machine's other load holds.
double CpuMs() {
  timespec t;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// main.cc's malloc settings.
void HawkMalloc() {
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
  ::mallopt(M_ARENA_MAX, 2);
}

// hawk's, but blocks of 1 MiB and more mapped on their own (and unmapped when freed).
void SmallMmapThreshold() {
  HawkMalloc();
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

// One way of reading a PUT: `read` turns the body into the change from the state held,
// `after_put` runs after each one (the delta gone), `release` once PUTs stop.
struct Way {
  const char* name;
  std::function<void()> malloc_settings;
  std::function<Delta(const std::string& body, const DesiredState& held)> read;
  std::function<void()> after_put = [] {};
  std::function<void()> release = [] {};
};

// A request body as the HTTP layer hands it over: with simdjson's padding in its capacity.
std::string Body(const std::string& json) {
  std::string body;
  body.reserve(json.size() + hawk::model::json::kReadPadding);
  body = json;
  return body;
}

DesiredState Held() {
  return *hawk::model::ParseDesiredState(IngressDocument(10000, 100000, "be_5"));
}

bool IsTheOneChange(const Delta& delta) {
  return delta.backends.empty() && delta.acls.empty() && delta.maps.size() == 1 &&
         delta.maps[0].set.size() == 1 && delta.maps[0].erase.empty() &&
         delta.maps[0].set.Find("host5.example.com") == "be_X";
}

void RunWay(const Way& way, int puts) {
  way.malloc_settings();
  DesiredState held = Held();
  const std::string json = IngressDocument(10000, 100000, "be_X");
  ::malloc_trim(0);
  Memory before = ReadMemory();
  ResetPeak();
  std::vector<double> body_ms, read_ms, cpu_ms;
  long first_peak = 0;
  long peak = 0;
  bool right = true;
  for (int i = 0; i < puts; ++i) {
    Clock::time_point start = Clock::now();
    double cpu_start = CpuMs();
    {
      std::string body = Body(json);  // received: a fresh allocation, as the HTTP layer makes
      Clock::time_point received = Clock::now();
      Delta delta = way.read(body, held);
      read_ms.push_back(Ms(Clock::now() - received));
      body_ms.push_back(Ms(received - start));
      cpu_ms.push_back(CpuMs() - cpu_start);
      right = right && IsTheOneChange(delta);
    }
    way.after_put();
    Memory now = ReadMemory();
    if (i == 0) first_peak = now.hwm_kib - before.rss_kib;
    peak = std::max(peak, now.hwm_kib - before.rss_kib);
  }
  long kept = ReadMemory().rss_kib - before.rss_kib;
  way.release();
  long released = ReadMemory().rss_kib - before.rss_kib;
  // The first PUT apart (it grows the heap): the distribution is of the others.
  double first = body_ms.front() + read_ms.front();
  body_ms.erase(body_ms.begin());
  read_ms.erase(read_ms.begin());
  cpu_ms.erase(cpu_ms.begin());
  std::printf("%-36s %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f%s\n", way.name,
              MiB(first_peak), MiB(peak), MiB(kept), MiB(released), first, Percentile(body_ms, 0.5),
              Percentile(read_ms, 0.5), Percentile(read_ms, 0.9), Percentile(cpu_ms, 0.5),
              right ? "" : "  WRONG DELTA");
  std::fflush(stdout);
}

void InChild(const std::function<void()>& f) {
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    f();
    std::fflush(stdout);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
}

void PrintFloor() {
  HawkMalloc();
  ::malloc_trim(0);
  long process = ReadMemory().rss_kib;
  DesiredState held = Held();
  ::malloc_trim(0);
  long with_state = ReadMemory().rss_kib;
  std::string body = Body(IngressDocument(10000, 100000, "be_X"));
  ::malloc_trim(0);
  long with_body = ReadMemory().rss_kib;
  // simdjson's index of the document's structural characters (4 bytes each), which On-Demand
  // walks: what any simdjson parse holds besides the body, before anything is read.
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(body.data(), body.size(), body.capacity()).get(doc) != simdjson::SUCCESS) {
    std::abort();
  }
  long with_index = ReadMemory().rss_kib;
  DesiredState::Memory usage = held.MemoryUsage();
  std::printf(
      "floor: this process %.1f MiB; the state held +%.1f MiB (its heap bytes: servers "
      "%.1f, map entries %.1f MiB); the body +%.1f MiB (%zu bytes); simdjson's structural "
      "index of the body +%.1f MiB\n\n",
      MiB(process), MiB(with_state - process), usage.servers / 1048576.0,
      usage.map_entries / 1048576.0, MiB(with_body - with_state), body.size(),
      MiB(with_index - with_body));
}

// ---- The ways ----

Delta Read(const std::string& body, const DesiredState& held,
           hawk::model::json::DocumentParser* parser) {
  bool padded = body.capacity() >= body.size() + hawk::model::json::kReadPadding;
  return *hawk::model::ParseDesiredStateAsDelta(hawk::model::json::JsonInput(body, padded, parser),
                                                held);
}

std::vector<Way> Ways() {
  static hawk::model::json::DocumentParser* kept = new hawk::model::json::DocumentParser;
  auto read_kept = [](const std::string& body, const DesiredState& held) {
    return Read(body, held, kept);
  };
  auto read_fresh = [](const std::string& body, const DesiredState& held) {
    return Read(body, held, nullptr);
  };
  auto release_kept = [] {
    kept->Release();
    ::malloc_trim(0);
  };
  auto trim = [] { ::malloc_trim(0); };
  return {
      {"parser kept (StateService)", HawkMalloc, read_kept, [] {}, release_kept},
      {"fresh parser + malloc_trim", HawkMalloc, read_fresh, trim, trim},
      {"fresh parser, mmap threshold 1 MiB", SmallMmapThreshold, read_fresh},
      {"parser kept, mmap threshold 1 MiB", SmallMmapThreshold, read_kept, [] {}, release_kept},
  };
}

}  // namespace

int main(int argc, char** argv) {
  int puts = 30;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--puts") == 0 && i + 1 < argc &&
        absl::SimpleAtoi(argv[i + 1], &puts)) {
      ++i;
    } else if (std::strcmp(argv[i], "--way") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--puts N] [--way SUBSTRING]\n", argv[0]);
      return 2;
    }
  }
  if (puts < 2) puts = 2;
  InChild(PrintFloor);
  std::printf("%d PUTs of the ingress document with one change against the ingress state held\n",
              puts);
  std::printf("%-36s %7s %7s %7s %7s %7s %7s %7s %7s %7s\n", "", "peak", "peak", "kept", "after",
              "1st", "body", "read", "read", "cpu");
  std::printf("%-36s %7s %7s %7s %7s %7s %7s %7s %7s %7s\n", "way", "1st", "", "", "release", "PUT",
              "p50", "p50", "p90", "p50");
  for (const Way& way : Ways()) {
    if (std::string(way.name).find(only) == std::string::npos) continue;
    InChild([&] { RunWay(way, puts); });
  }
  return 0;
}

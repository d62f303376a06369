// What a whole-state PUT of the ingress state costs in memory and time while its document is read
// into the change from the state held (issue 25): the ingress document (10,000 servers, 100,000
// map entries, ~5.4 MB; one map entry changed) read against the ingress state held, the way
// StateService::Put reads it (parse + diff, before the journal and the reconciler), by each of
// the ways of parsing below. Each way runs in a forked child with hawk's malloc settings (main.cc)
// unless it names others; the child builds the state held and the request body, gives the heap
// back (malloc_trim), resets its peak (/proc/self/clear_refs `5`) and then reads the document
// `--puts` times, printing for each way:
//   - the peak RSS above the state + body (VmHWM - VmRSS before), during the first read and over
//     all of them;
//   - the RSS kept after the last read (what stays between PUTs), and after the way's release
//     (what stays once PUTs stop: hawk releases after kReleaseParserAfterMs);
//   - the time per read (parse + diff): the first one, median and p90 of the rest.
// The floor comes first: the process alone, the state held alone, the body alone, and the index
// simdjson builds of the body's structural characters before any parse reads it.
//
//   build/default/bench/put_memory [--puts N]   (default 30)
//
// No assertions: it prints numbers (bench/RESULTS.md keeps them with the command that made
// them). The machine's other load shows in the times, not in the RSS figures.

#include <malloc.h>
#include <sys/wait.h>
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
#include "bench/stats.h"
#include "simdjson.h"

namespace {

using hawk::bench::Ms;
using hawk::model::Delta;
using hawk::model::DesiredState;
using Clock = std::chrono::steady_clock;

// bench/state_codec.cc's ingress document: `changed_value` is map entry 5's value.
std::string Document(int servers, int entries, const std::string& changed_value) {
  std::string json = R"({"version":"v1","generation":"1","backends":[{"name":"be_app","servers":[)";
  for (int i = 1; i <= servers; ++i) {
    absl::StrAppend(&json, i > 1 ? "," : "", R"({"name":"SRV_)", i, R"(","address":"127.0.0.)",
                    1 + i % 200, R"(","port":)", 8000 + i % 100, R"(,"state":"READY"})");
  }
  absl::StrAppend(&json, R"(]}],"maps":[{"name":"/etc/haproxy/hosts.map","entries":[)");
  for (int i = 0; i < entries; ++i) {
    absl::StrAppend(&json, i ? "," : "", R"({"key":"host)", i, R"(.example.com","value":")",
                    i == 5 ? changed_value : absl::StrCat("be_", i % 7), R"("})");
  }
  absl::StrAppend(&json, "]}]}");
  return json;
}

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

DesiredState Held() { return *hawk::model::ParseDesiredState(Document(10000, 100000, "be_5")); }

bool IsTheOneChange(const Delta& delta) {
  return delta.backends.empty() && delta.acls.empty() && delta.maps.size() == 1 &&
         delta.maps[0].set.size() == 1 && delta.maps[0].erase.empty() &&
         delta.maps[0].set.Find("host5.example.com") == "be_X";
}

void RunWay(const Way& way, int puts) {
  way.malloc_settings();
  DesiredState held = Held();
  std::string body = Body(Document(10000, 100000, "be_X"));
  ::malloc_trim(0);
  Memory before = ReadMemory();
  ResetPeak();
  std::vector<double> ms;
  long first_peak = 0;
  long peak = 0;
  bool right = true;
  for (int i = 0; i < puts; ++i) {
    Clock::time_point start = Clock::now();
    {
      Delta delta = way.read(body, held);
      ms.push_back(Ms(Clock::now() - start));
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
  double first = ms.front();
  std::vector<double> rest(ms.begin() + 1, ms.end());
  std::sort(rest.begin(), rest.end());
  std::printf("%-44s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f%s\n", way.name, MiB(first_peak),
              MiB(peak), MiB(kept), MiB(released), first, rest[rest.size() / 2],
              rest[rest.size() * 9 / 10], right ? "" : "  WRONG DELTA");
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
  std::string body = Body(Document(10000, 100000, "be_X"));
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

Delta ReadDom(const std::string& body, const DesiredState& held,
              hawk::model::json::DocumentParser* parser) {
  bool padded = body.capacity() >= body.size() + hawk::model::json::kReadPadding;
  return *hawk::model::ParseDesiredStateAsDelta(hawk::model::json::JsonInput(body, padded, parser),
                                                held);
}

// ---- A sketch of the same read with simdjson On-Demand (measurement only) ----
//
// The ingress document's shape only, and no validation beyond what simdjson checks: enough to
// measure what On-Demand's buffers and a pass over the document cost next to the DOM. Each
// server is looked up in the backend held and compared, each entry looked up in the map held
// (FindEntry with its cursor, as StateListsDiff does) and a changed or new one copied into the
// delta; entries held and not listed are erased.

namespace od = simdjson::ondemand;

struct OdRead {
  od::parser* parser;
  // Strings without a backslash read as views of the body (no copy into the parser's string
  // buffer); others unescaped into `scratch`.
  bool in_place;
  std::string scratch;

  simdjson::error_code String(od::value v, absl::string_view* out) {
    std::string_view s;
    simdjson::error_code error = StdString(v, &s);
    *out = absl::string_view(s.data(), s.size());
    return error;
  }
  simdjson::error_code StdString(od::value v, std::string_view* out) {
    if (!in_place) return v.get_string().get(*out);
    std::string_view token = v.raw_json_token();
    od::raw_json_string raw;
    if (auto error = v.get_raw_json_string().get(raw)) return error;
    size_t end = token.find_first_of("\"\\", 1);
    if (token[end] == '"') {
      *out = token.substr(1, end - 1);
      return simdjson::SUCCESS;
    }
    scratch.resize(token.size() + simdjson::SIMDJSON_PADDING);
    uint8_t* dst = reinterpret_cast<uint8_t*>(scratch.data());
    return parser->unescape(raw, dst).get(*out);
  }
  // A key compared in place: the sketch's keys have no escapes.
  static bool Is(od::field& field, std::string_view name) { return field.key() == name; }

  simdjson::error_code Server(od::object obj, const hawk::model::DesiredBackend* before,
                              hawk::model::BackendDelta* out) {
    absl::string_view name;
    hawk::model::ServerSpec spec;
    for (auto member : obj) {
      od::field f;
      if (auto error = std::move(member).get(f)) return error;
      absl::string_view text;
      if (Is(f, "name")) {
        if (auto error = String(f.value(), &name)) return error;
      } else if (Is(f, "address")) {
        if (auto error = String(f.value(), &text)) return error;
        spec.address = std::string(text);
      } else if (Is(f, "port") || Is(f, "weight")) {
        int64_t n = 0;
        if (auto error = f.value().get_int64().get(n)) return error;
        (Is(f, "port") ? spec.port : spec.weight) = static_cast<int>(n);
      } else if (Is(f, "state")) {
        if (auto error = String(f.value(), &text)) return error;
        spec.state = hawk::model::ServerStateFromName(text);
      }
    }
    if (before != nullptr) {
      auto held = before->servers.find(name);
      if (held != before->servers.end() && held->second == spec) return simdjson::SUCCESS;
    }
    out->servers.emplace_back(std::string(name), std::move(spec));
    return simdjson::SUCCESS;
  }

  simdjson::error_code Backend(od::object obj, const DesiredState& held, Delta* out) {
    hawk::model::BackendDelta delta;
    const hawk::model::DesiredBackend* before = nullptr;
    for (auto member : obj) {
      od::field f;
      if (auto error = std::move(member).get(f)) return error;
      if (Is(f, "name")) {
        absl::string_view name;
        if (auto error = String(f.value(), &name)) return error;
        delta.name = std::string(name);
        auto it = held.backends.find(name);
        if (it != held.backends.end()) before = &it->second;
      } else {
        od::array servers;
        if (auto error = f.value().get_array().get(servers)) return error;
        for (auto item : servers) {
          od::object server;
          if (auto error = item.get_object().get(server)) return error;
          if (auto error = Server(server, before, &delta)) return error;
        }
      }
    }
    if (!delta.servers.empty()) out->backends.push_back(std::move(delta));
    return simdjson::SUCCESS;
  }

  simdjson::error_code Map(od::object obj, const DesiredState& held, Delta* out) {
    hawk::model::TableDelta delta;
    const hawk::model::StringTable* before = nullptr;
    for (auto member : obj) {
      od::field f;
      if (auto error = std::move(member).get(f)) return error;
      if (Is(f, "name")) {
        absl::string_view name;
        if (auto error = String(f.value(), &name)) return error;
        delta.name = std::string(name);
        auto it = held.maps.find(name);
        if (it != held.maps.end()) before = &it->second;
        continue;
      }
      std::vector<bool> listed(before == nullptr ? 0 : before->id_limit());
      uint32_t cursor = 0;
      od::array entries;
      if (auto error = f.value().get_array().get(entries)) return error;
      for (auto item : entries) {
        od::object entry;
        if (auto error = item.get_object().get(entry)) return error;
        absl::string_view key, value;
        for (auto kv : entry) {
          od::field g;
          if (auto error = std::move(kv).get(g)) return error;
          if (auto error = String(g.value(), Is(g, "key") ? &key : &value)) return error;
        }
        auto found = before == nullptr ? absl::nullopt : before->FindEntry(key, &cursor);
        if (found) {
          listed[found->id] = true;
          if (found->value != value) delta.set.Set(key, value);
        } else {
          delta.set.Set(key, value);
        }
      }
      if (before != nullptr) {
        before->ForEachWithId([&](uint32_t id, absl::string_view key) {
          if (!listed[id]) delta.erase.Set(key, "");
        });
      }
    }
    if (!delta.set.empty() || !delta.erase.empty()) out->maps.push_back(std::move(delta));
    return simdjson::SUCCESS;
  }

  simdjson::error_code Document(const std::string& body, const DesiredState& held, Delta* out) {
    od::document doc;
    if (auto error = parser->iterate(body.data(), body.size(), body.capacity()).get(doc)) {
      return error;
    }
    od::object root;
    if (auto error = doc.get_object().get(root)) return error;
    for (auto member : root) {
      od::field f;
      if (auto error = std::move(member).get(f)) return error;
      absl::string_view text;
      if (Is(f, "version") || Is(f, "generation")) {
        if (auto error = String(f.value(), &text)) return error;
        (Is(f, "version") ? out->version : text) = std::string(text);
        continue;
      }
      bool backends = Is(f, "backends");
      od::array items;
      if (auto error = f.value().get_array().get(items)) return error;
      for (auto item : items) {
        od::object obj;
        if (auto error = item.get_object().get(obj)) return error;
        if (auto error = backends ? Backend(obj, held, out) : Map(obj, held, out)) return error;
      }
    }
    return doc.current_location().error() == simdjson::OUT_OF_BOUNDS ? simdjson::SUCCESS
                                                                     : simdjson::TAPE_ERROR;
  }
};

Delta ReadOnDemand(const std::string& body, const DesiredState& held, od::parser* parser,
                   bool in_place) {
  OdRead read{parser, in_place, {}};
  Delta delta;
  if (auto error = read.Document(body, held, &delta)) {
    std::fprintf(stderr, "on-demand sketch: %s\n", simdjson::error_message(error));
    std::abort();
  }
  return delta;
}

std::vector<Way> Ways() {
  static hawk::model::json::DocumentParser* kept = new hawk::model::json::DocumentParser;
  auto dom_kept = [](const std::string& body, const DesiredState& held) {
    return ReadDom(body, held, kept);
  };
  auto dom_fresh = [](const std::string& body, const DesiredState& held) {
    return ReadDom(body, held, nullptr);
  };
  auto release_kept = [] {
    kept->Release();
    ::malloc_trim(0);
  };
  auto trim = [] { ::malloc_trim(0); };
  static od::parser* od_parser = new od::parser;
  auto od_kept = [](bool in_place) {
    return [in_place](const std::string& body, const DesiredState& held) {
      return ReadOnDemand(body, held, od_parser, in_place);
    };
  };
  auto od_release = [] {
    *od_parser = od::parser();
    ::malloc_trim(0);
  };
  auto od_fresh = [](bool in_place) {
    return [in_place](const std::string& body, const DesiredState& held) {
      od::parser parser;
      return ReadOnDemand(body, held, &parser, in_place);
    };
  };
  return {
      {"(a) DOM, parser kept (hawk today)", HawkMalloc, dom_kept, [] {}, release_kept},
      {"(b) DOM, fresh parser + malloc_trim", HawkMalloc, dom_fresh, trim, trim},
      {"(d) DOM, fresh parser, mmap threshold 1 MiB", SmallMmapThreshold, dom_fresh},
      {"(c) On-Demand, parser kept", HawkMalloc, od_kept(true), [] {}, od_release},
      {"(c) On-Demand, fresh parser + malloc_trim", HawkMalloc, od_fresh(true), trim, trim},
      {"(c) On-Demand, fresh, strings copied", HawkMalloc, od_fresh(false), trim, trim},
      {"(c+d) On-Demand, fresh, mmap threshold 1 MiB", SmallMmapThreshold, od_fresh(true)},
  };
}

}  // namespace

int main(int argc, char** argv) {
  int puts = 30;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--puts") == 0 && i + 1 < argc &&
        absl::SimpleAtoi(argv[i + 1], &puts)) {
      ++i;
    } else {
      std::fprintf(stderr, "usage: %s [--puts N]\n", argv[0]);
      return 2;
    }
  }
  if (puts < 2) puts = 2;
  InChild(PrintFloor);
  std::printf("%d reads of the ingress document with one change against the ingress state held\n",
              puts);
  std::printf("%-44s %8s %8s %8s %8s %8s %8s %8s\n", "", "peak 1st", "peak", "kept", "released",
              "1st", "p50", "p90");
  std::printf("%-44s %8s %8s %8s %8s %8s %8s %8s\n", "way", "MiB", "MiB", "MiB", "MiB", "ms", "ms",
              "ms");
  for (const Way& way : Ways()) InChild([&] { RunWay(way, puts); });
  return 0;
}

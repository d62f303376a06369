// The zero-downtime proof (issue 5): the rolling-restart race, in baseline mode (updates reach
// only the current worker) and hawk mode (every worker), for each HAProxy variant and each
// HAProxy version, in one run. See tests/e2e/scenario.h for the scenario.
//
//   build/default/bench/zero_downtime [--cycles N] [--variants 'grace 1s,recommended,...']
//                                     [--haproxy all | --haproxy LABEL[=PATH][,LABEL[=PATH]...]]
//                                     [--manifest FILE] [--connections C]
//                                     [--one-shot-connections K] [--seed S]
//                                     [--min-flip-ms MS] [--results bench/RESULTS.md] [--verbose]
//
// --variants: names from StandardVariants() (default, grace 1s, idle-close-on-response,
//   close-spread-time 1s, recommended, grace 1s + slots), comma-separated; default: all of them.
// --one-shot-connections: K load clients beside the C keep-alive ones, each request on a new
//   connection (default 0); they meet a new worker first, which the slot model needs to show
//   a worker born without its servers (issue 26).
// --haproxy: the HAProxy versions to run against.
//   all                every "<label> <binary>" line of the manifest, in its order;
//   LABEL=PATH,...     these binaries, labelled so in the table;
//   LABEL,...          (an entry without '=') the manifest's binary for that label.
//   Without --haproxy: HaproxyProcess::DefaultBinary() ($HAWK_HAPROXY_BINARY, else
//   /usr/sbin/haproxy), labelled with its `-v` major.minor.
// --min-flip-ms: the earliest flip after the reload (default 0; the latest is 300 ms). From
//   ~150 ms on every cycle falls inside the race (the new worker has taken over).
// --manifest: the manifest `all` and bare labels read; default: the build's HAWK_HAPROXY_MANIFEST
//   (scripts/haproxy-versions.sh writes it, ~/.cache/hawk/haproxy/versions.txt).
//
// Order: for each version, for each variant, the baseline then hawk, back to back with the same
// seed (so both modes get the same flip delays). Each version's `haproxy -v` line is printed
// first.
//
// Prints a markdown table (HAProxy label, variant, mode, requests, failures, failures per
// 10,000, failures on the leaving worker, retries, p99 latency) and, for each run with failures,
// the per-worker report at the worst moment of its worst cycle; with --results, also replaces
// the section between `<!-- zero_downtime:begin -->` and `<!-- zero_downtime:end -->` there
// (the command, the start date and the duration included).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "bench/bench_haproxy.h"
#include "tests/e2e/scenario.h"
#include "tests/support/haproxy_process.h"

namespace {

using hawk::e2e::HaproxyVariant;
using hawk::e2e::Mode;
using hawk::e2e::ScenarioOptions;
using hawk::e2e::ScenarioResult;
using hawk::testing::HaproxyProcess;

using hawk::bench::Haproxy;
using hawk::bench::ParseHaproxy;
using hawk::bench::ShellWord;
using hawk::bench::Split;
using hawk::bench::VersionLine;

std::string UtcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M UTC", &tm);
  return buffer;
}

bool ReplaceSection(const std::string& path, const std::string& section) {
  constexpr const char* kBegin = "<!-- zero_downtime:begin -->";
  constexpr const char* kEnd = "<!-- zero_downtime:end -->";
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  std::string block = std::string(kBegin) + "\n" + section + kEnd;
  size_t begin = text.find(kBegin);
  size_t end = text.find(kEnd);
  if (begin != std::string::npos && end != std::string::npos && end > begin) {
    text.replace(begin, end + std::strlen(kEnd) - begin, block);
  } else {
    text += "\n" + block + "\n";
  }
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  int cycles = 500;
  int connections = 16;
  int one_shot_connections = 0;
  unsigned seed = 1;
  int min_flip_ms = 0;
  bool verbose = false;
  std::string results_path;
  std::string haproxy_spec;
  std::string manifest_path = HAWK_DEFAULT_HAPROXY_MANIFEST;
  std::vector<std::string> variant_names;
  for (const HaproxyVariant& v : hawk::e2e::StandardVariants()) variant_names.push_back(v.name);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--cycles") {
      cycles = std::atoi(value().c_str());
    } else if (arg == "--connections") {
      connections = std::atoi(value().c_str());
    } else if (arg == "--one-shot-connections") {
      one_shot_connections = std::atoi(value().c_str());
    } else if (arg == "--seed") {
      seed = static_cast<unsigned>(std::strtoul(value().c_str(), nullptr, 10));
    } else if (arg == "--min-flip-ms") {
      min_flip_ms = std::atoi(value().c_str());
    } else if (arg == "--variants") {
      variant_names = Split(value(), ',');
    } else if (arg == "--haproxy") {
      haproxy_spec = value();
    } else if (arg == "--manifest") {
      manifest_path = value();
    } else if (arg == "--results") {
      results_path = value();
    } else if (arg == "--verbose") {
      verbose = true;
    } else {
      std::fprintf(stderr,
                   "usage: zero_downtime [--cycles N] [--variants a,b] "
                   "[--haproxy all|LABEL[=PATH],...] [--manifest FILE] [--connections C] "
                   "[--one-shot-connections K] [--seed S] [--min-flip-ms MS] [--results FILE] "
                   "[--verbose]\n");
      return 2;
    }
  }
  for (const std::string& name : variant_names) {
    if (hawk::e2e::VariantNamed(name).name != name) {
      std::fprintf(stderr, "--variants: no variant '%s'\n", name.c_str());
      return 2;
    }
  }
  std::vector<Haproxy> versions;
  if (haproxy_spec.empty()) {
    std::string binary = HaproxyProcess::DefaultBinary();
    hawk::testing::HaproxyVersion v = HaproxyProcess::BinaryVersion(binary);
    versions.push_back({std::to_string(v.major) + "." + std::to_string(v.minor), binary, ""});
  } else if (!ParseHaproxy(haproxy_spec, manifest_path, &versions)) {
    return 2;
  }
  std::ostringstream version_lines;
  for (Haproxy& h : versions) {
    h.version_line = VersionLine(h.binary);
    if (h.version_line.find("HAProxy version") == std::string::npos) {
      std::fprintf(stderr, "%s (%s) is not an HAProxy binary: %s\n", h.label.c_str(),
                   h.binary.c_str(), h.version_line.c_str());
      return 2;
    }
    version_lines << h.label << ": " << h.binary << ": " << h.version_line << "\n";
  }
  std::fputs(version_lines.str().c_str(), stderr);

  std::string started_at = UtcNow();
  auto started = std::chrono::steady_clock::now();
  std::ostringstream table;
  table << "| HAProxy | variant | mode | cycles | requests | failures | per 10,000 | on the "
           "leaving worker | client retries | p99 latency |\n"
        << "|---|---|---|---|---|---|---|---|---|---|\n";
  std::ostringstream worst_reports;
  std::ostringstream without_failures;
  bool ok = true;
  for (const Haproxy& haproxy : versions) {
    for (const std::string& name : variant_names) {
      HaproxyVariant variant = hawk::e2e::VariantNamed(name);
      for (Mode mode : {Mode::kBaseline, Mode::kHawk}) {
        ScenarioOptions options;
        options.mode = mode;
        options.variant = variant;
        options.haproxy_binary = haproxy.binary;
        options.cycles = cycles;
        options.connections = connections;
        options.one_shot_connections = one_shot_connections;
        options.seed = seed;
        options.min_flip_delay_ms = min_flip_ms;
        options.verbose = verbose;
        hawk::e2e::FillBinaries(&options, HAWK_DEFAULT_BINARY, HAWK_DEFAULT_E2E_BACKEND,
                                HAWK_DEFAULT_LOAD_CLIENT);
        std::fprintf(stderr, "== HAProxy %s, %s, %s: %d cycles\n", haproxy.label.c_str(),
                     variant.name.c_str(), hawk::e2e::ModeName(mode), cycles);
        auto run_start = std::chrono::steady_clock::now();
        ScenarioResult r = hawk::e2e::RunScenario(options);
        std::fprintf(
            stderr, "   %.0f s\n",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count());
        if (!r.ok) {
          std::fprintf(stderr, "   failed: %s\n", r.error.c_str());
          std::string why = r.error.substr(0, 200);
          for (char& ch : why) {
            if (ch == '\n' || ch == '|') ch = ' ';
          }
          table << "| " << haproxy.label << " | " << variant.name << " | "
                << hawk::e2e::ModeName(mode) << " | did not run: " << why << " | | | | | | |\n";
          ok = false;
          continue;
        }
        char row[512];
        std::snprintf(row, sizeof(row),
                      "| %s | %s | %s | %zu | %lld | %lld | %.2f | %lld | %lld | %.1f ms |\n",
                      haproxy.label.c_str(), variant.name.c_str(), hawk::e2e::ModeName(mode),
                      r.cycles.size(), static_cast<long long>(r.requests),
                      static_cast<long long>(r.failures), r.failures_per_10k(),
                      static_cast<long long>(r.failures_on_leaving),
                      static_cast<long long>(r.retries), r.p99_ms);
        table << row;
        std::fputs(row, stdout);
        std::fflush(stdout);
        std::string run_name =
            haproxy.label + ", " + variant.name + ", " + hawk::e2e::ModeName(mode);
        if (r.worst_cycle < 0) {
          without_failures << (without_failures.tellp() > 0 ? "; " : "") << run_name;
          continue;
        }
        const hawk::e2e::CycleResult& c = r.cycles[static_cast<size_t>(r.worst_cycle)];
        worst_reports << "**" << run_name << "**: worst cycle " << (r.worst_cycle + 1) << " ("
                      << c.failures << " failures, flip " << c.flip_delay_ms
                      << " ms after the reload; old worker " << c.old_worker << ", new worker "
                      << c.new_worker << "; reload sent at t_ms " << c.reload_sent_ms
                      << ", PUT answered at t_ms " << c.put_answered_ms << ")\n\n```\n"
                      << absl::StrJoin(c.failure_events, "\n") << "\n```\n\n```json\n"
                      << c.report << "\n```\n\n";
      }
    }
  }
  double minutes =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() / 60.0;
  char duration[64];
  std::snprintf(duration, sizeof(duration), "%.0f min", minutes);
  std::ostringstream section;
  section << "```\n";
  for (int i = 0; i < argc; ++i) section << (i ? " " : "") << ShellWord(argv[i]);
  section << "   # started " << started_at << ", " << duration << "\n```\n\n"
          << "```\n"
          << version_lines.str() << "```\n\n"
          << table.str() << "\nPer-worker report (GET /v1/workers) at the worst "
          << "moment of the worst cycle, for each run with failures";
  if (without_failures.tellp() > 0) {
    section << " (none in: " << without_failures.str() << ")";
  }
  section << ":\n\n" << worst_reports.str();
  std::printf("\n%s", section.str().c_str());
  if (!results_path.empty() && !ReplaceSection(results_path, section.str())) {
    std::fprintf(stderr, "could not write %s\n", results_path.c_str());
    return 1;
  }
  return ok ? 0 : 1;
}

// The zero-downtime proof (issue 5): the rolling-restart race, in baseline mode (updates reach
// only the current worker) and hawk mode (every worker), for each HAProxy variant, in one run.
// See tests/e2e/scenario.h for the scenario.
//
//   build/default/bench/zero_downtime [--cycles N] [--variants default,grace 1s,...]
//                                     [--connections C] [--seed S] [--results bench/RESULTS.md]
//                                     [--verbose]
//
// Prints a markdown table (requests, failures, failures per 10,000, retries, p99 latency) and
// the per-worker report at the worst moment of the worst cycle; with --results, also replaces
// the section between `<!-- zero_downtime:begin -->` and `<!-- zero_downtime:end -->` there.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/scenario.h"

namespace {

using hawk::e2e::HaproxyVariant;
using hawk::e2e::Mode;
using hawk::e2e::ScenarioOptions;
using hawk::e2e::ScenarioResult;

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
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
  unsigned seed = 1;
  bool verbose = false;
  std::string results_path;
  std::vector<std::string> variant_names;
  for (const HaproxyVariant& v : hawk::e2e::StandardVariants()) variant_names.push_back(v.name);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--cycles") {
      cycles = std::atoi(value().c_str());
    } else if (arg == "--connections") {
      connections = std::atoi(value().c_str());
    } else if (arg == "--seed") {
      seed = static_cast<unsigned>(std::strtoul(value().c_str(), nullptr, 10));
    } else if (arg == "--variants") {
      variant_names = Split(value(), ',');
    } else if (arg == "--results") {
      results_path = value();
    } else if (arg == "--verbose") {
      verbose = true;
    } else {
      std::fprintf(stderr,
                   "usage: zero_downtime [--cycles N] [--variants a,b] [--connections C] "
                   "[--seed S] [--results FILE] [--verbose]\n");
      return 2;
    }
  }

  std::ostringstream table;
  table << "| HAProxy variant | mode | cycles | requests | failures | per 10,000 | on the leaving "
           "worker | client retries | p99 latency |\n"
        << "|---|---|---|---|---|---|---|---|---|\n";
  std::ostringstream worst_reports;
  bool ok = true;
  for (const std::string& name : variant_names) {
    HaproxyVariant variant = hawk::e2e::VariantNamed(name);
    for (Mode mode : {Mode::kBaseline, Mode::kHawk}) {
      ScenarioOptions options;
      options.mode = mode;
      options.variant = variant;
      options.cycles = cycles;
      options.connections = connections;
      options.seed = seed;
      options.verbose = verbose;
      hawk::e2e::FillBinaries(&options, HAWK_DEFAULT_BINARY, HAWK_DEFAULT_E2E_BACKEND,
                              HAWK_DEFAULT_LOAD_CLIENT);
      std::fprintf(stderr, "== %s, %s: %d cycles\n", variant.name.c_str(),
                   hawk::e2e::ModeName(mode), cycles);
      ScenarioResult r = hawk::e2e::RunScenario(options);
      if (!r.ok) {
        std::fprintf(stderr, "   failed: %s\n", r.error.c_str());
        ok = false;
        continue;
      }
      char row[512];
      std::snprintf(row, sizeof(row),
                    "| %s | %s | %zu | %lld | %lld | %.2f | %lld | %lld | %.1f ms |\n",
                    variant.name.c_str(), hawk::e2e::ModeName(mode), r.cycles.size(),
                    static_cast<long long>(r.requests), static_cast<long long>(r.failures),
                    r.failures_per_10k(), static_cast<long long>(r.failures_on_leaving),
                    static_cast<long long>(r.retries), r.p99_ms);
      table << row;
      std::fputs(row, stdout);
      std::fflush(stdout);
      int worst = r.worst_cycle >= 0 ? r.worst_cycle : 0;
      if (!r.cycles.empty()) {
        const hawk::e2e::CycleResult& c = r.cycles[static_cast<size_t>(worst)];
        worst_reports << "**" << variant.name << ", " << hawk::e2e::ModeName(mode)
                      << "**: worst cycle " << (worst + 1) << " (" << c.failures
                      << " failures, flip " << c.flip_delay_ms << " ms after the reload; old "
                      << "worker " << c.old_worker << ", new worker " << c.new_worker
                      << ")\n\n```json\n"
                      << c.report << "\n```\n\n";
      }
    }
  }
  std::ostringstream section;
  section << "```\n";
  for (int i = 0; i < argc; ++i) section << (i ? " " : "") << argv[i];
  section << "\n```\n\n"
          << table.str() << "\nPer-worker report (GET /v1/workers) at the worst "
          << "moment of the worst cycle, per variant and mode:\n\n"
          << worst_reports.str();
  std::printf("\n%s", section.str().c_str());
  if (!results_path.empty() && !ReplaceSection(results_path, section.str())) {
    std::fprintf(stderr, "could not write %s\n", results_path.c_str());
    return 1;
  }
  return ok ? 0 : 1;
}

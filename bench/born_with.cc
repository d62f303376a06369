// A reload loses no request: the new worker is born holding the desired servers (issue 26). The
// slot model (`server-template s 1-N 192.0.2.1:80 disabled`, every slot set at runtime to a live
// origin) under one-shot clients while HAProxy reloads; see tests/e2e/born_with.h for one case.
// For each HAProxy version and each N, three cases:
//   (a) baseline  hawk --write-servers=false, reloads through hawk (POST /v1/reload): each new
//                 worker starts with the placeholders and answers 503 until hawk seeds it;
//   (b) hawk      hawk --write-servers (the default), reloads through hawk: hawk writes the
//                 servers into the configuration first, the new worker is born with them;
//   (c) external  hawk --write-servers, reloads sent to the master CLI (`reload`), past hawk:
//                 nothing is written before them, so the new worker waits for hawk's seeding.
// A failure is a non-2xx or a transport error of a request; the cells are failed/total over the
// whole case (from the first reload until the last new worker serves every slot).
//
//   build/default/bench/born_with [--haproxy all | --haproxy LABEL[=PATH][,…]] [--manifest FILE]
//                                 [--slots 100,10000] [--reloads 20] [--interval-ms 500]
//                                 [--clients 4] [--modes baseline,hawk,external] [--verbose]
//
// --haproxy: default `all`, every version of the manifest (scripts/haproxy-versions.sh writes
//   it); without a manifest, HaproxyProcess::DefaultBinary(). --reloads: per case, each one
//   --interval-ms after the previous one's start (later if it took longer). --verbose: each
//   reload's figures on stderr. Prints numbers only: nothing here asserts.

#include "tests/e2e/born_with.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_haproxy.h"
#include "bench/stats.h"
#include "tests/support/haproxy_process.h"

namespace {

using hawk::bench::Haproxy;
using hawk::e2e::BornWithMode;
using hawk::e2e::BornWithOptions;
using hawk::e2e::BornWithResult;
using hawk::testing::HaproxyProcess;

constexpr BornWithMode kAllModes[] = {BornWithMode::kBaseline, BornWithMode::kHawk,
                                      BornWithMode::kExternal};

const char* ModeColumn(BornWithMode mode) {
  switch (mode) {
    case BornWithMode::kBaseline:
      return "(a) baseline: --write-servers=false, reloads through hawk";
    case BornWithMode::kHawk:
      return "(b) hawk: reloads through hawk";
    case BornWithMode::kExternal:
      return "(c) hawk, reloads past it (master CLI `reload`)";
  }
  return "?";
}

// `failed/total`, or why the case did not run.
std::string Cell(const BornWithResult& r) {
  if (!r.ok) return "did not run";
  return absl::StrCat(r.failures, "/", r.requests);
}

// The median reload duration of a case, ms (0 when none ran).
double MedianReloadMs(const BornWithResult& r) {
  std::vector<double> ms;
  for (const auto& reload : r.reloads) ms.push_back(reload.duration_ms);
  return ms.empty() ? 0 : hawk::bench::Median(ms);
}

int Usage() {
  std::fprintf(stderr,
               "usage: born_with [--haproxy all|LABEL[=PATH],...] [--manifest FILE] "
               "[--slots 100,10000] [--reloads 20] [--interval-ms 500] [--clients 4] "
               "[--modes baseline,hawk,external] [--verbose]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string haproxy_spec = "all";
  std::string manifest_path = HAWK_DEFAULT_HAPROXY_MANIFEST;
  std::vector<int> slots = {100, 10000};
  std::vector<BornWithMode> modes(std::begin(kAllModes), std::end(kAllModes));
  BornWithOptions base;
  base.reloads = 20;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    int number = 0;
    if (arg == "--haproxy") {
      haproxy_spec = value();
    } else if (arg == "--manifest") {
      manifest_path = value();
    } else if (arg == "--slots") {
      slots.clear();
      for (const std::string& n : hawk::bench::Split(value(), ',')) {
        if (!absl::SimpleAtoi(n, &number) || number < 1) return Usage();
        slots.push_back(number);
      }
      if (slots.empty()) return Usage();
    } else if (arg == "--reloads" && absl::SimpleAtoi(value(), &number) && number >= 1) {
      base.reloads = number;
    } else if (arg == "--interval-ms" && absl::SimpleAtoi(value(), &number) && number >= 0) {
      base.reload_interval = std::chrono::milliseconds(number);
    } else if (arg == "--clients" && absl::SimpleAtoi(value(), &number) && number >= 1) {
      base.clients = number;
    } else if (arg == "--modes") {
      modes.clear();
      for (const std::string& name : hawk::bench::Split(value(), ',')) {
        bool known = false;
        for (BornWithMode mode : kAllModes) {
          if (name == hawk::e2e::BornWithModeName(mode)) {
            modes.push_back(mode);
            known = true;
          }
        }
        if (!known) return Usage();
      }
      if (modes.empty()) return Usage();
    } else if (arg == "--verbose") {
      base.verbose = true;
    } else {
      return Usage();
    }
  }
  std::vector<Haproxy> versions;
  if (haproxy_spec == "all" && hawk::bench::ReadManifest(manifest_path).empty()) {
    std::string binary = HaproxyProcess::DefaultBinary();
    hawk::testing::HaproxyVersion v = HaproxyProcess::BinaryVersion(binary);
    versions.push_back({absl::StrCat(v.major, ".", v.minor), binary, ""});
  } else if (!hawk::bench::ParseHaproxy(haproxy_spec, manifest_path, &versions)) {
    return 2;
  }
  hawk::e2e::FillBinaries(&base, HAWK_DEFAULT_BINARY, HAWK_DEFAULT_E2E_BACKEND,
                          HAWK_DEFAULT_LOAD_CLIENT);

  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + hawk::bench::ShellWord(argv[i]);
  std::printf("```\n%s   # hawk %s\n", command.c_str(), base.hawk_binary.c_str());
  for (Haproxy& h : versions) {
    h.version_line = hawk::bench::VersionLine(h.binary);
    std::printf("%s: %s: %s\n", h.label.c_str(), h.binary.c_str(), h.version_line.c_str());
  }
  std::printf(
      "```\n\n%d clients, each request on a new connection; %d reloads per case, %lld ms "
      "apart; failed/total requests from the first reload until the last new worker serves every "
      "slot.\n\n",
      base.clients, base.reloads, static_cast<long long>(base.reload_interval.count()));
  std::string header = "| HAProxy | N |";
  std::string rule = "|---|---|";
  for (BornWithMode mode : modes) {
    absl::StrAppend(&header, " ", ModeColumn(mode), " |");
    rule += "---|";
  }
  std::printf("%s\n%s\n", header.c_str(), rule.c_str());
  std::fflush(stdout);

  // The gaps' table and the details go under the table: how long requests failed per reload,
  // where the time went and why a case did not run.
  std::string gaps =
      "\nThe longest failure gap of a reload (first to last failed request in "
      "its window; a 503 comes back at once and the clients go on at once, so the "
      "failure count grows with their speed, the gap does not), ms:\n\n" +
      header + "\n" + rule + "\n";
  std::string details;
  for (const Haproxy& h : versions) {
    for (int n : slots) {
      std::string row = absl::StrCat("| ", h.label, " | ", n, " |");
      std::string gap_row = row;
      for (BornWithMode mode : modes) {
        BornWithOptions options = base;
        options.mode = mode;
        options.slots = n;
        options.haproxy_binary = h.binary;
        BornWithResult r = hawk::e2e::RunBornWith(options);
        absl::StrAppend(&row, " ", Cell(r), " |");
        absl::StrAppend(&gap_row, " ",
                        r.ok ? absl::StrCat(static_cast<int64_t>(r.max_gap_ms)) : "-", " |");
        char line[512];
        std::snprintf(line, sizeof(line),
                      "- %s N=%d %s: %s, longest gap %.0f ms; reloads median %.0f ms; slots "
                      "seeded in %.0f ms; the last new worker served every slot %.0f ms after "
                      "its window; case %.1f s",
                      h.label.c_str(), n, hawk::e2e::BornWithModeName(mode),
                      hawk::e2e::FailureFigure(r).c_str(), r.max_gap_ms, MedianReloadMs(r),
                      r.seed_ms, r.last_served_ms, r.case_seconds);
        absl::StrAppend(&details, line, r.ok ? "" : "; did not run: " + r.error, "\n");
      }
      std::printf("%s\n", row.c_str());
      std::fflush(stdout);
      gaps += gap_row + "\n";
    }
  }
  std::printf("%s\n%s", gaps.c_str(), details.c_str());
  return 0;
}

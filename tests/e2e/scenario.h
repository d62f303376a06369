#pragma once

// The rolling-restart race (issue 5), reproduced on one machine with real HAProxy, real
// backends and real load, in two modes:
//   kBaseline  `hawk --workers=current`: runtime updates reach only the current worker, as with
//              controllers that use the stats socket (Dataplane API);
//   kHawk      every live worker, leaving ones included.
//
// One cycle: write a configuration with one structural change (SRV_1 still at backend A) and
// reload through hawk (POST /v1/reload); inside the reload window (a delay drawn from
// [min_flip_delay, max_flip_delay] ms after the reload was sent) start backend B, push SRV_1 -> B
// (PUT /v1/state, answered once every reachable target worker holds it) and make A stop
// accepting (SIGTERM: a terminating pod; the connections it already has end after their next
// response, scenario.cc's kOriginLameDuckMs). The cycle ends when no leaving worker is left. B is
// the next cycle's A.
//
// Load: C keep-alive connections sending back to back plus a prober every 200 ms
// (hawk_load_client, which retries once a GET whose reused connection closed before any byte,
// as real clients do), and optionally one-shot clients (a new connection per request). A failure
// is a non-2xx or a transport error after that retry.
//
// Everything runs in its own temp dir on free ports; every process is stopped by pid.

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/haproxy_process.h"

namespace hawk::e2e {

enum class Mode { kBaseline, kHawk };
const char* ModeName(Mode mode);  // "baseline", "hawk"

// The HAProxy settings a configuration adds to the scenario's base configuration.
struct HaproxyVariant {
  std::string name;            // "default", "grace 1s", …
  std::string global_lines;    // e.g. "    grace 1s\n"
  std::string defaults_lines;  // e.g. "    option idle-close-on-response\n"
  // The slot model of ingress controllers: `be` declares SRV_1 and SRV_2 as `server-template SRV_
  // 1-2 192.0.2.1:80 disabled` placeholders instead of SRV_1 at A, so the configuration never
  // names an origin and SRV_1 holds A only because hawk set it (the first PUT, then what hawk
  // writes into the configuration before each reload, issue 26).
  bool slots = false;
};
// default; grace 1s; idle-close-on-response; close-spread-time 1s; recommended: README.md's
// "Recommended HAProxy settings" (global `grace 1s` and `hard-stop-after 30s`, defaults `option
// idle-close-on-response`; `master-worker` is the -W the scenario starts HAProxy with, and the
// optional server-state file is left out); grace 1s + slots: `grace 1s` in the slot model.
std::vector<HaproxyVariant> StandardVariants();
// The variant called `name` among StandardVariants(); the first one if none is.
HaproxyVariant VariantNamed(const std::string& name);

struct ScenarioOptions {
  Mode mode = Mode::kHawk;
  HaproxyVariant variant;
  int cycles = 20;
  int connections = 16;
  // Load clients beside `connections` that open a new connection per request: each request meets
  // the worker that listens at that moment, so a new worker is tried the moment it takes over.
  int one_shot_connections = 0;
  int prober_interval_ms = 200;
  // A flip before the new worker has taken over (~120 ms after the reload on this machine kind)
  // reaches the old worker while it is still current: only later flips are the race.
  int min_flip_delay_ms = 0;
  int max_flip_delay_ms = 300;
  uint32_t seed = 1;  // the flip delays; the same seed gives both modes the same delays
  // The HAProxy the scenario runs ($HAWK_HAPROXY_BINARY, else Debian 12's 2.6).
  std::string haproxy_binary = hawk::testing::HaproxyProcess::DefaultBinary();
  // Paths of the programs (from the environment or compile-time defaults).
  std::string hawk_binary, backend_binary, load_client_binary;
  bool verbose = false;  // one line per cycle on stderr
};

struct CycleResult {
  int flip_delay_ms = 0;
  int64_t requests = 0;
  int64_t failures = 0;
  int64_t retries = 0;
  int64_t failures_on_leaving = 0;  // failed requests whose X-Pid was a leaving worker's
  // The load client's event lines for this cycle's failures (the first few): what failed, how
  // (status or transport error) and on which worker, so a failure can be told apart from a race.
  std::vector<std::string> failure_events;
  // When the reload was sent and the flip's PUT answered, on the events' clock (CLOCK_MONOTONIC,
  // ms): where in the cycle each failure event's t_ms falls.
  int64_t reload_sent_ms = 0, put_answered_ms = 0;
  int old_worker = 0, new_worker = 0;
  bool reload_ok = false;
  std::string report;  // GET /v1/workers at the cycle's worst moment (most stale state seen)
  int report_score = -1;
};

struct ScenarioResult {
  bool ok = false;    // the scenario ran (processes started, reloads succeeded)
  std::string error;  // why not
  int64_t requests = 0;
  int64_t failures = 0;
  int64_t retries = 0;
  int64_t failures_on_leaving = 0;
  double rps = 0;
  double p99_ms = 0;
  std::vector<CycleResult> cycles;
  int worst_cycle = -1;  // the cycle with the most failures (-1 when none failed)

  double failures_per_10k() const {
    return requests == 0 ? 0 : 10000.0 * static_cast<double>(failures) / requests;
  }
};

ScenarioResult RunScenario(const ScenarioOptions& options);

// Fills the program paths from HAWK_BINARY, HAWK_E2E_BACKEND, HAWK_LOAD_CLIENT, falling back to
// the given defaults.
void FillBinaries(ScenarioOptions* options, const std::string& default_hawk,
                  const std::string& default_backend, const std::string& default_load_client);

}  // namespace hawk::e2e

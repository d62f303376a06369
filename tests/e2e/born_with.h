#pragma once

// A reload loses no request: the new worker is born holding the desired servers (issue 26).
//
// Ingress controllers keep a backend as N slots, `server-template s 1-N 192.0.2.1:80 disabled`,
// and give each slot an endpoint at runtime. A worker started from that configuration holds N
// disabled placeholders: until hawk has seeded it, a request it accepts finds no server (503).
// With --write-servers hawk writes every managed server's address, port, weight and state into
// --haproxy-config before each reload through it, so the new worker starts with them.
//
// One case: HAProxy (-W -S, its own temp dir, free ports) with `backend be` of N slots, one live
// origin, hawk; a PUT of every slot s1..sN -> the origin, READY, until every worker holds it; then
// C clients each opening a new connection per request (so each request meets whichever worker
// listens at that moment) while K reloads go ~interval apart, each waited for. A failure is a
// non-2xx or a transport error. The run ends once the last new worker serves every slot, by
// HAProxy's own `show servers state` (hawk's report may take longer to say so).
//
// Modes:
//   kBaseline  hawk --write-servers=false, reloads through hawk (POST /v1/reload): hawk seeds
//              each new worker over the master CLI once it is listed (the behaviour before
//              issue 26);
//   kHawk      hawk --write-servers=true, reloads through hawk;
//   kExternal  hawk --write-servers=true, but the reloads go to the master CLI (`reload`), not
//              through hawk: nothing is written before them, so the configuration holds what it
//              held at the start, the placeholders, and the new worker waits for hawk's seeding.
//              What an operator's own `systemctl reload` costs beside hawk.
//
// Everything runs in its own temp dir on free ports; every process is stopped by pid.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/support/haproxy_process.h"

namespace hawk::e2e {

enum class BornWithMode { kBaseline, kHawk, kExternal };
const char* BornWithModeName(BornWithMode mode);  // "baseline", "hawk", "external"

struct BornWithOptions {
  BornWithMode mode = BornWithMode::kHawk;
  int slots = 100;                                 // N: s1..sN
  int reloads = 5;                                 // K
  std::chrono::milliseconds reload_interval{500};  // from one reload's start to the next one's
  int clients = 4;  // C, each one request at a time, each on a new connection
  // The HAProxy the case runs ($HAWK_HAPROXY_BINARY, else Debian 12's 2.6).
  std::string haproxy_binary = hawk::testing::HaproxyProcess::DefaultBinary();
  // Paths of the programs (FillBinaries).
  std::string hawk_binary, backend_binary, load_client_binary;
  bool verbose = false;  // one line per step and per reload on stderr
};

struct BornWithReload {
  int old_worker = 0, new_worker = 0;
  double duration_ms = 0;  // sent -> answered (through hawk) or the new worker listed (external)
  int64_t requests = 0;    // from this reload's start to the next one's (or the end)
  int64_t failures = 0;
  // From the first to the last failure of that window: how long requests met a worker without
  // servers. A 503 comes back at once and the clients send the next request at once, so
  // `failures` grows with the clients' speed; the gap does not.
  double gap_ms = 0;
};

struct BornWithResult {
  bool ok = false;    // the case ran (processes started, every reload succeeded)
  std::string error;  // why not
  int64_t requests = 0;
  int64_t failures = 0;
  std::map<std::string, int64_t> failures_by_kind;  // "status_503", "connect_refused", …
  std::vector<std::string> failure_events;          // the load client's first failure lines
  std::vector<BornWithReload> reloads;
  double max_gap_ms = 0;  // the longest gap of a reload
  // "Serves" below is HAProxy's own view (`show servers state`): address, port, no maintenance.
  double seed_ms = 0;         // the PUT of every slot sent -> the worker serves every slot
  double last_served_ms = 0;  // the last reload's window -> its new worker serves every slot
  double case_seconds = 0;    // the whole case, start to stop
};

BornWithResult RunBornWith(const BornWithOptions& options);

// Fills the program paths from HAWK_BINARY, HAWK_E2E_BACKEND, HAWK_LOAD_CLIENT, falling back to
// the given defaults.
void FillBinaries(BornWithOptions* options, const std::string& default_hawk,
                  const std::string& default_backend, const std::string& default_load_client);

// "failed/total" and the kinds, e.g. `40/6414 (status_503 40)`.
std::string FailureFigure(const BornWithResult& result);

}  // namespace hawk::e2e

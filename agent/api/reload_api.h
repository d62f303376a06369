#pragma once

// POST /v1/reload and GET /v1/reloads.
//
// POST: optional body `{"config":"<full haproxy.cfg text>"}` (validated first: 400 naming the
// field). Requests that arrive during a reload are coalesced into the next one; each is answered
// with the outcome of the reload that covered it:
//   200 `{"success":true,"newWorkerPid":N,"durationMs":N,"log":"…",…}`
//   422 the configuration was rejected (by `haproxy -c` or by HAProxy): the body also carries
//       `error`, and the previous configuration file is back in place
//   503 the master CLI is unreachable; 504 no verdict in time; 500 a file could not be written.
// GET: the recent reloads, newest first, whoever triggered them.

#include <string>

#include "agent/api/router.h"
#include "agent/reload/reloader.h"

namespace hawk::api {

void RegisterReloadRoutes(Router* router, reload::Reloader* reloader);

// hawk.v1.ReloadResponse / hawk.v1.ReloadsResponse in the proto3 JSON mapping.
std::string ReloadOutcomeToJson(const reload::ReloadOutcome& outcome);
std::string ReloadHistoryToJson(const std::vector<reload::ReloadRecord>& records);

}  // namespace hawk::api

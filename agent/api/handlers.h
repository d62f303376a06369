#pragma once

// The endpoints. Each Register* function adds its routes; the app decides which listener gets
// which (the probe listener serves only health, readiness and metrics).

#include <functional>

#include "absl/strings/string_view.h"
#include "agent/api/router.h"
#include "agent/model/workers.h"
#include "agent/registry/registry.h"

namespace hawk::api {

// GET /healthz: 200 while the loop runs. GET /readyz: 200 only while the master CLI answers
// and a CURRENT worker is known, else 503 with the reason: with `detail` (the API listeners) the
// registry's text, which names sockets and quotes the master's errors; without (the probe
// listener, which anyone who reaches it may read) only the reason code (WorkerRegistry::Ready).
void RegisterHealthRoutes(Router* router, const registry::WorkerRegistry* registry, bool detail);

// GET /v1/workers: the per-worker report, as `snapshot` composes it.
void RegisterWorkerRoutes(Router* router, std::function<model::WorkersReport()> snapshot);

}  // namespace hawk::api

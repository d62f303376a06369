#pragma once

// GET /metrics: hawk's state and counters in the Prometheus text exposition format
// (agent/metrics). A scrape reads what the components already hold (the per-worker report,
// counters, histograms): O(workers + stale objects), nothing is computed on a push's path.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "agent/api/router.h"
#include "agent/cli/client.h"
#include "agent/metrics/exposition.h"
#include "agent/model/workers.h"
#include "agent/reconcile/push_latency.h"
#include "agent/reconcile/reconciler.h"
#include "agent/reload/reloader.h"

namespace hawk::api {

// What a scrape reads. The pointers outlive the routes.
struct MetricsSources {
  std::function<model::WorkersReport()> snapshot;
  const reconcile::Reconciler* reconciler = nullptr;
  const reconcile::PushLatency* push_latency = nullptr;
  const reload::Reloader* reloader = nullptr;
  const cli::MasterClient* client = nullptr;
  // Each listener's address and its open connections (hawk_http_connections); may be empty.
  std::function<std::vector<std::pair<std::string, size_t>>()> listeners;
};

// The families of one scrape. The histograms point into the latency's and reloader's
// counters: format them before those change (on the loop thread, at once).
std::vector<metrics::Family> CollectMetrics(const model::WorkersReport& report,
                                            const reconcile::ReconcilerStats& reconciler,
                                            const reconcile::PushLatency& latency,
                                            const reload::ReloadCounters& reloads,
                                            const cli::MasterClientStats& client);

void RegisterMetricsRoutes(Router* router, MetricsSources sources);

}  // namespace hawk::api

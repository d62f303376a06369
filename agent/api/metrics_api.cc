#include "agent/api/metrics_api.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/base/build_info.h"
#include "agent/http/response.h"

namespace hawk::api {
namespace {

using metrics::Family;
using metrics::Labels;
using metrics::MetricType;

// "backend/b/server/s" → "server", "backend/b" → "backend", "map/…" → "map", "acl/…" → "acl".
std::string StaleKind(absl::string_view object) {
  if (absl::StartsWith(object, "backend/")) {
    return absl::StrContains(object, "/server/") ? "server" : "backend";
  }
  size_t slash = object.find('/');
  return std::string(object.substr(0, slash));
}

}  // namespace

std::vector<Family> CollectMetrics(const model::WorkersReport& report,
                                   const reconcile::ReconcilerStats& reconciler,
                                   const reconcile::PushLatency& latency,
                                   const reload::ReloadCounters& reloads,
                                   const cli::MasterClientStats& client) {
  std::vector<Family> out;
  // The same version and commit as `hawk --version`.
  out.emplace_back("hawk_build_info", "hawk's version and commit; always 1.", MetricType::kGauge)
      .Add({{"version", std::string(base::BuildVersion())},
            {"commit", std::string(base::BuildCommit())}},
           1);
  out.emplace_back("hawk_master_cli_reachable", "1 while HAProxy's master CLI answers, else 0.",
                   MetricType::kGauge)
      .Add({}, report.master_reachable ? 1 : 0);
  if (!report.master.version.empty()) {
    out.emplace_back("hawk_haproxy_info", "The HAProxy master hawk watches; always 1.",
                     MetricType::kGauge)
        .Add({{"version", report.master.version}, {"master_pid", absl::StrCat(report.master.pid)}},
             1);
  }
  out.emplace_back("hawk_master_cli_connections", "Connections hawk holds open to the master CLI.",
                   MetricType::kGauge)
      .Add({}, client.open_connections);
  out.emplace_back("hawk_master_cli_connects_total", "Connections hawk opened to the master CLI.",
                   MetricType::kCounter)
      .Add({}, static_cast<double>(client.connects));
  out.emplace_back("hawk_master_cli_connect_failures_total",
                   "Connection attempts to the master CLI that failed.", MetricType::kCounter)
      .Add({}, static_cast<double>(client.connect_failures));
  out.emplace_back("hawk_master_cli_connections_lost_total",
                   "Master CLI connections the master closed (reloads, restarts).",
                   MetricType::kCounter)
      .Add({}, static_cast<double>(client.connections_lost));
  out.emplace_back("hawk_master_cli_slots_lost",
                   "Master CLI slots the master keeps for sessions it closed on hawk, until it "
                   "re-executes (HAProxy 2.6 relaying to an exiting worker).",
                   MetricType::kGauge)
      .Add({}, report.master_cli.slots_lost);
  out.emplace_back("hawk_master_cli_connections_held",
                   "Master CLI connections kept for a relayed reply past its batch deadline.",
                   MetricType::kGauge)
      .Add({}, client.held_connections);
  out.emplace_back("hawk_master_cli_relay_closes_total",
                   "Master CLI connections the master closed right after relaying a command.",
                   MetricType::kCounter)
      .Add({}, static_cast<double>(client.relay_closes));
  out.emplace_back("hawk_master_cli_batches_held_back_total",
                   "Batches not sent: their worker was not listed or was sent nothing more.",
                   MetricType::kCounter)
      .Add({}, static_cast<double>(client.batches_held_back));
  int not_relayed = 0;
  for (const model::WorkerReport& w : report.workers) not_relayed += w.not_relayed.empty() ? 0 : 1;
  out.emplace_back("hawk_workers_not_relayed",
                   "Listed workers hawk sends nothing more through the master (exit near).",
                   MetricType::kGauge)
      .Add({}, not_relayed);

  Family& workers = out.emplace_back("hawk_workers", "Workers listed by the master, by role.",
                                     MetricType::kGauge);
  absl::flat_hash_map<std::string, int> by_role;
  for (model::WorkerRole role : {model::WorkerRole::kCurrent, model::WorkerRole::kLeaving,
                                 model::WorkerRole::kStarting, model::WorkerRole::kUnknown}) {
    by_role[std::string(model::WorkerRoleName(role))] = 0;
  }
  for (const model::WorkerReport& w : report.workers) {
    ++by_role[std::string(model::WorkerRoleName(w.role))];
  }
  for (const auto& [role, count] : by_role) workers.Add({{"role", role}}, count);

  Family connections("hawk_worker_connections", "A worker's live client connections (CurrConns).",
                     MetricType::kGauge);
  Family uptime("hawk_worker_uptime_seconds", "How long a worker has run.", MetricType::kGauge);
  Family in_sync("hawk_worker_in_sync",
                 "1 when a worker holds the latest desired state in full, else 0.",
                 MetricType::kGauge);
  Family frozen("hawk_worker_frozen",
                "1 for a leaving worker that refuses server changes (Proxy is disabled.), else 0.",
                MetricType::kGauge);
  Family stale("hawk_worker_stale_objects",
               "Objects a worker does not hold as desired, by kind (server, backend, map, acl).",
               MetricType::kGauge);
  Family refused("hawk_worker_refused_commands", "Commands a worker refused in its last reconcile.",
                 MetricType::kGauge);
  Family sessions("hawk_worker_sessions_on_stale_servers",
                  "Live streams on a worker whose server is stale there.", MetricType::kGauge);
  Family generation("hawk_worker_applied_generation",
                    "The generation of the desired state a worker last reached in full.",
                    MetricType::kGauge);
  Family created("hawk_worker_servers_created",
                 "Servers hawk created on a worker (add server, or its configuration block).",
                 MetricType::kGauge);
  Family draining("hawk_worker_servers_draining",
                  "Servers hawk created on a worker that left the desired state and wait for "
                  "their connections to end before they are deleted.",
                  MetricType::kGauge);
  for (const model::WorkerReport& w : report.workers) {
    Labels labels{{"pid", absl::StrCat(w.pid)},
                  {"role", std::string(model::WorkerRoleName(w.role))}};
    connections.Add(labels, static_cast<double>(w.connections));
    uptime.Add(labels, static_cast<double>(w.uptime_seconds));
    if (!w.sync.managed) continue;
    in_sync.Add(labels, w.sync.in_sync ? 1 : 0);
    frozen.Add(labels, w.sync.frozen ? 1 : 0);
    absl::flat_hash_map<std::string, int> kinds{
        {"server", 0}, {"backend", 0}, {"map", 0}, {"acl", 0}};
    for (const model::StaleObject& object : w.sync.stale) ++kinds[StaleKind(object.object)];
    for (const auto& [kind, count] : kinds) {
      Labels with_kind = labels;
      with_kind.emplace_back("kind", kind);
      stale.Add(std::move(with_kind), count);
    }
    refused.Add(labels, static_cast<double>(w.sync.refused.size()));
    sessions.Add(labels, static_cast<double>(w.sync.sessions_on_stale_servers));
    created.Add(labels, static_cast<double>(w.sync.created_servers.size()));
    draining.Add(labels, static_cast<double>(w.sync.draining_servers.size()));
    if (w.sync.applied_generation) {
      generation.Add(labels, static_cast<double>(*w.sync.applied_generation));
    }
  }
  for (Family* f : {&connections, &uptime, &in_sync, &frozen, &stale, &refused, &sessions,
                    &generation, &created, &draining}) {
    out.push_back(std::move(*f));
  }

  out.emplace_back("hawk_reconciles_total", "Reconciles of a worker, by kind.",
                   MetricType::kCounter)
      .Add({{"kind", "incremental"}}, static_cast<double>(reconciler.incremental_reconciles))
      .Add({{"kind", "seed"}}, static_cast<double>(reconciler.seeds))
      .Add({{"kind", "observe"}}, static_cast<double>(reconciler.observes));
  out.emplace_back("hawk_cli_commands_total", "Commands hawk sent to HAProxy's workers.",
                   MetricType::kCounter)
      .Add({}, static_cast<double>(reconciler.commands_sent));
  out.emplace_back("hawk_tables_from_files_total",
                   "Maps and ACLs a new worker took from the files hawk wrote before the reload.",
                   MetricType::kCounter)
      .Add({}, static_cast<double>(reconciler.tables_from_files));
  out.emplace_back("hawk_push_applied_seconds",
                   "From a push being accepted to a worker holding it, by the worker's role.",
                   MetricType::kHistogram)
      .Add({{"role", "CURRENT"}}, &latency.applied_current())
      .Add({{"role", "LEAVING"}}, &latency.applied_leaving());
  out.emplace_back("hawk_worker_seed_seconds",
                   "From a new worker being listed to it holding the desired state.",
                   MetricType::kHistogram)
      .Add({}, &latency.seed());

  Family& reload_total = out.emplace_back("hawk_reloads_total",
                                          "HAProxy reloads, by trigger (API, EXTERNAL) and result.",
                                          MetricType::kCounter);
  for (reload::ReloadTrigger trigger :
       {reload::ReloadTrigger::kApi, reload::ReloadTrigger::kExternal}) {
    for (reload::ReloadResult result :
         {reload::ReloadResult::kSucceeded, reload::ReloadResult::kFailed,
          reload::ReloadResult::kTimedOut, reload::ReloadResult::kUnreachable}) {
      reload_total.Add({{"trigger", reload::ReloadTriggerName(trigger)},
                        {"result", reload::ReloadResultName(result)}},
                       static_cast<double>(
                           reloads.reloads[static_cast<int>(trigger)][static_cast<int>(result)]));
    }
  }
  out.emplace_back("hawk_reload_duration_seconds",
                   "From a reload's start (or detection) to its verdict.", MetricType::kHistogram)
      .Add({}, &reloads.duration_seconds);
  return out;
}

void RegisterMetricsRoutes(Router* router, MetricsSources sources) {
  router->Add("GET", "/metrics", [sources](const http::Request&, http::Responder responder) {
    http::Response response;
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    std::vector<Family> families =
        CollectMetrics(sources.snapshot(), sources.reconciler->stats(), *sources.push_latency,
                       sources.reloader->counters(), sources.client->stats());
    if (sources.listeners) {
      Family& connections = families.emplace_back(
          "hawk_http_connections",
          "Open connections on one of hawk's listeners, those being refused (503) included.",
          MetricType::kGauge);
      for (const auto& [listener, count] : sources.listeners()) {
        connections.Add({{"listener", listener}}, static_cast<double>(count));
      }
    }
    response.body = metrics::FormatText(families);
    responder.Send(std::move(response));
  });
}

}  // namespace hawk::api

#include "agent/model/workers_json.h"

#include "absl/strings/str_cat.h"

namespace hawk::model {

std::string FormatTimestamp(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

void WriteStale(const StaleObject& stale, base::JsonWriter* w) {
  w->BeginObject();
  w->Key("object").String(stale.object);
  w->Key("field").String(stale.field);
  w->Key("desired").String(stale.desired);
  w->Key("actual").String(stale.actual);
  w->Key("reason").String(stale.reason);
  w->EndObject();
}

void WriteRefusal(const Refusal& refusal, base::JsonWriter* w) {
  w->BeginObject();
  w->Key("object").String(refusal.object);
  w->Key("command").String(refusal.command);
  w->Key("reply").String(refusal.reply);
  w->EndObject();
}

void WriteWorker(const WorkerReport& worker, base::JsonWriter* w) {
  w->BeginObject();
  w->Key("pid").Int(worker.pid);
  w->Key("role").String(WorkerRoleName(worker.role));
  w->Key("stopping").Bool(worker.stopping);
  w->Key("reloads").Int(worker.reloads);
  w->Key("uptimeSeconds").Int(worker.uptime_seconds);
  w->Key("version").String(worker.version);
  w->Key("connections").Int(worker.connections);
  w->Key("listedAsOld").Bool(worker.listed_as_old);
  if (!worker.error.empty()) w->Key("error").String(worker.error);
  if (!worker.not_relayed.empty()) w->Key("notRelayed").String(worker.not_relayed);
  const WorkerSync& sync = worker.sync;
  w->Key("appliedVersion").String(sync.applied_version);
  // int64 as a decimal string, as the proto3 JSON mapping writes it.
  if (sync.applied_generation) {
    w->Key("appliedGeneration").String(absl::StrCat(*sync.applied_generation));
  }
  w->Key("inSync").Bool(sync.in_sync);
  w->Key("frozen").Bool(sync.frozen);
  if (sync.frozen_since != absl::InfinitePast()) {
    w->Key("frozenSince").String(FormatTimestamp(sync.frozen_since));
  }
  w->Key("stale").BeginArray();
  for (const StaleObject& s : sync.stale) WriteStale(s, w);
  w->EndArray();
  w->Key("refused").BeginArray();
  for (const Refusal& r : sync.refused) WriteRefusal(r, w);
  w->EndArray();
  w->Key("sessionsOnStaleServers").Int(sync.sessions_on_stale_servers);
  if (!sync.error.empty()) w->Key("syncError").String(sync.error);
  w->Key("createdServers").BeginArray();
  for (const std::string& server : sync.created_servers) w->String(server);
  w->EndArray();
  w->Key("drainingServers").BeginArray();
  for (const std::string& server : sync.draining_servers) w->String(server);
  w->EndArray();
  w->EndObject();
}

std::string WorkersReportToJson(const WorkersReport& report) {
  base::JsonWriter w;
  w.BeginObject();
  w.Key("masterReachable").Bool(report.master_reachable);
  if (!report.master_error.empty()) w.Key("masterError").String(report.master_error);
  w.Key("master").BeginObject();
  w.Key("pid").Int(report.master.pid);
  w.Key("reloads").Int(report.master.reloads);
  w.Key("failedReloads").Int(report.master.failed_reloads);
  w.Key("version").String(report.master.version);
  w.Key("uptimeSeconds").Int(report.master.uptime_seconds);
  w.EndObject();
  w.Key("workers").BeginArray();
  for (const WorkerReport& worker : report.workers) WriteWorker(worker, &w);
  w.EndArray();
  if (report.observed_at != absl::InfinitePast()) {
    w.Key("observedAt").String(FormatTimestamp(report.observed_at));
  }
  w.Key("warnings").BeginArray();
  for (const std::string& warning : report.warnings) w.String(warning);
  w.EndArray();
  const MasterCliReport& cli = report.master_cli;
  w.Key("masterCli").BeginObject();
  w.Key("connections").Int(cli.connections);
  w.Key("maxConnections").Int(cli.max_connections);
  w.Key("slotsLost").Int(cli.slots_lost);
  w.Key("held").BeginArray();
  for (const HeldConnectionReport& held : cli.held) {
    w.BeginObject();
    w.Key("pid").Int(held.pid);
    w.Key("command").String(held.command);
    if (held.since != absl::InfinitePast()) w.Key("since").String(FormatTimestamp(held.since));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return w.Take();
}

}  // namespace hawk::model

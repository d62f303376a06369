#include "agent/model/workers_json.h"

namespace hawk::model {

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
    // google.protobuf.Timestamp's JSON form: RFC 3339 in UTC.
    w.Key("observedAt")
        .String(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", report.observed_at, absl::UTCTimeZone()));
  }
  w.EndObject();
  return w.Take();
}

}  // namespace hawk::model

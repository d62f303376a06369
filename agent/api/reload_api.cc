#include "agent/api/reload_api.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/base/json_writer.h"
#include "agent/base/status_field.h"
#include "agent/http/response.h"
#include "agent/model/reload_json.h"
#include "agent/model/workers_json.h"

namespace hawk::api {
namespace {

int64_t Ms(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

// The record fields both messages share.
void WriteRecordFields(const reload::ReloadRecord& r, base::JsonWriter* w) {
  w->Key("id").Int(static_cast<int64_t>(r.id));
  w->Key("trigger").String(reload::ReloadTriggerName(r.trigger));
  w->Key("result").String(reload::ReloadResultName(r.result));
  if (r.started_at != absl::InfinitePast()) {
    w->Key("startedAt").String(model::FormatTimestamp(r.started_at));
  }
  w->Key("durationMs").Int(Ms(r.duration));
  w->Key("newWorkerPid").Int(r.new_worker_pid);
  w->Key("requests").Int(r.requests);
  w->Key("log").String(r.log);
  w->Key("configWritten").Bool(r.config_written);
  w->Key("configRestored").Bool(r.config_restored);
}

int HttpStatusFor(const absl::Status& status) {
  if (status.ok()) return 200;
  // 422: the request was well formed, but HAProxy cannot load the configuration it asks for.
  if (absl::IsFailedPrecondition(status)) return 422;
  return http::HttpStatusFromCode(status.code());
}

}  // namespace

std::string ReloadOutcomeToJson(const reload::ReloadOutcome& outcome) {
  base::JsonWriter w;
  w.BeginObject();
  w.Key("success").Bool(outcome.status.ok());
  WriteRecordFields(outcome.record, &w);
  if (!outcome.status.ok()) {
    http::WriteErrorMember(absl::StatusCodeToString(outcome.status.code()),
                           outcome.status.message(), base::FieldOf(outcome.status), &w);
  }
  w.EndObject();
  return w.Take();
}

std::string ReloadHistoryToJson(const std::vector<reload::ReloadRecord>& records) {
  base::JsonWriter w;
  w.BeginObject();
  w.Key("reloads").BeginArray();
  for (const reload::ReloadRecord& r : records) {
    w.BeginObject();
    WriteRecordFields(r, &w);
    if (!r.error.empty()) w.Key("error").String(r.error);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

void RegisterReloadRoutes(Router* router, reload::Reloader* reloader) {
  router->Add(
      "POST", "/v1/reload", [reloader](const http::Request& request, http::Responder responder) {
        absl::StatusOr<absl::optional<std::string>> config =
            model::ParseReloadRequest(request.body);
        if (!config.ok()) {
          responder.Send(http::ErrorFromStatus(config.status()));
          return;
        }
        if (config->has_value() && !reloader->manages_config()) {
          responder.Send(http::ErrorFromStatus(
              base::FieldError("config",
                               "hawk was started without --haproxy-config, so it cannot write a "
                               "configuration; send no config to reload the current file")));
          return;
        }
        reloader->Request(
            *std::move(config), [responder](const reload::ReloadOutcome& outcome) mutable {
              responder.Send(
                  http::JsonResponse(HttpStatusFor(outcome.status), ReloadOutcomeToJson(outcome)));
            });
      });
  router->Add("GET", "/v1/reloads", [reloader](const http::Request&, http::Responder responder) {
    responder.Send(http::JsonResponse(200, ReloadHistoryToJson(reloader->History())));
  });
}

}  // namespace hawk::api

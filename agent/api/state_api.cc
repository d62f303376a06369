#include "agent/api/state_api.h"

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/base/json_writer.h"
#include "agent/base/status_field.h"
#include "agent/http/response.h"
#include "agent/model/desired_json.h"
#include "agent/model/workers_json.h"

namespace hawk::api {
namespace {

absl::StatusOr<absl::Duration> PushTimeout(const http::Request& request) {
  absl::optional<std::string> text = request.QueryParam("timeoutMs");
  if (!text.has_value()) return absl::Milliseconds(kDefaultPushTimeoutMs);
  int64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value) || value < 0 || value > kMaxPushTimeoutMs) {
    return base::FieldError("timeoutMs", absl::StrCat("must be an integer in 0..",
                                                      kMaxPushTimeoutMs, ", got \"", *text, "\""));
  }
  return absl::Milliseconds(value);
}

// A worker's "refused" and "stale" members, in a push's answer and in a dry run's.
void WriteRefusedAndStale(const std::vector<model::Refusal>& refused,
                          const std::vector<model::StaleObject>& stale, base::JsonWriter* w) {
  w->Key("refused").BeginArray();
  for (const model::Refusal& r : refused) model::WriteRefusal(r, w);
  w->EndArray();
  w->Key("stale").BeginArray();
  for (const model::StaleObject& s : stale) model::WriteStale(s, w);
  w->EndArray();
}

// `dryRun`: "true" or "false" (absent: false).
absl::StatusOr<bool> DryRunParam(const http::Request& request) {
  absl::optional<std::string> text = request.QueryParam("dryRun");
  if (!text.has_value() || *text == "false") return false;
  if (*text == "true") return true;
  return base::FieldError("dryRun", absl::StrCat("must be true or false, got \"", *text, "\""));
}

std::string DryRunToJson(const state::StateService::DryRun& dry_run) {
  base::JsonWriter w;
  w.BeginObject();
  w.Key("dryRun").Bool(true);
  w.Key("version").String(dry_run.version);
  if (dry_run.generation.has_value()) {
    w.Key("generation").String(absl::StrCat(*dry_run.generation));  // proto3: int64 as string
  }
  w.Key("changes").Bool(dry_run.changes);
  w.Key("workers").BeginArray();
  for (const reconcile::WorkerPreview& p : dry_run.workers) {
    w.BeginObject();
    w.Key("pid").Int(p.pid);
    w.Key("role").String(model::WorkerRoleName(p.role));
    w.Key("basis").String(reconcile::PreviewBasisName(p.basis));
    w.Key("commands").BeginArray();
    for (const std::string& command : p.commands) w.String(command);
    w.EndArray();
    w.Key("replaces").BeginArray();
    for (const reconcile::PreviewReplace& r : p.replaces) {
      w.BeginObject();
      w.Key("object").String(r.object);
      w.Key("entries").String(absl::StrCat(r.entries));  // proto3: int64 as string
      w.EndObject();
    }
    w.EndArray();
    WriteRefusedAndStale(p.refused, p.stale, &w);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

// Refused up front as too large for the journal (a record or the snapshot), nothing applied:
// the request's content is too large, not the disk full (that is 507, from a push's `done`).
http::Response RefusalResponse(const absl::Status& status) {
  http::Response refusal = http::ErrorFromStatus(status);
  if (absl::IsResourceExhausted(status)) refusal.status = 413;
  return refusal;
}

// A journal error as the answer: the state directory is full (507) or refuses writes (503).
http::Response PersistError(const absl::Status& status) {
  std::string message =
      absl::StrCat("could not persist the state, so nothing was applied: ", status.message());
  if (absl::IsResourceExhausted(status)) {
    return http::JsonError(507, "RESOURCE_EXHAUSTED", message);
  }
  return http::JsonError(503, "UNAVAILABLE", message);
}

// Parse → push → encode.
void HandlePush(const http::Request& request, http::Responder responder, state::Verb verb,
                state::StateService* service) {
  absl::StatusOr<absl::Duration> timeout = PushTimeout(request);
  if (!timeout.ok()) {
    responder.Send(http::ErrorFromStatus(timeout.status()));
    return;
  }
  absl::StatusOr<bool> dry_run = DryRunParam(request);
  if (!dry_run.ok()) {
    responder.Send(http::ErrorFromStatus(dry_run.status()));
    return;
  }
  if (*dry_run) {
    absl::StatusOr<state::StateService::DryRun> preview = service->Preview(verb, request.body);
    responder.Send(preview.ok() ? http::JsonResponse(200, DryRunToJson(*preview))
                                : RefusalResponse(preview.status()));
    return;
  }
  absl::Status accepted = service->Push(
      verb, request.body, *timeout,
      [responder](absl::StatusOr<state::StateService::Pushed> pushed) mutable {
        responder.Send(pushed.ok() ? http::JsonResponse(200, PushOutcomeToJson(pushed->outcome))
                                   : PersistError(pushed.status()));
      });
  if (!accepted.ok()) responder.Send(RefusalResponse(accepted));
}

}  // namespace

std::string PushOutcomeToJson(const reconcile::PushOutcome& outcome) {
  size_t finished = 0;
  for (const reconcile::WorkerOutcome& o : outcome.workers) {
    if (o.result != reconcile::PushResult::kPending) ++finished;
  }
  size_t targets = outcome.workers.size();
  base::JsonWriter w;
  w.BeginObject();
  w.Key("version").String(outcome.version);
  if (outcome.generation.has_value()) {
    w.Key("generation").String(absl::StrCat(*outcome.generation));  // proto3: int64 as string
  }
  // Said in so many words: `"workers":[]` alone reads like a success to a controller that only
  // checks the status code and scans the list for failures.
  if (targets == 0) {
    w.Key("delivery").String("NO_WORKER");
    w.Key("warning").String(
        "the state is durable, but no worker is reachable (the master CLI is unreachable or lists "
        "no worker): each worker gets it once hawk reaches it; see GET /v1/workers");
  } else if (finished == 0) {
    w.Key("delivery").String("NO_WORKER");
    w.Key("warning").String(
        "the state is durable, but no worker finished applying it before the timeout: each gets "
        "it when its reconcile completes; see each worker's reason");
  } else if (finished < targets) {
    w.Key("delivery").String("SOME_WORKERS");
    w.Key("warning").String(
        absl::StrCat("the state is durable, but ", targets - finished, " of ", targets,
                     " workers did not finish applying it before the timeout: "
                     "each gets it when its reconcile completes; see its reason"));
  } else {
    w.Key("delivery").String("ALL_WORKERS");
  }
  w.Key("workers").BeginArray();
  for (const reconcile::WorkerOutcome& o : outcome.workers) {
    w.BeginObject();
    w.Key("pid").Int(o.pid);
    w.Key("role").String(model::WorkerRoleName(o.role));
    w.Key("result").String(reconcile::PushResultName(o.result));
    if (!o.reason.empty()) w.Key("reason").String(o.reason);
    WriteRefusedAndStale(o.refused, o.stale, &w);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

void RegisterStateRoutes(Router* router, state::StateService* service) {
  for (state::Verb verb : {state::Verb::kPut, state::Verb::kPatch}) {
    router->Add(verb == state::Verb::kPatch ? "PATCH" : "PUT", "/v1/state",
                [service, verb](const http::Request& request, http::Responder r) {
                  HandlePush(request, std::move(r), verb, service);
                },
                {"timeoutMs", "dryRun"});
  }
  router->Add("GET", "/v1/state", [service](const http::Request&, http::Responder responder) {
    const model::DesiredState* desired = service->current();
    if (desired == nullptr) {
      responder.Send(http::JsonError(404, "NOT_FOUND", "no desired state has been pushed yet"));
      return;
    }
    responder.Send(http::JsonResponse(200, model::DesiredStateToJson(*desired)));
  });
}

}  // namespace hawk::api

#include "agent/api/state_api.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/base/json_writer.h"
#include "agent/base/log.h"
#include "agent/base/status_field.h"
#include "agent/http/response.h"
#include "agent/model/desired_json.h"
#include "agent/model/workers_json.h"

namespace hawk::api {
namespace {

absl::StatusOr<int64_t> PushTimeoutMs(const http::Request& request) {
  absl::optional<std::string> text = request.QueryParam("timeoutMs");
  if (!text.has_value()) return kDefaultPushTimeoutMs;
  int64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value) || value < 0 || value > kMaxPushTimeoutMs) {
    return base::FieldError("timeoutMs", absl::StrCat("must be an integer in 0..",
                                                      kMaxPushTimeoutMs, ", got \"", *text, "\""));
  }
  return value;
}

void HandlePut(const http::Request& request, http::Responder responder,
               reconcile::Reconciler* reconciler, store::StateStore* store) {
  absl::StatusOr<int64_t> timeout_ms = PushTimeoutMs(request);
  if (!timeout_ms.ok()) {
    responder.Send(http::ErrorFromStatus(timeout_ms.status()));
    return;
  }
  absl::StatusOr<model::DesiredState> desired = model::ParseDesiredState(request.body);
  if (!desired.ok()) {
    responder.Send(http::ErrorFromStatus(desired.status()));
    return;
  }
  const model::DesiredState* current = reconciler->desired();
  if (current != nullptr && current->generation.has_value() && desired->generation.has_value()) {
    int64_t have = *current->generation;
    int64_t got = *desired->generation;
    if (got < have) {
      responder.Send(http::ErrorFromStatus(base::WithField(
          absl::AbortedError(absl::StrCat("generation ", got, " is older than the current ", have,
                                          "; nothing changed")),
          "generation")));
      return;
    }
    if (got == have && !(current->SameContent(*desired) && current->version == desired->version)) {
      responder.Send(http::ErrorFromStatus(base::WithField(
          absl::AbortedError(absl::StrCat("generation ", got,
                                          " already holds other content; use a higher generation "
                                          "to change it; nothing changed")),
          "generation")));
      return;
    }
  }
  bool same = current != nullptr && *current == *desired;
  if (!same && store != nullptr) {
    // Durable before acknowledged: a hawk restarted after this point re-seeds from it.
    absl::Status saved = store->Save(*desired);
    if (!saved.ok()) {
      base::LogError("PUT /v1/state: ", saved.message());
      responder.Send(http::ErrorFromStatus(absl::UnavailableError(
          absl::StrCat("could not persist the state, so nothing was applied: ", saved.message()))));
      return;
    }
  }
  uint64_t seq = reconciler->SetDesired(*std::move(desired));
  reconciler->WaitForPush(seq, absl::Milliseconds(*timeout_ms),
                          [responder](reconcile::PushOutcome outcome) mutable {
                            responder.Send(http::JsonResponse(200, PushOutcomeToJson(outcome)));
                          });
}

}  // namespace

std::string PushOutcomeToJson(const reconcile::PushOutcome& outcome) {
  base::JsonWriter w;
  w.BeginObject();
  w.Key("version").String(outcome.version);
  if (outcome.generation.has_value()) {
    w.Key("generation").String(absl::StrCat(*outcome.generation));  // proto3: int64 as string
  }
  w.Key("workers").BeginArray();
  for (const reconcile::WorkerOutcome& o : outcome.workers) {
    w.BeginObject();
    w.Key("pid").Int(o.pid);
    w.Key("role").String(model::WorkerRoleName(o.role));
    w.Key("result").String(reconcile::PushResultName(o.result));
    w.Key("refused").BeginArray();
    for (const model::Refusal& r : o.refused) model::WriteRefusal(r, &w);
    w.EndArray();
    w.Key("stale").BeginArray();
    for (const model::StaleObject& s : o.stale) model::WriteStale(s, &w);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

void RegisterStateRoutes(Router* router, reconcile::Reconciler* reconciler,
                         store::StateStore* store) {
  router->Add("PUT", "/v1/state",
              [reconciler, store](const http::Request& request, http::Responder responder) {
                HandlePut(request, std::move(responder), reconciler, store);
              });
  router->Add("GET", "/v1/state", [reconciler](const http::Request&, http::Responder responder) {
    const model::DesiredState* desired = reconciler->desired();
    if (desired == nullptr) {
      responder.Send(http::JsonError(404, "NOT_FOUND", "no desired state has been pushed yet"));
      return;
    }
    responder.Send(http::JsonResponse(200, model::DesiredStateToJson(*desired)));
  });
}

}  // namespace hawk::api

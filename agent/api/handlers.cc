#include "agent/api/handlers.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "agent/base/json_writer.h"
#include "agent/http/response.h"
#include "agent/model/workers_json.h"

namespace hawk::api {

void RegisterHealthRoutes(Router* router, const registry::WorkerRegistry* registry, bool detail) {
  router->Add("GET", "/healthz", [](const http::Request&, http::Responder responder) {
    responder.Send(http::JsonResponse(200, R"({"status":"ok"})"));
  });
  router->Add("GET", "/readyz",
              [registry, detail](const http::Request&, http::Responder responder) {
                std::string code, reason;
                if (registry->Ready(&code, &reason)) {
                  if (!detail || reason.empty()) {
                    responder.Send(http::JsonResponse(200, R"({"ready":true})"));
                    return;
                  }
                  base::JsonWriter w;  // ready, with a caveat for the operator
                  w.BeginObject();
                  w.Key("ready").Bool(true);
                  w.Key("detail").String(reason);
                  w.EndObject();
                  responder.Send(http::JsonResponse(200, w.Take()));
                  return;
                }
                if (!detail) reason = absl::StrCat("not ready: ", code);
                responder.Send(http::JsonError(503, "UNAVAILABLE", reason));
              });
}

void RegisterWorkerRoutes(Router* router, std::function<model::WorkersReport()> snapshot) {
  router->Add("GET", "/v1/workers", [snapshot](const http::Request&, http::Responder responder) {
    responder.Send(http::JsonResponse(200, model::WorkersReportToJson(snapshot())));
  });
}

}  // namespace hawk::api

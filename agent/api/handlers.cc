#include "agent/api/handlers.h"

#include <string>

#include "agent/base/json_writer.h"
#include "agent/http/response.h"
#include "agent/model/workers_json.h"

namespace hawk::api {
void RegisterHealthRoutes(Router* router, const registry::WorkerRegistry* registry) {
  router->Add("GET", "/healthz", [](const http::Request&, http::Responder responder) {
    responder.Send(http::JsonResponse(200, R"({"status":"ok"})"));
  });
  router->Add("GET", "/readyz", [registry](const http::Request&, http::Responder responder) {
    std::string reason;
    if (registry->Ready(&reason)) {
      responder.Send(http::JsonResponse(200, R"({"ready":true})"));
      return;
    }
    responder.Send(http::JsonError(503, "UNAVAILABLE", reason));
  });
}

void RegisterWorkerRoutes(Router* router, std::function<model::WorkersReport()> snapshot) {
  router->Add("GET", "/v1/workers", [snapshot](const http::Request&, http::Responder responder) {
    responder.Send(http::JsonResponse(200, model::WorkersReportToJson(snapshot())));
  });
}

}  // namespace hawk::api

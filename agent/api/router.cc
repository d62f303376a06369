#include "agent/api/router.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/http/response.h"

namespace hawk::api {

void Router::Add(std::string method, std::string path, Handler handler) {
  routes_[std::move(path)].emplace_back(std::move(method), std::move(handler));
}

void Router::Handle(const http::Request& request, http::Responder responder) const {
  auto it = routes_.find(request.path);
  if (it == routes_.end()) {
    responder.Send(
        http::JsonError(404, "NOT_FOUND", absl::StrCat("no such endpoint: ", request.path)));
    return;
  }
  std::vector<std::string> allowed;
  for (const auto& [method, handler] : it->second) {
    if (method == request.method || (method == "GET" && request.method == "HEAD")) {
      handler(request, std::move(responder));
      return;
    }
    allowed.push_back(method);
  }
  http::Response response =
      http::JsonError(405, "METHOD_NOT_ALLOWED",
                      absl::StrCat(request.method, " is not allowed on ", request.path, "; use ",
                                   absl::StrJoin(allowed, " or ")));
  response.headers.emplace_back("Allow", absl::StrJoin(allowed, ", "));
  responder.Send(std::move(response));
}

}  // namespace hawk::api

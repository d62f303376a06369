#include "agent/api/router.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/base/status_field.h"
#include "agent/http/response.h"

namespace hawk::api {

absl::optional<std::string> UnknownQueryParam(absl::string_view query,
                                              const std::vector<std::string>& params) {
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    std::string name = http::DecodeQueryComponent(pair.substr(0, pair.find('=')));
    if (std::find(params.begin(), params.end(), name) == params.end()) return name;
  }
  return absl::nullopt;
}

void Router::Add(std::string method, std::string path, Handler handler,
                 std::vector<std::string> params) {
  routes_[std::move(path)].push_back({std::move(method), std::move(handler), std::move(params)});
}

void Router::Handle(const http::Request& request, http::Responder responder) const {
  auto it = routes_.find(request.path);
  if (it == routes_.end()) {
    responder.Send(
        http::JsonError(404, "NOT_FOUND", absl::StrCat("no such endpoint: ", request.path)));
    return;
  }
  std::vector<std::string> allowed;
  for (const Route& route : it->second) {
    if (route.method == request.method || (route.method == "GET" && request.method == "HEAD")) {
      if (absl::optional<std::string> unknown = UnknownQueryParam(request.query, route.params)) {
        std::string accepted = route.params.empty()
                                   ? std::string("it takes none")
                                   : absl::StrCat("it takes ", absl::StrJoin(route.params, ", "));
        responder.Send(http::ErrorFromStatus(
            base::FieldError(*unknown, absl::StrCat("unknown query parameter on ", route.method,
                                                    " ", request.path, "; ", accepted))));
        return;
      }
      route.handler(request, std::move(responder));
      return;
    }
    allowed.push_back(route.method);
  }
  http::Response response =
      http::JsonError(405, "METHOD_NOT_ALLOWED",
                      absl::StrCat(request.method, " is not allowed on ", request.path, "; use ",
                                   absl::StrJoin(allowed, " or ")));
  response.headers.emplace_back("Allow", absl::StrJoin(allowed, ", "));
  responder.Send(std::move(response));
}

}  // namespace hawk::api

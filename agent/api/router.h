#pragma once

// Routes requests by exact path, then method. Unknown path → 404, known path with another
// method → 405 with an Allow header; both with the JSON error body. A query parameter the route
// does not name → 400 naming it: a client asking for something hawk lacks (a dry run, a filter)
// must get a refusal, never the plain request carried out.

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/http/request.h"
#include "agent/http/server.h"

namespace hawk::api {

// The first parameter of a raw query string whose decoded name is not in `params`, or nullopt.
absl::optional<std::string> UnknownQueryParam(absl::string_view query,
                                              const std::vector<std::string>& params);

class Router {
 public:
  using Handler = std::function<void(const http::Request&, http::Responder)>;

  // `params`: the query parameter names the route accepts (decoded, exact case).
  void Add(std::string method, std::string path, Handler handler,
           std::vector<std::string> params = {});
  void Handle(const http::Request& request, http::Responder responder) const;

 private:
  struct Route {
    std::string method;
    Handler handler;
    std::vector<std::string> params;
  };
  // path → routes; vectors keep the Allow header in registration order.
  absl::flat_hash_map<std::string, std::vector<Route>> routes_;
};

}  // namespace hawk::api

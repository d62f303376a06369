#pragma once

// Routes requests by exact path, then method. Unknown path → 404, known path with another
// method → 405 with an Allow header; both with the JSON error body.

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "agent/http/request.h"
#include "agent/http/server.h"

namespace hawk::api {

class Router {
 public:
  using Handler = std::function<void(const http::Request&, http::Responder)>;

  void Add(std::string method, std::string path, Handler handler);
  void Handle(const http::Request& request, http::Responder responder) const;

 private:
  // path → (method → handler); vectors keep the Allow header in registration order.
  absl::flat_hash_map<std::string, std::vector<std::pair<std::string, Handler>>> routes_;
};

}  // namespace hawk::api

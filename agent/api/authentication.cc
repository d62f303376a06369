#include "agent/api/authentication.h"

#include <utility>

#include "agent/http/response.h"

namespace hawk::api {

http::Handler RequireBearerToken(auth::TokenFile* token, http::Handler inner) {
  return
      [token, inner = std::move(inner)](const http::Request& request, http::Responder responder) {
        absl::optional<absl::string_view> authorization = request.Header("Authorization");
        if (token->Allows(authorization)) {
          inner(request, std::move(responder));
          return;
        }
        http::Response response = http::JsonError(
            401, "UNAUTHENTICATED",
            authorization ? "the bearer token is not the one in hawk's --token-file"
                          : "this listener needs `Authorization: Bearer <token>`, the token in "
                            "hawk's --token-file");
        response.headers.emplace_back("WWW-Authenticate", authorization ? "Bearer realm=\"hawk\", "
                                                                          "error=\"invalid_token\""
                                                                        : "Bearer realm=\"hawk\"");
        responder.Send(std::move(response));
      };
}

}  // namespace hawk::api

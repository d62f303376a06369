#pragma once

// The bearer-token gate in front of a TCP API listener (--token-file).

#include "agent/auth/bearer_token.h"
#include "agent/http/server.h"

namespace hawk::api {

// Wraps `inner`: a request without `Authorization: Bearer <the token>` gets 401 with
// `WWW-Authenticate: Bearer realm="hawk"` (RFC 6750; `error="invalid_token"` when a token was
// sent but is not the one) and never reaches `inner`. `token` must outlive the handler.
http::Handler RequireBearerToken(auth::TokenFile* token, http::Handler inner);

}  // namespace hawk::api

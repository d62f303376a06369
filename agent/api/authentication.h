#pragma once

// Who may talk to hawk's API and probe listeners: the rules each request's head is held to
// before its body is read (http::AdmissionCheck). Pure: the bearer token is checked through a
// function the caller gives (auth::TokenFile re-reads its file there).
//
// In order, each refusal answered at once and the connection closed:
//  1. Origin: a request that carries an `Origin` header comes from a web page; it is refused
//     (403) unless the operator allowed that origin (--allowed-origin). Controllers send none.
//  2. Host (TCP listeners): the `Host` header, and the authority of an absolute-form target, must
//     be an IP literal, `localhost`, or a name the operator allowed (--allowed-host), else 403:
//     a page whose DNS name an attacker rebinds to this address sends its own name there. A unix
//     socket has no name to rebind, and clients there send placeholder names (`Host: hawk`), so
//     the Host rule does not apply on it.
//  3. The bearer token, where the listener needs one: 401 with `WWW-Authenticate` (RFC 6750). A
//     request with the token proves its connection (http::Admission::proves_peer).
//  4. Content-Type: a request with a body must say `application/json` (parameters such as
//     charset allowed), else 415: the bodies a page may send without a CORS preflight are
//     text/plain, forms and multipart, and a JSON API accepts none of them.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/http/admission.h"
#include "agent/http/request.h"

namespace hawk::api {

struct AdmissionPolicy {
  // Origins a request's Origin header may name, as ParseAllowedOrigin returns them.
  std::vector<std::string> allowed_origins;
  // Host names besides IP literals and localhost, as ParseAllowedHost returns them.
  std::vector<std::string> allowed_hosts;
  // Rule 2 applies (TCP listeners).
  bool check_host = true;
};

// Whether an `Authorization` header value (nullopt: none sent) carries the token.
using TokenCheck = std::function<bool(absl::optional<absl::string_view> authorization)>;

// The decision on one request's head. `token` null: the listener needs no token.
http::Admission Admit(const AdmissionPolicy& policy, const TokenCheck& token,
                      const http::Request& head);
http::AdmissionCheck MakeAdmissionCheck(AdmissionPolicy policy, TokenCheck token);

// --allowed-origin: `scheme://host[:port]` as a browser serializes an origin (http or https, no
// path), returned lowercase. "null" (sandboxed pages, files) is refused: any site can send it.
absl::StatusOr<std::string> ParseAllowedOrigin(absl::string_view text);
// --allowed-host: a DNS name without port, returned lowercase without a trailing dot.
absl::StatusOr<std::string> ParseAllowedHost(absl::string_view text);

// Whether `host` (a Host header value: host[:port], [v6][:port]) names this server under the
// policy: an IP literal, localhost, or an allowed name.
bool HostAllowed(const AdmissionPolicy& policy, absl::string_view host);

}  // namespace hawk::api

#pragma once

// Admission: what a listener decides about a request from its head alone (request line and
// headers), before any byte of its body is read and before `100 Continue` is sent. The rules
// themselves (token, Origin, Host, Content-Type) are the API's (agent/api/authentication.h);
// the server (server.h) only calls them at the right moment and acts on the answer. Pure: no
// sockets.

#include <functional>
#include <utility>

#include "absl/types/optional.h"
#include "agent/http/request.h"
#include "agent/http/response.h"

namespace hawk::http {

struct Admission {
  // Set: the request is refused with this response, sent at once; the connection then closes
  // without reading the request's body.
  absl::optional<Response> refusal;
  // The request carried a credential that proves who sent it (the bearer token): its connection
  // leaves the budget of unproven connections (ServerOptions::start_unproven).
  bool proves_peer = false;

  static Admission Admit(bool proves_peer = false) {
    Admission admission;
    admission.proves_peer = proves_peer;
    return admission;
  }
  static Admission Refuse(Response response) {
    Admission admission;
    admission.refusal = std::move(response);
    return admission;
  }
};

// Called once per request when its headers are complete. `head` has no body yet.
using AdmissionCheck = std::function<Admission(const Request& head)>;

}  // namespace hawk::http

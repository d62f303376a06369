#pragma once

// `hawk status`'s and `hawk apply`'s client: a blocking HTTP/1.1 request to hawk's API (unix socket
// or TCP), the response parsed by llhttp. A command-line tool's client, never used inside the
// daemon's loop.

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/base/address.h"

namespace hawk::status {

// Where hawk is and how to be let in.
struct Endpoint {
  base::Address address;
  // Sent as `Authorization: Bearer <token>` when not empty (a TCP listener with --token-file).
  std::string bearer_token;
};

// The body of GET `target` (status 200), within `timeout`. Unavailable (naming the address) when
// hawk cannot be reached; Internal for another status, with hawk's error.
absl::StatusOr<std::string> Get(const Endpoint& endpoint, absl::string_view target,
                                absl::Duration timeout);

// Any status, with its body: `hawk apply` shows hawk's own refusal (400, 409, 413).
struct Answer {
  int status = 0;
  std::string body;
};

// `method` `target` with `body` (application/json unless GET), within `timeout`. Unavailable
// when hawk cannot be reached; whatever status hawk answers is the Answer's.
absl::StatusOr<Answer> Send(const Endpoint& endpoint, absl::string_view method,
                            absl::string_view target, absl::string_view body,
                            absl::Duration timeout);

// GET `target` as a stream (NDJSON): `on_line` gets each line as it arrives until it returns
// false or the stream ends.
absl::Status Stream(const Endpoint& endpoint, absl::string_view target,
                    const std::function<bool(absl::string_view line)>& on_line);

}  // namespace hawk::status

#pragma once

// HTTP/1.1 responses: the value type handlers fill in, its serialization, and the JSON error
// bodies every endpoint shares. Pure: no sockets.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/base/json_writer.h"

namespace hawk::http {

struct Response {
  int status = 200;
  std::string content_type;  // omitted when empty
  std::string body;
  // Extra headers, sent in order. Framing headers (Content-Length, Transfer-Encoding,
  // Connection) are the serializer's and are dropped here.
  std::vector<std::pair<std::string, std::string>> headers;
};

// How a response travels on its connection.
struct Framing {
  bool keep_alive = true;  // false: `Connection: close`, the connection closes after it
  bool http10 = false;     // HTTP/1.0 request: keep-alive is announced, no chunked encoding
  bool head = false;       // HEAD request: the headers GET would get, without the body
};

// The standard reason phrase ("Not Found"), or "" for a code without one.
absl::string_view ReasonPhrase(int status);

// Status line, headers (Content-Length added; none for 1xx, 204 and 304, which carry no body),
// blank line, body. A status outside 100..599 is sent as 500.
std::string Serialize(const Response& response, bool keep_alive);
std::string Serialize(const Response& response, const Framing& framing);

// The head of a streamed response of unknown length: chunked for HTTP/1.1, and for HTTP/1.0
// close-delimited (`Connection: close`, the body is the raw bytes up to the close).
std::string SerializeStreamHead(int status, absl::string_view content_type, const Framing& framing);
// One chunk of a chunked body; "" for empty data (an empty chunk would end the body).
std::string EncodeChunk(absl::string_view data);
// Ends a chunked body (no trailers).
inline constexpr absl::string_view kLastChunk = "0\r\n\r\n";

// Writes the `"error":{"code":"…","message":"…","field":"…"}` member of every error body into
// the object `w` is inside; "field" only when non-empty, and "currentGeneration" (the generation
// hawk holds, on a 409 for an out-of-order push) only when given.
void WriteErrorMember(absl::string_view code, absl::string_view message, absl::string_view field,
                      base::JsonWriter* w, absl::string_view current_generation = "");

// `status` with `body` as application/json.
Response JsonResponse(int status, std::string body);

// `{"error":{"code":"…","message":"…","field":"…"}}` as application/json; "field" only when
// non-empty. `code` is the canonical status name ("INVALID_ARGUMENT", "NOT_FOUND", …).
Response JsonError(int status, absl::string_view code, absl::string_view message,
                   absl::string_view field = "");

// The HTTP status for a Status code: InvalidArgument 400, NotFound 404, AlreadyExists, Aborted
// and FailedPrecondition 409, Unimplemented 501, Unavailable 503, DeadlineExceeded 504, any
// other 500.
int HttpStatusFromCode(absl::StatusCode code);
// JsonError(HttpStatusFromCode(code), "CODE_NAME", message, field from base::FieldOf()).
// An OK status (a caller's bug) gives 500 INTERNAL.
Response ErrorFromStatus(const absl::Status& status);

}  // namespace hawk::http

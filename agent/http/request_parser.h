#pragma once

// RequestParser turns the bytes of one HTTP/1.1 connection into Requests. Pure: no sockets, no
// clock. Push-style over llhttp: Feed() whatever arrived; every request completed by those bytes
// comes out, in order (pipelined requests included). Size limits are enforced while parsing,
// before anything big is buffered, and each has its own error kind so that the server can answer
// 414/431/413 rather than 400.
//
// A head check (the constructor's `check`) sees each request once its headers are complete,
// before any of its body is parsed and before its declared size is held against
// max_body_bytes: refusing it stops the parser there (kRefused), so the body of a request that
// is not admitted is never read, whatever its size.
//
// Once Feed() has failed the parser is done: the connection is unusable (its framing is lost)
// and every later Feed() returns the same error.
//
// The requests parsed, and whether parsing fails, do not depend on how the bytes are split
// across Feed() calls (tests/fuzz/http_request_fuzz checks it). For a request that is both
// malformed and over a limit, which of the two is reported can: llhttp hands over a header
// name or value in one piece when it is whole in the buffer, so a bad byte later in it is seen
// before its size is counted, and in pieces otherwise.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/http/request.h"

namespace hawk::http {

struct ParserOptions {
  size_t max_request_line_bytes = 8 * 1024;  // method, target and version
  size_t max_header_bytes = 16 * 1024;       // all header lines, trailers included
  size_t max_header_count = 100;
  size_t max_body_bytes = 1024 * 1024;  // after de-chunking
};

enum class ParseErrorKind {
  kNone,
  kMalformed,           // not HTTP/1.x: 400
  kRequestLineTooLong,  // max_request_line_bytes: 414
  kHeadersTooLarge,     // max_header_bytes or max_header_count: 431
  kBodyTooLarge,        // max_body_bytes: 413
  kRefused,             // the head check refused the request: the caller has its answer
};

// Sees a request whose headers are complete (no body yet); false stops parsing before the body.
using HeadCheck = std::function<bool(const Request& head)>;

// The HTTP status that answers a parse error (400 for kNone, which is no error).
int HttpStatusFor(ParseErrorKind kind);

class RequestParser {
 public:
  explicit RequestParser(ParserOptions options = {}, HeadCheck check = nullptr);
  ~RequestParser();
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Parses `bytes` (copied as needed) and appends each completed request to `out`. On error,
  // `out` still gets the requests completed before the bad byte; the Status says what is wrong
  // (InvalidArgument for malformed input, ResourceExhausted for a limit, PermissionDenied when the
  // head check refused the request) and error_kind() which
  // kind of problem it is.
  absl::Status Feed(absl::string_view bytes, std::vector<Request>* out);

  ParseErrorKind error_kind() const;
  // True while a request has started but not completed (bytes of it are buffered here).
  bool message_in_progress() const;
  // True once the in-progress request's headers are complete (its body may still be due).
  bool headers_complete() const;
  // The in-progress request's headers are complete and ask for `Expect: 100-continue`.
  bool expects_continue() const;
  // How many requests have started so far (the in-progress one included): tells messages apart.
  uint64_t messages_started() const;

 private:
  struct State;  // llhttp parser and the request being assembled
  std::unique_ptr<State> state_;
};

}  // namespace hawk::http

#pragma once

// One parsed HTTP/1.1 request, as RequestParser produces it. Pure data: no sockets.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::http {

inline constexpr size_t kBodyReadPadding = 64;

struct Request {
  std::string method;  // as llhttp names it: "GET", "POST", …
  std::string target;  // the raw request target: "/v1/workers?pid=42"
  std::string path;    // the target before '?', raw (not percent-decoded); "*" for OPTIONS *
  std::string query;   // the target after '?' without any '#fragment', raw
  int http_major = 1;
  int http_minor = 1;
  // In arrival order, names as the client spelled them, values without surrounding whitespace.
  // Trailers of a chunked body are appended here too.
  std::vector<std::pair<std::string, std::string>> headers;
  // De-chunked. Once the request is complete, at least kBodyReadPadding bytes of capacity follow
  // its end, so that a JSON parser that reads past the end (simdjson reads up to 64 bytes) can
  // parse it in place instead of copying a multi-megabyte body.
  std::string body;
  // Whether the connection may carry another request after this one: HTTP/1.1 unless
  // `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
  bool keep_alive = true;

  // The first header with this name (any case), or nullopt. Points into `headers`.
  absl::optional<absl::string_view> Header(absl::string_view name) const;
  // The first `name=value` pair of the query whose decoded name is `name`, decoded (%XX and
  // '+' as space). A bare `name` yields "". nullopt when absent.
  absl::optional<std::string> QueryParam(absl::string_view name) const;
};

// Decodes one query-string component: `%XX` (hex, any case) becomes that byte, '+' a space;
// a '%' not followed by two hex digits is kept as is.
std::string DecodeQueryComponent(absl::string_view text);

// Splits a raw request target into path and query (see Request::path and Request::query).
// Absolute-form targets (`http://host/p?q`) lose their scheme and authority.
void SplitTarget(absl::string_view target, std::string* path, std::string* query);

}  // namespace hawk::http

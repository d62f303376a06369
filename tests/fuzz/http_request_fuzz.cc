// The HTTP request parser must give the same requests, and fail or not, however the bytes of a
// connection arrive: whole or one byte at a time. Only the kind of error may differ, and only
// between "malformed" and a size limit for a request that is both (request_parser.h).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/http/request_parser.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

struct Parsed {
  std::vector<hawk::http::Request> requests;
  hawk::http::ParseErrorKind error = hawk::http::ParseErrorKind::kNone;
};

Parsed Parse(absl::string_view bytes, size_t chunk) {
  hawk::http::ParserOptions options;
  // Small limits, so that the fuzzer reaches them.
  options.max_request_line_bytes = 256;
  options.max_header_bytes = 512;
  options.max_header_count = 8;
  options.max_body_bytes = 1024;
  hawk::http::RequestParser parser(options);
  Parsed out;
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    if (!parser.Feed(bytes.substr(at, chunk), &out.requests).ok()) {
      out.error = parser.error_kind();
      HAWK_FUZZ_CHECK(out.error != hawk::http::ParseErrorKind::kNone, "an error without a kind");
      break;
    }
  }
  return out;
}

bool SameRequest(const hawk::http::Request& a, const hawk::http::Request& b) {
  return a.method == b.method && a.target == b.target && a.path == b.path && a.query == b.query &&
         a.http_major == b.http_major && a.http_minor == b.http_minor && a.headers == b.headers &&
         a.body == b.body && a.keep_alive == b.keep_alive;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  Parsed whole = Parse(bytes, bytes.size() + 1);
  Parsed bytewise = Parse(bytes, 1);
  using hawk::http::ParseErrorKind;
  bool same_error =
      whole.error == bytewise.error ||
      (whole.error != ParseErrorKind::kNone && bytewise.error != ParseErrorKind::kNone &&
       (whole.error == ParseErrorKind::kMalformed || bytewise.error == ParseErrorKind::kMalformed));
  HAWK_FUZZ_CHECK(same_error, "byte-by-byte parsing ends in another error");
  HAWK_FUZZ_CHECK(whole.requests.size() == bytewise.requests.size(),
                  "byte-by-byte parsing completes another number of requests");
  for (size_t i = 0; i < whole.requests.size(); ++i) {
    HAWK_FUZZ_CHECK(SameRequest(whole.requests[i], bytewise.requests[i]),
                    "byte-by-byte parsing gives another request");
    (void)whole.requests[i].QueryParam("timeoutMs");
    (void)whole.requests[i].Header("content-length");
  }
  return 0;
}

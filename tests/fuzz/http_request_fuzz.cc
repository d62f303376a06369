// The HTTP request parser must give the same requests, and fail or not, however the bytes of a
// connection arrive: whole or one byte at a time. Only the kind of error may differ, and only
// between "malformed" and a size limit for a request that is both (request_parser.h).
//
// With the API's admission rules as its head check (agent/api/authentication.h), the same holds,
// and the rules keep their promises on every head: a request with an Origin header that was not
// allowed, or with a body that is not JSON, or without the token, is never admitted; a refusal
// stops the parser before the body.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "agent/api/authentication.h"
#include "agent/http/request_parser.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

struct Parsed {
  std::vector<hawk::http::Request> requests;
  hawk::http::ParseErrorKind error = hawk::http::ParseErrorKind::kNone;
};

const hawk::api::AdmissionPolicy& Policy() {
  static const hawk::api::AdmissionPolicy policy{
      {"https://console.example"}, {"hawk.internal"}, true};
  return policy;
}

bool TokenAllows(absl::optional<absl::string_view> authorization) {
  return authorization && *authorization == "Bearer fuzz-token";
}

// The properties of one decision on one head.
bool CheckAdmission(const hawk::http::Request& head) {
  hawk::http::Admission admission = hawk::api::Admit(Policy(), TokenAllows, head);
  hawk::http::Admission again = hawk::api::Admit(Policy(), TokenAllows, head);
  HAWK_FUZZ_CHECK(admission.refusal.has_value() == again.refusal.has_value(),
                  "the same head is decided two ways");
  if (admission.refusal) {
    int status = admission.refusal->status;
    HAWK_FUZZ_CHECK(status == 401 || status == 403 || status == 415, "an unexpected refusal");
    HAWK_FUZZ_CHECK(!admission.proves_peer, "a refused request proves its connection");
    return false;
  }
  HAWK_FUZZ_CHECK(admission.proves_peer, "admitted without the token");
  HAWK_FUZZ_CHECK(TokenAllows(head.Header("Authorization")), "admitted without the token");
  for (const auto& [name, value] : head.headers) {
    if (absl::EqualsIgnoreCase(name, "Origin")) {
      HAWK_FUZZ_CHECK(absl::EqualsIgnoreCase(value, "https://console.example"),
                      "admitted from an origin not allowed");
    }
    if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
      absl::optional<absl::string_view> type = head.Header("Content-Type");
      HAWK_FUZZ_CHECK(type && absl::StartsWithIgnoreCase(absl::StripLeadingAsciiWhitespace(*type),
                                                         "application/json"),
                      "admitted a body that is not JSON");
    }
  }
  return true;
}

Parsed Parse(absl::string_view bytes, size_t chunk, bool admission = false) {
  hawk::http::ParserOptions options;
  // Small limits, so that the fuzzer reaches them.
  options.max_request_line_bytes = 256;
  options.max_header_bytes = 512;
  options.max_header_count = 8;
  options.max_body_bytes = 1024;
  hawk::http::HeadCheck check;
  if (admission) check = [](const hawk::http::Request& head) { return CheckAdmission(head); };
  hawk::http::RequestParser parser(options, check);
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
  // With admission: the requests it lets through are a prefix of those parsed without it, the
  // same whole or byte by byte, and it stops at the first refusal.
  Parsed admitted = Parse(bytes, bytes.size() + 1, true);
  Parsed admitted_bytewise = Parse(bytes, 1, true);
  HAWK_FUZZ_CHECK(admitted.requests.size() <= whole.requests.size(),
                  "admission let more requests through than the parser completes");
  HAWK_FUZZ_CHECK(admitted.requests.size() == admitted_bytewise.requests.size(),
                  "byte-by-byte parsing admits another number of requests");
  HAWK_FUZZ_CHECK((admitted.error == ParseErrorKind::kRefused) ==
                      (admitted_bytewise.error == ParseErrorKind::kRefused),
                  "byte-by-byte parsing refuses another request");
  for (size_t i = 0; i < admitted.requests.size(); ++i) {
    HAWK_FUZZ_CHECK(SameRequest(admitted.requests[i], whole.requests[i]),
                    "admission changed a request");
  }
  return 0;
}

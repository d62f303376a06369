#include "agent/http/request_parser.h"

#include <llhttp.h>

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hawk::http {

int HttpStatusFor(ParseErrorKind kind) {
  switch (kind) {
    case ParseErrorKind::kRequestLineTooLong:
      return 414;
    case ParseErrorKind::kHeadersTooLarge:
      return 431;
    case ParseErrorKind::kBodyTooLarge:
      return 413;
    case ParseErrorKind::kRefused:
      return 403;
    case ParseErrorKind::kNone:
    case ParseErrorKind::kMalformed:
      break;
  }
  return 400;
}

// Owns the llhttp parser; its callbacks reach this through `parser.data`. llhttp hands data in
// pieces that point into the caller's buffer: everything is appended to `current` at once.
struct RequestParser::State {
  State(ParserOptions parser_options, HeadCheck head_check)
      : options(parser_options), check(std::move(head_check)) {
    llhttp_settings_init(&settings);
    settings.on_message_begin = &State::OnMessageBegin;
    settings.on_url = &State::OnUrl;
    settings.on_method = &State::OnMethod;
    settings.on_version = &State::OnVersion;
    settings.on_header_field = &State::OnHeaderField;
    settings.on_header_value = &State::OnHeaderValue;
    settings.on_header_value_complete = &State::OnHeaderValueComplete;
    settings.on_headers_complete = &State::OnHeadersComplete;
    settings.on_body = &State::OnBody;
    settings.on_message_complete = &State::OnMessageComplete;
    llhttp_init(&parser, HTTP_REQUEST, &settings);
    parser.data = this;
  }

  static State* Self(llhttp_t* p) { return static_cast<State*>(p->data); }

  // Records why parsing stops; llhttp returns the callback's error and Feed() reports this.
  int Fail(ParseErrorKind kind, std::string message) {
    error_kind = kind;
    error_detail = std::move(message);
    return HPE_USER;
  }

  static int OnMessageBegin(llhttp_t* p) {
    State* self = Self(p);
    self->current = Request();
    self->in_progress = true;
    self->headers_done = false;
    self->expect_continue = false;
    self->request_line_bytes = 0;
    self->header_bytes = 0;
    self->header_count = 0;
    self->field.clear();
    self->value.clear();
    ++self->messages_started;
    return 0;
  }

  int CountRequestLine(size_t length) {
    request_line_bytes += length;
    if (request_line_bytes > options.max_request_line_bytes) {
      return Fail(
          ParseErrorKind::kRequestLineTooLong,
          absl::StrCat("request line longer than ", options.max_request_line_bytes, " bytes"));
    }
    return 0;
  }

  // The method's name comes from llhttp_get_method(): only its length matters here.
  static int OnMethod(llhttp_t* p, const char*, size_t length) {
    return Self(p)->CountRequestLine(length);
  }

  static int OnUrl(llhttp_t* p, const char* at, size_t length) {
    State* self = Self(p);
    // Check before copying so that an endless target never grows the buffer past the limit.
    if (int rc = self->CountRequestLine(length); rc != 0) return rc;
    self->current.target.append(at, length);
    return 0;
  }

  static int OnVersion(llhttp_t* p, const char*, size_t length) {
    return Self(p)->CountRequestLine(length);
  }

  int CountHeaderBytes(size_t length) {
    header_bytes += length;
    if (header_bytes > options.max_header_bytes) {
      return Fail(ParseErrorKind::kHeadersTooLarge,
                  absl::StrCat("headers larger than ", options.max_header_bytes, " bytes"));
    }
    return 0;
  }

  static int OnHeaderField(llhttp_t* p, const char* at, size_t length) {
    State* self = Self(p);
    if (self->field.empty()) {
      if (++self->header_count > self->options.max_header_count) {
        return self->Fail(ParseErrorKind::kHeadersTooLarge,
                          absl::StrCat("more than ", self->options.max_header_count, " headers"));
      }
      // ": " and CRLF count towards the limit too: it bounds what a client makes us read.
      if (int rc = self->CountHeaderBytes(4); rc != 0) return rc;
    }
    if (int rc = self->CountHeaderBytes(length); rc != 0) return rc;
    self->field.append(at, length);
    return 0;
  }

  static int OnHeaderValue(llhttp_t* p, const char* at, size_t length) {
    State* self = Self(p);
    if (int rc = self->CountHeaderBytes(length); rc != 0) return rc;
    self->value.append(at, length);
    return 0;
  }

  static int OnHeaderValueComplete(llhttp_t* p) {
    State* self = Self(p);
    absl::string_view value = absl::StripTrailingAsciiWhitespace(self->value);
    self->current.headers.emplace_back(std::move(self->field), std::string(value));
    self->field.clear();
    self->value.clear();
    return 0;
  }

  static int OnHeadersComplete(llhttp_t* p) {
    State* self = Self(p);
    Request& request = self->current;
    self->headers_done = true;
    request.method = llhttp_method_name(static_cast<llhttp_method_t>(llhttp_get_method(p)));
    request.http_major = llhttp_get_http_major(p);
    request.http_minor = llhttp_get_http_minor(p);
    request.keep_alive = llhttp_should_keep_alive(p) != 0;
    SplitTarget(request.target, &request.path, &request.query);
    if (request.http_major != 1) {
      self->Fail(
          ParseErrorKind::kMalformed,
          absl::StrCat("unsupported HTTP version ", request.http_major, ".", request.http_minor));
      return -1;
    }
    // Admission comes before the size: a refused request is answered for what it is, and none
    // of its body is parsed.
    if (self->check && !self->check(request)) {
      self->Fail(ParseErrorKind::kRefused, "refused at its headers");
      return -1;
    }
    if ((p->flags & F_CONTENT_LENGTH) != 0 && p->content_length > self->options.max_body_bytes) {
      self->Fail(ParseErrorKind::kBodyTooLarge,
                 absl::StrCat("body of ", p->content_length, " bytes is larger than ",
                              self->options.max_body_bytes, " bytes"));
      return -1;
    }
    if ((p->flags & F_CONTENT_LENGTH) != 0) {
      // One allocation for the whole body, padding included (request.h).
      request.body.reserve(static_cast<size_t>(p->content_length) + kBodyReadPadding);
    }
    absl::optional<absl::string_view> expect = request.Header("Expect");
    self->expect_continue = expect.has_value() && absl::EqualsIgnoreCase(*expect, "100-continue") &&
                            (request.http_major > 1 || request.http_minor >= 1);
    return 0;
  }

  static int OnBody(llhttp_t* p, const char* at, size_t length) {
    State* self = Self(p);
    if (self->current.body.size() + length > self->options.max_body_bytes) {
      return self->Fail(ParseErrorKind::kBodyTooLarge,
                        absl::StrCat("body larger than ", self->options.max_body_bytes, " bytes"));
    }
    self->current.body.append(at, length);
    return 0;
  }

  static int OnMessageComplete(llhttp_t* p) {
    State* self = Self(p);
    // Trailers may have said `Connection: close`; llhttp's verdict is final only now.
    self->current.keep_alive = llhttp_should_keep_alive(p) != 0;
    self->in_progress = false;
    std::string& body = self->current.body;
    if (body.capacity() < body.size() + kBodyReadPadding)
      body.reserve(body.size() + kBodyReadPadding);
    self->headers_done = false;
    self->expect_continue = false;
    if (self->out != nullptr) self->out->push_back(std::move(self->current));
    self->current = Request();
    return 0;
  }

  ParserOptions options;
  HeadCheck check;
  llhttp_settings_t settings;
  llhttp_t parser;
  Request current;
  std::string field;  // the header name being received
  std::string value;  // the header value being received
  size_t request_line_bytes = 0;
  size_t header_bytes = 0;
  size_t header_count = 0;
  bool in_progress = false;
  bool headers_done = false;
  bool expect_continue = false;
  uint64_t messages_started = 0;
  std::vector<Request>* out = nullptr;  // set during Feed()
  ParseErrorKind error_kind = ParseErrorKind::kNone;
  std::string error_detail;  // set with error_kind by a callback
  absl::Status error;
};

RequestParser::RequestParser(ParserOptions options, HeadCheck check)
    : state_(std::make_unique<State>(options, std::move(check))) {}

RequestParser::~RequestParser() = default;

absl::Status RequestParser::Feed(absl::string_view bytes, std::vector<Request>* out) {
  State& s = *state_;
  if (!s.error.ok()) return s.error;
  s.out = out;
  const char* begin = bytes.data();
  const char* end = bytes.data() + bytes.size();
  llhttp_errno_t rc = HPE_OK;
  while (true) {
    rc = llhttp_execute(&s.parser, begin, static_cast<size_t>(end - begin));
    if (rc != HPE_PAUSED_UPGRADE) break;
    // hawk speaks nothing but HTTP/1.1: an Upgrade (or CONNECT) request is handled as a plain
    // request (RFC 9110 lets a server ignore Upgrade) and parsing goes on as HTTP.
    const char* resume_at = llhttp_get_error_pos(&s.parser);
    llhttp_resume_after_upgrade(&s.parser);
    begin = resume_at;
  }
  s.out = nullptr;
  if (rc == HPE_OK) return absl::OkStatus();
  if (s.error_kind == ParseErrorKind::kRefused) {
    s.error = absl::PermissionDeniedError("request refused at its headers");
  } else if (s.error_kind == ParseErrorKind::kMalformed) {
    s.error = absl::InvalidArgumentError(absl::StrCat("malformed HTTP request: ", s.error_detail));
  } else if (s.error_kind != ParseErrorKind::kNone) {
    s.error = absl::ResourceExhaustedError(absl::StrCat("request too large: ", s.error_detail));
  } else {
    s.error_kind = ParseErrorKind::kMalformed;
    s.error = absl::InvalidArgumentError(
        absl::StrCat("malformed HTTP request: ", llhttp_get_error_reason(&s.parser), " (",
                     llhttp_errno_name(rc), ")"));
  }
  return s.error;
}

ParseErrorKind RequestParser::error_kind() const { return state_->error_kind; }
bool RequestParser::message_in_progress() const { return state_->in_progress; }
bool RequestParser::headers_complete() const { return state_->headers_done; }
bool RequestParser::expects_continue() const { return state_->expect_continue; }
uint64_t RequestParser::messages_started() const { return state_->messages_started; }

}  // namespace hawk::http

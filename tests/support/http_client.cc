#include "tests/support/http_client.h"

#include <llhttp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

namespace hawk::testing {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool HasHeader(const HttpRequest& request, const std::string& name) {
  for (const auto& [key, value] : request.headers) {
    if (Lower(key) == name) return true;
  }
  return false;
}

}  // namespace

HttpRequest HttpRequest::Make(std::string method, std::string target, std::string body) {
  HttpRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.body = std::move(body);
  return request;
}

HttpRequest& HttpRequest::AddHeader(std::string name, std::string value) {
  headers.emplace_back(std::move(name), std::move(value));
  return *this;
}

std::string HttpResult::Header(const std::string& name) const {
  auto it = headers.find(Lower(name));
  return it == headers.end() ? "" : it->second;
}

// The state of the response being parsed. Owns the llhttp parser; the callbacks reach it via
// parser_.data, so it never moves.
class ResponseParser {
 public:
  ResponseParser() {
    llhttp_settings_init(&settings_);
    settings_.on_message_begin = &OnMessageBegin;
    settings_.on_header_field = &OnHeaderField;
    settings_.on_header_value = &OnHeaderValue;
    settings_.on_header_value_complete = &OnHeaderValueComplete;
    settings_.on_headers_complete = &OnHeadersComplete;
    settings_.on_body = &OnBody;
    settings_.on_chunk_header = &OnChunkHeader;
    settings_.on_chunk_complete = &OnChunkComplete;
    settings_.on_message_complete = &OnMessageComplete;
    llhttp_init(&parser_, HTTP_RESPONSE, &settings_);
    parser_.data = this;
  }
  ResponseParser(const ResponseParser&) = delete;
  ResponseParser& operator=(const ResponseParser&) = delete;

  // Before each response: forget the previous one.
  void Reset(bool head_request) {
    skip_body = head_request;
    ResetMessage();
  }

  // Parses `data`; returns how many bytes were consumed (less than all when a response ended:
  // the parser pauses there so that the next response's bytes stay unparsed), or -1 with
  // `*error`.
  long Execute(const std::string& data, std::string* error) {
    llhttp_errno_t err = llhttp_execute(&parser_, data.data(), data.size());
    if (err == HPE_OK) return static_cast<long>(data.size());
    if (err == HPE_PAUSED) {
      long consumed = llhttp_get_error_pos(&parser_) - data.data();
      llhttp_resume(&parser_);
      return consumed;
    }
    *error = std::string("bad HTTP response: ") + llhttp_errno_name(err) + " (" +
             llhttp_get_error_reason(&parser_) + ")";
    return -1;
  }

  // At EOF: completes a response delimited by the connection close.
  void Finish() {
    if (finished_) return;
    finished_ = true;
    llhttp_finish(&parser_);
  }

  bool skip_body = false;
  bool headers_done = false;
  bool message_done = false;
  bool chunked = false;
  bool keep_alive = false;
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  std::deque<std::string> chunks;  // complete chunks (or body pieces) not yet handed out

 private:
  void ResetMessage() {
    headers_done = message_done = chunked = keep_alive = false;
    status = 0;
    headers.clear();
    body.clear();
    chunks.clear();
    field_.clear();
    value_.clear();
    chunk_.clear();
  }

  static ResponseParser* Self(llhttp_t* p) { return static_cast<ResponseParser*>(p->data); }

  static int OnMessageBegin(llhttp_t* p) {
    Self(p)->ResetMessage();
    return 0;
  }
  static int OnHeaderField(llhttp_t* p, const char* at, size_t length) {
    Self(p)->field_.append(at, length);
    return 0;
  }
  static int OnHeaderValue(llhttp_t* p, const char* at, size_t length) {
    Self(p)->value_.append(at, length);
    return 0;
  }
  static int OnHeaderValueComplete(llhttp_t* p) {
    ResponseParser* self = Self(p);
    std::string& slot = self->headers[Lower(self->field_)];
    slot += (slot.empty() ? "" : ", ") + self->value_;
    self->field_.clear();
    self->value_.clear();
    return 0;
  }
  static int OnHeadersComplete(llhttp_t* p) {
    ResponseParser* self = Self(p);
    self->status = p->status_code;
    self->headers_done = true;
    return self->skip_body ? 1 : 0;
  }
  static int OnBody(llhttp_t* p, const char* at, size_t length) {
    ResponseParser* self = Self(p);
    self->body.append(at, length);
    if (self->chunked) {
      self->chunk_.append(at, length);
    } else {
      self->chunks.emplace_back(at, length);
    }
    return 0;
  }
  static int OnChunkHeader(llhttp_t* p) {
    Self(p)->chunked = true;
    return 0;
  }
  static int OnChunkComplete(llhttp_t* p) {
    ResponseParser* self = Self(p);
    if (!self->chunk_.empty()) self->chunks.push_back(std::move(self->chunk_));
    self->chunk_.clear();
    return 0;
  }
  static int OnMessageComplete(llhttp_t* p) {
    ResponseParser* self = Self(p);
    self->keep_alive = llhttp_should_keep_alive(p) != 0;
    self->message_done = true;
    return HPE_PAUSED;
  }

  llhttp_t parser_;
  llhttp_settings_t settings_;
  bool finished_ = false;
  std::string field_;
  std::string value_;
  std::string chunk_;
};

HttpConnection::HttpConnection(UniqueFd fd)
    : fd_(std::move(fd)), parser_(std::make_unique<ResponseParser>()) {}

HttpConnection::~HttpConnection() = default;

std::unique_ptr<HttpConnection> HttpConnection::Connect(const std::string& address,
                                                        std::chrono::milliseconds timeout,
                                                        std::string* error) {
  std::string message;
  UniqueFd fd = ConnectAddress(address, Clock::now() + timeout, &message);
  if (!fd.valid()) {
    if (error != nullptr) *error = message;
    return nullptr;
  }
  return std::unique_ptr<HttpConnection>(new HttpConnection(std::move(fd)));
}

bool HttpConnection::SendRequest(const HttpRequest& request, std::chrono::milliseconds timeout,
                                 std::string* error) {
  std::string text = request.method + " " + request.target + " HTTP/1.1\r\n";
  if (!HasHeader(request, "host")) text += "Host: localhost\r\n";
  bool wants_length = !request.body.empty() || request.method == "POST" ||
                      request.method == "PUT" || request.method == "PATCH";
  if (wants_length && !HasHeader(request, "content-length") &&
      !HasHeader(request, "transfer-encoding")) {
    text += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  }
  // hawk's API takes JSON bodies only (415 for anything else), as a controller sends them.
  if (!request.body.empty() && !HasHeader(request, "content-type")) {
    text += "Content-Type: application/json\r\n";
  }
  for (const auto& [key, value] : request.headers) text += key + ": " + value + "\r\n";
  text += "\r\n";
  text += request.body;
  std::string message;
  if (!WriteAll(fd_.get(), text, Clock::now() + timeout, &message)) {
    if (error != nullptr) *error = message;
    return false;
  }
  head_requests_.push_back(request.method == "HEAD");
  return true;
}

HttpResult HttpConnection::RoundTrip(const HttpRequest& request,
                                     std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  HttpResult result;
  if (!SendRequest(request, timeout, &result.error)) return result;
  return ReadResponse(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

void HttpConnection::BeginResponse() {
  bool head = false;
  if (!head_requests_.empty()) {
    head = head_requests_.front();
    head_requests_.pop_front();
  }
  parser_->Reset(head);
  in_response_ = true;
}

bool HttpConnection::Feed(std::string* error) {
  long consumed = parser_->Execute(pending_, error);
  if (consumed < 0) return false;
  pending_.erase(0, static_cast<size_t>(consumed));
  return true;
}

template <typename Done>
bool HttpConnection::Pump(Done done, Clock::time_point deadline, std::string* error) {
  char buffer[16384];
  while (true) {
    if (done()) return true;
    if (parser_->message_done) {
      *error = "end of body";
      return false;
    }
    if (!pending_.empty()) {
      if (!Feed(error)) return false;
      continue;
    }
    if (eof_) {
      parser_->Finish();
      if (done()) return true;
      *error = parser_->headers_done ? "connection closed before the end of the response"
                                     : "connection closed before the response";
      return false;
    }
    std::string read_error;
    ssize_t n = ReadSome(fd_.get(), buffer, sizeof(buffer), deadline, &read_error);
    if (n > 0) {
      pending_.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      eof_ = true;
    } else if (read_error == "timeout") {
      *error = "timeout";
      return false;
    } else {
      eof_ = true;  // reset: the connection is gone
      *error = read_error;
      return false;
    }
  }
}

HttpResult HttpConnection::ReadResponse(std::chrono::milliseconds timeout) {
  HttpResult result;
  if (!in_response_) BeginResponse();
  if (!Pump([this] { return parser_->message_done; }, Clock::now() + timeout, &result.error)) {
    return result;
  }
  in_response_ = false;
  result.ok = true;
  result.status = parser_->status;
  result.headers = parser_->headers;
  result.body = parser_->body;
  result.keep_alive = parser_->keep_alive;
  return result;
}

HttpResult HttpConnection::ReadResponseHead(std::chrono::milliseconds timeout) {
  HttpResult result;
  if (!in_response_) BeginResponse();
  if (!Pump([this] { return parser_->headers_done; }, Clock::now() + timeout, &result.error)) {
    return result;
  }
  result.ok = true;
  result.status = parser_->status;
  result.headers = parser_->headers;
  return result;
}

std::optional<std::string> HttpConnection::ReadChunk(std::chrono::milliseconds timeout,
                                                     std::string* error) {
  std::string message;
  if (!in_response_) {
    message = "no response in progress (call ReadResponseHead first)";
  } else if (Pump([this] { return !parser_->chunks.empty() || parser_->message_done; },
                  Clock::now() + timeout, &message)) {
    if (!parser_->chunks.empty()) {
      std::string chunk = std::move(parser_->chunks.front());
      parser_->chunks.pop_front();
      return chunk;
    }
    in_response_ = false;
    message = "end of body";
  }
  if (error != nullptr) *error = message;
  return std::nullopt;
}

bool HttpConnection::ServerClosed(std::chrono::milliseconds wait) {
  if (eof_) return true;
  short events = POLLIN;
#ifdef POLLRDHUP
  events |= POLLRDHUP;
#endif
  int revents = PollFd(fd_.get(), events, Clock::now() + wait);
  if (revents <= 0) return false;
#ifdef POLLRDHUP
  if (revents & POLLRDHUP) return true;
#endif
  char byte;
  ssize_t n = ::recv(fd_.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    return true;
  }
  return (revents & (POLLHUP | POLLERR)) != 0;
}

void HttpConnection::Shutdown() { ::shutdown(fd_.get(), SHUT_RDWR); }

HttpResult Fetch(const std::string& address, const std::string& method, const std::string& target,
                 const std::string& body, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  HttpResult result;
  auto connection = HttpConnection::Connect(address, timeout, &result.error);
  if (!connection) return result;
  HttpRequest request;
  request.method = method;
  request.target = target;
  request.body = body;
  request.headers.emplace_back("Connection", "close");
  return connection->RoundTrip(
      request, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

}  // namespace hawk::testing

#pragma once

// A blocking HTTP/1.1 client for tests: POSIX sockets with deadlines, responses parsed by
// llhttp. Addresses: `unix:PATH`, `tcp:HOST:PORT` or `HOST:PORT` (numeric IPv4).
//
// HttpConnection keeps one connection for several requests (keep-alive, pipelining) and can
// read a chunked response incrementally (ReadResponseHead() then ReadChunk()), e.g. an ndjson
// watch stream. Not thread-safe, except Shutdown(), which another thread may call to unblock a
// pending read.

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/socket_util.h"

namespace hawk::testing {

struct HttpRequest {
  std::string method = "GET";
  std::string target = "/";
  // Sent as given. Host is added if missing; Content-Length too when there is a body (or the
  // method is POST/PUT/PATCH) and neither Content-Length nor Transfer-Encoding is given; and
  // `Content-Type: application/json` with a body that has no Content-Type.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // HttpRequest::Get("/x").AddHeader("Connection", "close")
  static HttpRequest Get(std::string target) { return Make("GET", std::move(target)); }
  static HttpRequest Make(std::string method, std::string target, std::string body = "");
  HttpRequest& AddHeader(std::string name, std::string value);
};

struct HttpResult {
  bool ok = false;    // a complete response (or, after ReadResponseHead, its head) arrived
  std::string error;  // why not: "connect …", "timeout", "connection closed before response"
  int status = 0;
  std::map<std::string, std::string> headers;  // lowercase names; repeats joined with ", "
  std::string body;
  bool keep_alive = false;  // the connection may carry another request (llhttp's verdict)

  // The header's value, or "" (name in any case).
  std::string Header(const std::string& name) const;
};

class ResponseParser;  // llhttp state, in http_client.cc

class HttpConnection {
 public:
  static std::unique_ptr<HttpConnection> Connect(
      const std::string& address, std::chrono::milliseconds timeout = std::chrono::seconds(5),
      std::string* error = nullptr);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Sends the request and reads its whole response.
  HttpResult RoundTrip(const HttpRequest& request,
                       std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Sends a request without reading (for pipelining or streaming).
  bool SendRequest(const HttpRequest& request, std::chrono::milliseconds timeout,
                   std::string* error = nullptr);
  // Reads the next whole response (or the rest of one whose head was read).
  HttpResult ReadResponse(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Reads the next response's status and headers only; body bytes that came along are kept
  // for ReadChunk()/ReadResponse().
  HttpResult ReadResponseHead(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // After ReadResponseHead(): the next chunk's data of a chunked body (for other bodies: the
  // next bytes that arrived). nullopt with `*error` = "end of body", "timeout", or an error.
  std::optional<std::string> ReadChunk(std::chrono::milliseconds timeout,
                                       std::string* error = nullptr);

  // True once the server closed (or reset) the connection; waits up to `wait` for it. Data the
  // server sends meanwhile is not consumed.
  bool ServerClosed(std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  // shutdown(SHUT_RDWR): wakes a reader blocked in another thread; the connection is dead.
  void Shutdown();
  int fd() const { return fd_.get(); }

 private:
  explicit HttpConnection(UniqueFd fd);
  // Reads and parses until `done()` holds; false with `*error` on timeout, EOF or bad bytes.
  template <typename Done>
  bool Pump(Done done, Clock::time_point deadline, std::string* error);
  bool Feed(std::string* error);
  void BeginResponse();

  UniqueFd fd_;
  std::unique_ptr<ResponseParser> parser_;
  std::string pending_;  // received, not yet parsed (bytes after a completed response)
  bool eof_ = false;
  bool in_response_ = false;        // a response head was read and its body is still being read
  std::deque<bool> head_requests_;  // per request in flight: was it HEAD (no body expected)
};

// One request on a fresh connection (with `Connection: close`).
HttpResult Fetch(const std::string& address, const std::string& method, const std::string& target,
                 const std::string& body = "",
                 std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace hawk::testing

// hawk_e2e_backend: a fast HTTP/1.1 origin for zero-downtime scenarios under load.
//
//   hawk_e2e_backend --listen 127.0.0.1:PORT --name NAME [--drain-timeout-ms 5000]
//                    [--lame-duck-ms 0]
//
// Every request gets 200, body "NAME\n", `X-Backend: NAME` and `Content-Length`. Keep-alive
// (HTTP/1.1 default, `Connection: close` honoured) and pipelining (responses in order). Prints
// "listening on 127.0.0.1:PORT" once ready (PORT 0 picks a free port).
//
// SIGTERM or SIGINT stops it the way a terminating Kubernetes pod running Go's
// http.Server.Shutdown does, because that is the behaviour a proxy in front has to survive:
// the listener closes at once (new connects are refused), idle keep-alive connections close at
// once, a connection with a request in progress gets that response with `Connection: close` and
// then closes; the process exits 0 when no connection is left, or after --drain-timeout-ms.
//
// --lame-duck-ms N puts a lame-duck period between the listener's close and the idle close, as a
// pod with a preStop sleep in front of that shutdown has: for N ms, connections already open stay
// open and every request on them is answered with `Connection: close`. A proxy then moves off the
// connections it already has, one response at a time, instead of racing the idle close with a
// request already on the wire (which no retry policy fully covers); new connects still fail at
// once.
//
// One thread, libuv, llhttp. Independent of hawk's agent/ code.

#include <llhttp.h>
#include <netinet/in.h>
#include <uv.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// Parsing happens inside the read callback and keeps no pointer into the bytes afterwards, so
// one buffer serves every connection (one thread).
constexpr size_t kReadBufferSize = 64 * 1024;
char g_read_buffer[kReadBufferSize];

struct Options {
  std::string listen = "127.0.0.1:0";
  std::string name;
  uint64_t drain_timeout_ms = 5000;
  uint64_t lame_duck_ms = 0;
};

class Server;

// One accepted connection. Ownership: Server keeps it in an intrusive list; only OnClosed (the
// libuv close callback) unlinks and frees it, so nothing is freed on its own callback's stack.
// One write is in flight at most: responses produced meanwhile collect in `out_` and go out
// together when it completes, which batches pipelined responses into one write.
class Connection {
 public:
  enum class State {
    kOpen,          // reading and answering requests
    kLastResponse,  // the response that ends the connection is queued; no more requests
    kDraining,      // write side shut down; discarding input until the peer's EOF, so that
                    // unread bytes do not turn our close into an RST that destroys the response
    kClosing,       // uv_close called; freed in OnClosed
  };

  explicit Connection(Server* server) : server_(server) {}

  // Accepts a pending connection from `listener`; on failure the connection closes itself.
  void Accept(uv_stream_t* listener);
  // Called once when the server closes its idle connections (at SIGTERM, or after the lame duck).
  void OnClosingIdle();
  // Idempotent.
  void Close();

  Connection* prev = nullptr;  // Server's list
  Connection* next = nullptr;

 private:
  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void OnWrite(uv_write_t* req, int status);
  static void OnShutdown(uv_shutdown_t* req, int status);
  static void OnClosed(uv_handle_t* handle);
  static int OnMessageBegin(llhttp_t* parser);
  static int OnHeadersComplete(llhttp_t* parser);
  static int OnMessageComplete(llhttp_t* parser);
  static const llhttp_settings_t* Settings();

  void Parse(const char* data, size_t size);
  void Flush();
  void AfterWrites();
  void StartDrain();
  bool Idle() const { return !in_request_ && !write_in_flight_ && out_.empty(); }

  Server* server_;
  uv_tcp_t tcp_{};
  uv_write_t write_req_{};
  uv_shutdown_t shutdown_req_{};
  llhttp_t parser_{};
  State state_ = State::kOpen;
  bool in_request_ = false;  // a request has begun and is not complete yet
  bool keep_alive_ = true;   // what the request in progress asked for
  bool http10_ = false;      // the request in progress is HTTP/1.0
  bool write_in_flight_ = false;
  bool peer_eof_ = false;  // the client half-closed; answer what is queued, then close
  std::string out_;        // responses waiting for the write in flight
  std::string writing_;    // bytes owned by the write in flight; capacity is reused
};

// The listener, the signals, the drain timer and the connections. Lives on main's stack for the
// whole run; every handle is closed before the loop runs dry.
class Server {
 public:
  Server(uv_loop_t* loop, Options options);

  // Binds, listens and prints the address; false (after closing what it opened) on error.
  bool Start();

  uv_loop_t* loop() const { return loop_; }
  // From SIGTERM on: every response ends its connection.
  bool stopping() const { return stopping_; }
  // From the end of the lame-duck period on: idle connections are closed too.
  bool closing_idle() const { return closing_idle_; }
  const std::string& response(bool keep_alive, bool http10) const {
    if (!keep_alive) return response_close_;
    return http10 ? response_keep_alive_ : response_;
  }
  static const std::string& BadRequest();

  void Add(Connection* conn);
  void Remove(Connection* conn);

 private:
  static void OnConnection(uv_stream_t* listener, int status);
  static void OnSignal(uv_signal_t* handle, int signum);
  static void OnDrainTimeout(uv_timer_t* timer);
  static void OnLameDuckOver(uv_timer_t* timer);

  void Stop();
  void CloseIdle();
  void FinishIfDone();

  uv_loop_t* loop_;
  Options options_;
  std::string response_;             // HTTP/1.1 keep-alive (the default, no Connection header)
  std::string response_keep_alive_;  // HTTP/1.0 keep-alive
  std::string response_close_;       // the last response on a connection
  uv_tcp_t listener_{};
  uv_signal_t sigterm_{};
  uv_signal_t sigint_{};
  uv_timer_t drain_timer_{};
  uv_timer_t lame_duck_timer_{};
  bool stopping_ = false;
  bool closing_idle_ = false;
  bool finished_ = false;
  size_t count_ = 0;
  Connection* head_ = nullptr;
};

// --- Connection ---

const llhttp_settings_t* Connection::Settings() {
  static const llhttp_settings_t settings = [] {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    s.on_message_begin = &Connection::OnMessageBegin;
    s.on_headers_complete = &Connection::OnHeadersComplete;
    s.on_message_complete = &Connection::OnMessageComplete;
    return s;
  }();
  return &settings;
}

void Connection::Accept(uv_stream_t* listener) {
  server_->Add(this);
  uv_tcp_init(server_->loop(), &tcp_);
  tcp_.data = this;
  write_req_.data = this;
  shutdown_req_.data = this;
  llhttp_init(&parser_, HTTP_REQUEST, Settings());
  parser_.data = this;
  int rc = uv_accept(listener, reinterpret_cast<uv_stream_t*>(&tcp_));
  if (rc == 0) {
    uv_tcp_nodelay(&tcp_, 1);  // small responses must not wait for Nagle
    rc = uv_read_start(reinterpret_cast<uv_stream_t*>(&tcp_), &OnAlloc, &OnRead);
  }
  if (rc != 0) {
    std::fprintf(stderr, "hawk_e2e_backend: accept: %s\n", uv_strerror(rc));
    Close();
  }
}

void Connection::OnClosingIdle() {
  if (state_ != State::kOpen) return;  // already on its way out
  // Idle: nothing to finish. A request in progress finishes with `Connection: close`
  // (OnMessageComplete); a write in flight finishes and then the connection drains (AfterWrites).
  if (Idle()) Close();
}

void Connection::Close() {
  if (state_ == State::kClosing) return;
  state_ = State::kClosing;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &OnClosed);
}

void Connection::OnClosed(uv_handle_t* handle) {
  auto* conn = static_cast<Connection*>(handle->data);
  Server* server = conn->server_;
  server->Remove(conn);
  delete conn;
}

void Connection::OnAlloc(uv_handle_t*, size_t, uv_buf_t* buf) {
  *buf = uv_buf_init(g_read_buffer, sizeof(g_read_buffer));
}

void Connection::OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* conn = static_cast<Connection*>(stream->data);
  if (nread == 0) return;  // EAGAIN
  if (nread < 0) {
    // EOF: the client half-closed, possibly after pipelined requests; answer what was
    // complete, then close. Any other error: nobody is left to answer.
    if (nread == UV_EOF && conn->state_ != State::kDraining &&
        (conn->write_in_flight_ || !conn->out_.empty())) {
      conn->peer_eof_ = true;
      if (conn->state_ == State::kOpen) conn->state_ = State::kLastResponse;
      return;
    }
    conn->Close();
    return;
  }
  if (conn->state_ != State::kOpen) return;  // past the last response: discard
  conn->Parse(buf->base, static_cast<size_t>(nread));
  conn->Flush();
}

void Connection::Parse(const char* data, size_t size) {
  llhttp_errno_t err = llhttp_execute(&parser_, data, size);
  if (err == HPE_OK) return;
  if (err != HPE_PAUSED) {
    // Malformed request: answer 400 and end the connection, as servers do.
    out_ += Server::BadRequest();
  }
  // HPE_PAUSED: OnMessageComplete queued the connection's last response.
  state_ = State::kLastResponse;
}

int Connection::OnMessageBegin(llhttp_t* parser) {
  static_cast<Connection*>(parser->data)->in_request_ = true;
  return 0;
}

int Connection::OnHeadersComplete(llhttp_t* parser) {
  auto* conn = static_cast<Connection*>(parser->data);
  conn->keep_alive_ = llhttp_should_keep_alive(parser) != 0;
  conn->http10_ = llhttp_get_http_major(parser) == 1 && llhttp_get_http_minor(parser) == 0;
  return 0;
}

int Connection::OnMessageComplete(llhttp_t* parser) {
  auto* conn = static_cast<Connection*>(parser->data);
  conn->in_request_ = false;
  // A stopping server ends every connection after the request in progress, like Go's Shutdown.
  bool keep_alive = conn->keep_alive_ && !conn->server_->stopping();
  conn->out_ += conn->server_->response(keep_alive, conn->http10_);
  // Pausing stops llhttp here: pipelined requests behind the last response are not answered.
  return keep_alive ? HPE_OK : HPE_PAUSED;
}

void Connection::Flush() {
  if (write_in_flight_ || out_.empty() || state_ == State::kClosing) return;
  writing_.swap(out_);
  out_.clear();
  uv_buf_t buf = uv_buf_init(writing_.data(), static_cast<unsigned int>(writing_.size()));
  int rc = uv_write(&write_req_, reinterpret_cast<uv_stream_t*>(&tcp_), &buf, 1, &OnWrite);
  if (rc != 0) {
    Close();
    return;
  }
  write_in_flight_ = true;
}

void Connection::OnWrite(uv_write_t* req, int status) {
  if (status == UV_ECANCELED) return;  // closing; touch nothing
  auto* conn = static_cast<Connection*>(req->data);
  conn->write_in_flight_ = false;
  if (status < 0) {
    conn->Close();
    return;
  }
  conn->AfterWrites();
}

void Connection::AfterWrites() {
  if (!out_.empty()) {
    Flush();
    return;
  }
  if (state_ == State::kLastResponse) {
    StartDrain();
  } else if (state_ == State::kOpen && server_->closing_idle() && !in_request_) {
    // Its last response went out before the idle close began (still keep-alive): end it now.
    StartDrain();
  }
}

void Connection::StartDrain() {
  if (peer_eof_) {  // the peer is done already: nothing left to drain
    Close();
    return;
  }
  state_ = State::kDraining;
  int rc = uv_shutdown(&shutdown_req_, reinterpret_cast<uv_stream_t*>(&tcp_), &OnShutdown);
  if (rc != 0) Close();
}

void Connection::OnShutdown(uv_shutdown_t* req, int status) {
  if (status == UV_ECANCELED) return;
  auto* conn = static_cast<Connection*>(req->data);
  if (status < 0) conn->Close();
  // Otherwise wait for the peer's EOF (OnRead), or the server's drain timeout.
}

// --- Server ---

Server::Server(uv_loop_t* loop, Options options) : loop_(loop), options_(std::move(options)) {
  const std::string body = options_.name + "\n";
  auto build = [&](const char* connection) {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\nX-Backend: " + options_.name + "\r\n" + connection +
           "\r\n" + body;
  };
  response_ = build("");
  response_keep_alive_ = build("Connection: keep-alive\r\n");
  response_close_ = build("Connection: close\r\n");
}

const std::string& Server::BadRequest() {
  static const std::string text =
      "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  return text;
}

bool Server::Start() {
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
  uv_signal_init(loop_, &sigterm_);
  sigterm_.data = this;
  uv_signal_init(loop_, &sigint_);
  sigint_.data = this;
  uv_timer_init(loop_, &drain_timer_);
  drain_timer_.data = this;
  uv_timer_init(loop_, &lame_duck_timer_);
  lame_duck_timer_.data = this;

  sockaddr_in addr{};
  int rc = UV_EINVAL;
  auto colon = options_.listen.rfind(':');
  if (colon != std::string::npos) {
    char* end = nullptr;
    unsigned long port = std::strtoul(options_.listen.c_str() + colon + 1, &end, 10);
    if (*end == '\0' && end != options_.listen.c_str() + colon + 1 && port <= 65535) {
      rc = uv_ip4_addr(options_.listen.substr(0, colon).c_str(), static_cast<int>(port), &addr);
    }
  }
  if (rc == 0) rc = uv_tcp_bind(&listener_, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 1024, &OnConnection);
  if (rc == 0) rc = uv_signal_start(&sigterm_, &OnSignal, SIGTERM);
  if (rc == 0) rc = uv_signal_start(&sigint_, &OnSignal, SIGINT);
  sockaddr_storage bound{};
  int len = sizeof(bound);
  if (rc == 0) {
    rc = uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&bound), &len);
  }
  if (rc != 0) {
    std::fprintf(stderr, "hawk_e2e_backend: listen %s: %s\n", options_.listen.c_str(),
                 uv_strerror(rc));
    stopping_ = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
    FinishIfDone();
    return false;
  }
  char host[64] = "";
  const auto* in = reinterpret_cast<const sockaddr_in*>(&bound);
  uv_ip4_name(in, host, sizeof(host));
  std::printf("listening on %s:%d\n", host, ntohs(in->sin_port));
  std::fflush(stdout);
  return true;
}

void Server::Add(Connection* conn) {
  conn->next = head_;
  if (head_ != nullptr) head_->prev = conn;
  head_ = conn;
  ++count_;
}

void Server::Remove(Connection* conn) {
  if (conn->prev != nullptr) conn->prev->next = conn->next;
  if (conn->next != nullptr) conn->next->prev = conn->prev;
  if (head_ == conn) head_ = conn->next;
  --count_;
  FinishIfDone();
}

void Server::OnConnection(uv_stream_t* listener, int status) {
  auto* server = static_cast<Server*>(listener->data);
  if (status < 0) {
    std::fprintf(stderr, "hawk_e2e_backend: listen: %s\n", uv_strerror(status));
    return;
  }
  (new Connection(server))->Accept(listener);
}

void Server::OnSignal(uv_signal_t* handle, int) { static_cast<Server*>(handle->data)->Stop(); }

void Server::Stop() {
  if (stopping_) return;
  stopping_ = true;
  // Closing the fd now (uv_close does so synchronously) makes new connects fail at once.
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
  if (options_.lame_duck_ms > 0) {
    uv_timer_start(&lame_duck_timer_, &OnLameDuckOver, options_.lame_duck_ms, 0);
    FinishIfDone();  // nothing open: nothing to wait for
    return;
  }
  CloseIdle();
}

void Server::OnLameDuckOver(uv_timer_t* timer) { static_cast<Server*>(timer->data)->CloseIdle(); }

void Server::CloseIdle() {
  closing_idle_ = true;
  uv_timer_start(&drain_timer_, &OnDrainTimeout, options_.drain_timeout_ms, 0);
  for (Connection* conn = head_; conn != nullptr; conn = conn->next) conn->OnClosingIdle();
  FinishIfDone();
}

void Server::OnDrainTimeout(uv_timer_t* timer) {
  auto* server = static_cast<Server*>(timer->data);
  std::fprintf(stderr, "hawk_e2e_backend: drain timeout, closing %zu connection(s)\n",
               server->count_);
  for (Connection* conn = server->head_; conn != nullptr; conn = conn->next) conn->Close();
}

void Server::FinishIfDone() {
  if (!stopping_ || finished_ || count_ != 0) return;
  finished_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&sigterm_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sigint_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&drain_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&lame_duck_timer_), nullptr);
}

int Usage() {
  std::fprintf(stderr,
               "usage: hawk_e2e_backend --listen HOST:PORT --name NAME [--drain-timeout-ms N] "
               "[--lame-duck-ms N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--listen" && i + 1 < argc) {
      options.listen = argv[++i];
    } else if (arg == "--name" && i + 1 < argc) {
      options.name = argv[++i];
    } else if (arg == "--drain-timeout-ms" && i + 1 < argc) {
      options.drain_timeout_ms = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--lame-duck-ms" && i + 1 < argc) {
      options.lame_duck_ms = std::strtoull(argv[++i], nullptr, 10);
    } else {
      return Usage();
    }
  }
  // The name goes into a header line verbatim.
  if (options.name.empty() || options.name.find_first_of("\r\n") != std::string::npos) {
    return Usage();
  }
  std::signal(SIGPIPE, SIG_IGN);  // a client that goes away is a write error, not a signal

  uv_loop_t loop;
  if (int rc = uv_loop_init(&loop); rc != 0) {
    std::fprintf(stderr, "hawk_e2e_backend: uv_loop_init: %s\n", uv_strerror(rc));
    return 1;
  }
  int exit_code = 0;
  {
    Server server(&loop, options);
    if (!server.Start()) exit_code = 1;
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  if (int rc = uv_loop_close(&loop); rc != 0) {
    std::fprintf(stderr, "hawk_e2e_backend: uv_loop_close: %s\n", uv_strerror(rc));
    return 1;
  }
  return exit_code;
}

#include "tests/e2e/load_client.h"

#include <llhttp.h>
#include <uv.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

#include "tests/e2e/load_stats.h"
#include "tests/support/json_quote.h"

namespace hawk::e2e {
namespace {

// Responses are parsed inside the read callback and nothing points into the bytes afterwards,
// so one buffer serves every connection (one thread).
constexpr size_t kReadBufferSize = 64 * 1024;
char g_read_buffer[kReadBufferSize];

double MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::string Lower(const char* text) {
  std::string out = text;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class LoadClient;
class Slot;

// One TCP connection and the response parser for it. Ownership: its Slot creates it and, to get
// rid of it, detaches it (`slot` = nullptr) and calls Close(); OnClosed frees it. Callbacks of a
// detached connection do nothing, so a late callback can never touch a newer request.
struct Conn {
  explicit Conn(Slot* owner) : slot(owner) {}

  // Starts connecting; a libuv error code if that fails at once.
  int Connect(uv_loop_t* loop, const sockaddr* address);
  // Sends the request (the bytes outlive the write) and readies the per-request state.
  int WriteRequest(const uv_buf_t& request);
  // Detaches and closes. Idempotent.
  void Close();

  static const llhttp_settings_t* Settings();
  static void OnConnect(uv_connect_t* req, int status);
  static void OnWrite(uv_write_t* req, int status);
  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void OnClosed(uv_handle_t* handle);
  static int OnMessageBegin(llhttp_t* parser);
  static int OnHeaderField(llhttp_t* parser, const char* at, size_t length);
  static int OnHeaderFieldComplete(llhttp_t* parser);
  static int OnHeaderValue(llhttp_t* parser, const char* at, size_t length);
  static int OnHeaderValueComplete(llhttp_t* parser);
  static int OnHeadersComplete(llhttp_t* parser);
  static int OnMessageComplete(llhttp_t* parser);

  Slot* slot;
  uv_tcp_t tcp{};
  uv_connect_t connect_req{};
  uv_write_t write_req{};
  llhttp_t parser{};
  bool initialized = false;  // uv_tcp_init succeeded: freeing goes through uv_close
  bool closing = false;
  bool connected = false;
  bool write_in_flight = false;
  uint64_t responses = 0;  // complete responses received: > 0 means the connection is reused
  int64_t last_pid = 0;    // X-Pid of the last complete response

  // The response in progress.
  bool got_bytes = false;  // some byte of it arrived
  bool complete = false;
  bool keep_alive = false;
  int status = 0;
  int64_t pid = 0;
  // The header name being read (lower case; names longer than the buffer never match), and
  // whether the value being read is X-Pid's.
  char field[8] = {};
  size_t field_length = 0;
  bool in_pid_value = false;
};

// A logical client: one request at a time on a keep-alive connection that it replaces when the
// peer ends it; back to back for load, every interval for the prober. Owned by LoadClient for
// the whole run; Stop() closes its timer and connection before the loop runs dry.
class Slot {
 public:
  // A load slot (`prober` false) sends back to back, on a new connection per request when
  // `one_shot`; the prober once per interval.
  Slot(LoadClient* client, int id, bool prober, bool one_shot)
      : client_(client), id_(id), prober_(prober), one_shot_(one_shot) {}
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  void Start();
  // Abandons the request in flight; closes the connection and the timer.
  void Stop();
  void CheckTimeout(uint64_t now_ns);

  // From Conn's callbacks; `conn` is always this slot's current connection.
  void OnConnected(Conn* conn);
  void OnData(Conn* conn, const char* data, size_t size);
  // A connect, read or write error, or the peer's EOF.
  void OnEnd(Conn* conn, int error);

 private:
  static void OnTimer(uv_timer_t* timer);

  void BeginRequest();
  const uv_buf_t& request() const;
  // Sends the outstanding request on the current connection, or on a new one.
  void Dispatch();
  void Complete(Conn* conn, bool reusable);
  // Ends the outstanding request as a failure and schedules the next one.
  void Fail(const std::string& kind, const std::string& error, int status, int64_t pid,
            bool transport);
  void DropConn();

  LoadClient* client_;
  int id_;
  bool prober_;
  bool one_shot_;
  uv_timer_t timer_{};  // prober: the interval; load: the pause after a transport failure
  Conn* conn_ = nullptr;
  bool opened_any_ = false;  // a connection was opened before: the next one is a reconnect
  bool outstanding_ = false;
  bool retried_ = false;  // the outstanding request was resent once already
  uint64_t start_ns_ = 0;
};

// Owns the target, the request bytes, the stats, the events file, the slots, the signals and
// the timers. Lives on RunLoadClient's stack for the whole run.
class LoadClient {
 public:
  LoadClient(uv_loop_t* loop, LoadClientOptions options)
      : loop_(loop), options_(std::move(options)) {}

  // Validates the options and starts everything; false (nothing started, reason on stderr) if
  // they are unusable.
  bool Start();

  uv_loop_t* loop() const { return loop_; }
  const LoadClientOptions& options() const { return options_; }
  const sockaddr* address() const { return reinterpret_cast<const sockaddr*>(&address_); }
  const uv_buf_t& request() const { return request_buf_; }
  // The same request with `Connection: close` (one-shot load clients).
  const uv_buf_t& closing_request() const { return closing_request_buf_; }
  LoadStats& stats() { return stats_; }
  bool stopping() const { return stopping_; }

  // Appends one JSON line to the events file, if any.
  void Event(const char* kind, int conn, bool prober, int status, const std::string& error,
             int64_t pid);

 private:
  static void OnSignal(uv_signal_t* handle, int signum);
  static void OnDuration(uv_timer_t* timer);
  static void OnSweep(uv_timer_t* timer);

  void Stop();
  void PrintSummary();

  uv_loop_t* loop_;
  LoadClientOptions options_;
  sockaddr_in address_{};
  std::string request_text_;
  uv_buf_t request_buf_{};
  std::string closing_request_text_;
  uv_buf_t closing_request_buf_{};
  LoadStats stats_;
  std::FILE* events_ = nullptr;
  std::vector<std::unique_ptr<Slot>> slots_;
  uv_signal_t sigterm_{};
  uv_signal_t sigint_{};
  uv_signal_t sigusr1_{};
  uv_timer_t duration_timer_{};
  uv_timer_t sweep_timer_{};  // request timeouts
  uint64_t start_ns_ = 0;
  bool stopping_ = false;
};

// --- Conn ---

const llhttp_settings_t* Conn::Settings() {
  static const llhttp_settings_t settings = [] {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    s.on_message_begin = &Conn::OnMessageBegin;
    s.on_header_field = &Conn::OnHeaderField;
    s.on_header_field_complete = &Conn::OnHeaderFieldComplete;
    s.on_header_value = &Conn::OnHeaderValue;
    s.on_header_value_complete = &Conn::OnHeaderValueComplete;
    s.on_headers_complete = &Conn::OnHeadersComplete;
    s.on_message_complete = &Conn::OnMessageComplete;
    return s;
  }();
  return &settings;
}

int Conn::Connect(uv_loop_t* loop, const sockaddr* address) {
  int rc = uv_tcp_init(loop, &tcp);
  if (rc != 0) return rc;
  initialized = true;
  tcp.data = this;
  connect_req.data = this;
  write_req.data = this;
  llhttp_init(&parser, HTTP_RESPONSE, Settings());
  parser.data = this;
  return uv_tcp_connect(&connect_req, &tcp, address, &OnConnect);
}

int Conn::WriteRequest(const uv_buf_t& request) {
  got_bytes = false;
  complete = false;
  status = 0;
  pid = 0;
  // The buffer is LoadClient's and outlives every write; nothing is copied per request.
  int rc = uv_write(&write_req, reinterpret_cast<uv_stream_t*>(&tcp), &request, 1, &OnWrite);
  if (rc == 0) write_in_flight = true;
  return rc;
}

void Conn::Close() {
  slot = nullptr;
  if (closing) return;
  closing = true;
  if (!initialized) {
    delete this;  // never reached libuv; the caller is not one of our callbacks
    return;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp), &OnClosed);
}

void Conn::OnClosed(uv_handle_t* handle) { delete static_cast<Conn*>(handle->data); }

void Conn::OnConnect(uv_connect_t* req, int status) {
  if (status == UV_ECANCELED) return;  // closing; touch nothing
  auto* conn = static_cast<Conn*>(req->data);
  if (conn->slot == nullptr) return;
  if (status < 0) {
    conn->slot->OnEnd(conn, status);
    return;
  }
  conn->connected = true;
  uv_tcp_nodelay(&conn->tcp, 1);  // requests are small: don't let Nagle hold them
  int rc = uv_read_start(reinterpret_cast<uv_stream_t*>(&conn->tcp), &OnAlloc, &OnRead);
  if (rc != 0) {
    conn->slot->OnEnd(conn, rc);
    return;
  }
  conn->slot->OnConnected(conn);
}

void Conn::OnWrite(uv_write_t* req, int status) {
  if (status == UV_ECANCELED) return;  // closing; touch nothing
  auto* conn = static_cast<Conn*>(req->data);
  conn->write_in_flight = false;
  if (status < 0 && conn->slot != nullptr) conn->slot->OnEnd(conn, status);
}

void Conn::OnAlloc(uv_handle_t*, size_t, uv_buf_t* buf) {
  *buf = uv_buf_init(g_read_buffer, sizeof(g_read_buffer));
}

void Conn::OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* conn = static_cast<Conn*>(stream->data);
  if (conn->slot == nullptr || nread == 0) return;
  if (nread > 0) {
    conn->slot->OnData(conn, buf->base, static_cast<size_t>(nread));
  } else {
    conn->slot->OnEnd(conn, static_cast<int>(nread));
  }
}

int Conn::OnMessageBegin(llhttp_t* parser) {
  auto* conn = static_cast<Conn*>(parser->data);
  conn->field_length = 0;
  conn->in_pid_value = false;
  return 0;
}

int Conn::OnHeaderField(llhttp_t* parser, const char* at, size_t length) {
  auto* conn = static_cast<Conn*>(parser->data);
  // llhttp may hand the name over in pieces: collect them.
  for (size_t i = 0; i < length; ++i, ++conn->field_length) {
    if (conn->field_length < sizeof(conn->field)) {
      conn->field[conn->field_length] =
          static_cast<char>(std::tolower(static_cast<unsigned char>(at[i])));
    }
  }
  return 0;
}

int Conn::OnHeaderFieldComplete(llhttp_t* parser) {
  auto* conn = static_cast<Conn*>(parser->data);
  conn->in_pid_value = conn->field_length == 5 && std::memcmp(conn->field, "x-pid", 5) == 0;
  conn->field_length = 0;
  if (conn->in_pid_value) conn->pid = 0;
  return 0;
}

int Conn::OnHeaderValue(llhttp_t* parser, const char* at, size_t length) {
  auto* conn = static_cast<Conn*>(parser->data);
  if (!conn->in_pid_value) return 0;
  // The value may come in pieces too: accumulate the digits.
  for (size_t i = 0; i < length; ++i) {
    if (at[i] >= '0' && at[i] <= '9' && conn->pid < 100'000'000'000) {
      conn->pid = conn->pid * 10 + (at[i] - '0');
    }
  }
  return 0;
}

int Conn::OnHeaderValueComplete(llhttp_t* parser) {
  static_cast<Conn*>(parser->data)->in_pid_value = false;
  return 0;
}

int Conn::OnHeadersComplete(llhttp_t* parser) {
  auto* conn = static_cast<Conn*>(parser->data);
  conn->status = llhttp_get_status_code(parser);
  conn->keep_alive = llhttp_should_keep_alive(parser) != 0;
  return 0;
}

int Conn::OnMessageComplete(llhttp_t* parser) {
  static_cast<Conn*>(parser->data)->complete = true;
  return HPE_PAUSED;  // one response per request: stop here and let the slot decide
}

// --- Slot ---

void Slot::Start() {
  uv_timer_init(client_->loop(), &timer_);
  timer_.data = this;
  if (prober_) {
    uv_timer_start(&timer_, &OnTimer, 0, client_->options().prober_interval_ms);
  } else {
    BeginRequest();
  }
}

void Slot::Stop() {
  if (outstanding_) {
    ++client_->stats().abandoned;
    outstanding_ = false;
  }
  DropConn();
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
}

void Slot::OnTimer(uv_timer_t* timer) {
  auto* slot = static_cast<Slot*>(timer->data);
  // The prober's ticks that find a probe still in flight are skipped.
  if (!slot->client_->stopping() && !slot->outstanding_) slot->BeginRequest();
}

void Slot::BeginRequest() {
  outstanding_ = true;
  retried_ = false;
  start_ns_ = uv_hrtime();
  Dispatch();
}

const uv_buf_t& Slot::request() const {
  return one_shot_ ? client_->closing_request() : client_->request();
}

void Slot::Dispatch() {
  if (conn_ != nullptr && !conn_->write_in_flight) {
    int rc = conn_->WriteRequest(request());
    if (rc != 0) OnEnd(conn_, rc);
    return;
  }
  DropConn();  // a previous write still pending would be a protocol mix-up: start afresh
  if (opened_any_) ++client_->stats().reconnects;
  opened_any_ = true;
  conn_ = new Conn(this);
  int rc = conn_->Connect(client_->loop(), client_->address());
  if (rc != 0) OnEnd(conn_, rc);
}

void Slot::OnConnected(Conn* conn) {
  if (!outstanding_) return;
  int rc = conn->WriteRequest(request());
  if (rc != 0) OnEnd(conn, rc);
}

void Slot::OnData(Conn* conn, const char* data, size_t size) {
  if (!outstanding_) {
    // Bytes on an idle connection (say, a 408 before an idle close) answer nothing of ours.
    DropConn();
    return;
  }
  conn->got_bytes = true;
  llhttp_errno_t err = llhttp_execute(&conn->parser, data, size);
  if (err == HPE_OK) return;  // more to come
  if (err == HPE_PAUSED && conn->complete) {
    // Bytes after the response were not asked for: don't reuse a connection in that state.
    bool nothing_after = llhttp_get_error_pos(&conn->parser) == data + size;
    Complete(conn, nothing_after);
    return;
  }
  int status = conn->status;
  int64_t pid = conn->pid;
  DropConn();
  Fail("bad_response", std::string("malformed response: ") + llhttp_errno_name(err), status, pid,
       true);
}

void Slot::Complete(Conn* conn, bool reusable) {
  uint64_t latency_us = (uv_hrtime() - start_ns_) / 1000;
  ++conn->responses;
  conn->last_pid = conn->pid;
  int status = conn->status;
  int64_t pid = conn->pid;
  client_->stats().RecordResponse(prober_, status, pid, latency_us);
  if (reusable && conn->keep_alive && !conn->write_in_flight && !one_shot_) {
    llhttp_reset(&conn->parser);
  } else {
    DropConn();  // the next request opens a new connection (a reconnect, not an error)
  }
  if (status < 200 || status >= 300) {
    Fail("status_" + std::to_string(status), "HTTP status " + std::to_string(status), status, pid,
         false);
    return;
  }
  outstanding_ = false;
  if (!prober_ && !client_->stopping()) BeginRequest();
}

void Slot::OnEnd(Conn* conn, int error) {
  uint64_t responses = conn->responses;
  bool reused = responses > 0;
  bool got_bytes = conn->got_bytes;
  if (error == UV_EOF && outstanding_ && got_bytes) {
    // A response delimited by the connection's end completes here.
    llhttp_finish(&conn->parser);
    if (conn->complete) {
      Complete(conn, false);
      return;
    }
  }
  bool connecting = !conn->connected;
  int status = conn->status;
  int64_t pid = got_bytes ? conn->pid : conn->last_pid;
  DropConn();
  if (!outstanding_) return;  // an idle connection ended by the peer: the next request reconnects
  if (reused && !got_bytes && !retried_ && !connecting) {
    // What Go's http.Transport and browsers do: the server may close an idle keep-alive
    // connection just as a request goes out on it, so that request never reached it. Resent
    // once on a new connection; not a failure.
    retried_ = true;
    ++client_->stats().retries;
    client_->Event("retry", id_, prober_, 0,
                   std::string(uv_strerror(error)) +
                       " before any response byte on a reused connection (" +
                       std::to_string(responses) + " responses); resending once",
                   pid);
    Dispatch();
    return;
  }
  std::string kind;
  std::string what;
  if (connecting) {
    kind = error == UV_ECONNREFUSED ? "connect_refused" : "connect_" + Lower(uv_err_name(error));
    what = std::string("connect: ") + uv_strerror(error);
  } else {
    if (error == UV_EOF) {
      kind = "eof";
    } else if (error == UV_ECONNRESET || error == UV_EPIPE) {
      kind = "reset";
    } else {
      kind = Lower(uv_err_name(error));
    }
    what = std::string(uv_strerror(error)) +
           (got_bytes ? " mid-response"
            : reused  ? " before any response byte on a reused connection"
                      : " before any response byte on a new connection");
  }
  if (retried_) what += " (the resent request)";
  Fail(kind, what, status, pid, true);
}

void Slot::CheckTimeout(uint64_t now_ns) {
  uint64_t limit_ns = client_->options().request_timeout_ms * 1'000'000;
  if (!outstanding_ || now_ns - start_ns_ < limit_ns) return;
  int status = conn_ == nullptr ? 0 : conn_->status;
  int64_t pid = conn_ == nullptr ? 0 : conn_->got_bytes ? conn_->pid : conn_->last_pid;
  DropConn();
  Fail("timeout",
       "no complete response within " + std::to_string(client_->options().request_timeout_ms) +
           " ms",
       status, pid, true);
}

void Slot::Fail(const std::string& kind, const std::string& error, int status, int64_t pid,
                bool transport) {
  outstanding_ = false;
  client_->stats().RecordFailure(prober_, kind);
  client_->Event("failure", id_, prober_, status, error, pid);
  if (prober_ || client_->stopping()) return;  // the prober's interval timer goes on
  if (transport) {
    // Through the timer even when the pause is 0: no recursion through a failing connect.
    uv_timer_start(&timer_, &OnTimer, client_->options().failure_backoff_ms, 0);
  } else {
    BeginRequest();
  }
}

void Slot::DropConn() {
  if (conn_ == nullptr) return;
  conn_->Close();
  conn_ = nullptr;
}

// --- LoadClient ---

bool LoadClient::Start() {
  const std::string& target = options_.target;
  auto colon = target.rfind(':');
  char* end = nullptr;
  unsigned long port =
      colon == std::string::npos ? 0 : std::strtoul(target.c_str() + colon + 1, &end, 10);
  if (colon == std::string::npos || end == target.c_str() + colon + 1 || *end != '\0' ||
      port == 0 || port > 65535 ||
      uv_ip4_addr(target.substr(0, colon).c_str(), static_cast<int>(port), &address_) != 0) {
    std::fprintf(stderr, "hawk_load_client: --target %s: want IPV4:PORT\n", target.c_str());
    return false;
  }
  if (options_.path.empty() || options_.path[0] != '/' ||
      options_.path.find_first_of(" \r\n") != std::string::npos) {
    std::fprintf(stderr, "hawk_load_client: --path %s: want /…, no spaces\n",
                 options_.path.c_str());
    return false;
  }
  request_text_ = "GET " + options_.path + " HTTP/1.1\r\nHost: " + target + "\r\n";
  for (const std::string& header : options_.headers) {
    if (header.find(':') == std::string::npos ||
        header.find_first_of("\r\n") != std::string::npos) {
      std::fprintf(stderr, "hawk_load_client: --header %s: want 'Name: value'\n", header.c_str());
      return false;
    }
    request_text_ += header + "\r\n";
  }
  closing_request_text_ = request_text_ + "Connection: close\r\n\r\n";
  request_text_ += "\r\n";
  request_buf_ = uv_buf_init(request_text_.data(), static_cast<unsigned int>(request_text_.size()));
  closing_request_buf_ = uv_buf_init(closing_request_text_.data(),
                                     static_cast<unsigned int>(closing_request_text_.size()));
  if (options_.connections < 0 || options_.one_shot_connections < 0 ||
      (options_.connections == 0 && options_.one_shot_connections == 0 &&
       options_.prober_interval_ms == 0)) {
    std::fprintf(stderr, "hawk_load_client: nothing to do (no connections, no prober)\n");
    return false;
  }
  if (!options_.events_path.empty()) {
    events_ = std::fopen(options_.events_path.c_str(), "a");
    if (events_ == nullptr) {
      std::fprintf(stderr, "hawk_load_client: --events %s: %s\n", options_.events_path.c_str(),
                   std::strerror(errno));
      return false;
    }
  }

  start_ns_ = uv_hrtime();
  for (uv_signal_t* signal : {&sigterm_, &sigint_, &sigusr1_}) {
    uv_signal_init(loop_, signal);
    signal->data = this;
  }
  uv_signal_start(&sigterm_, &OnSignal, SIGTERM);
  uv_signal_start(&sigint_, &OnSignal, SIGINT);
  uv_signal_start(&sigusr1_, &OnSignal, SIGUSR1);
  uv_timer_init(loop_, &duration_timer_);
  duration_timer_.data = this;
  if (options_.duration_ms > 0)
    uv_timer_start(&duration_timer_, &OnDuration, options_.duration_ms, 0);
  uv_timer_init(loop_, &sweep_timer_);
  sweep_timer_.data = this;
  uint64_t sweep_ms =
      std::max<uint64_t>(1, std::min<uint64_t>(50, options_.request_timeout_ms / 4));
  uv_timer_start(&sweep_timer_, &OnSweep, sweep_ms, sweep_ms);

  int load_slots = options_.connections + options_.one_shot_connections;
  for (int i = 0; i < load_slots; ++i) {
    slots_.push_back(std::make_unique<Slot>(this, i, false, i >= options_.connections));
  }
  if (options_.prober_interval_ms > 0) {
    slots_.push_back(std::make_unique<Slot>(this, load_slots, true, false));
  }
  for (auto& slot : slots_) slot->Start();
  return true;
}

void LoadClient::Event(const char* kind, int conn, bool prober, int status,
                       const std::string& error, int64_t pid) {
  if (events_ == nullptr) return;
  std::fprintf(events_,
               "{\"t_ms\":%.3f,\"kind\":\"%s\",\"conn\":%d,\"prober\":%s,\"status\":%d,"
               "\"error\":%s,\"pid\":%lld}\n",
               MonotonicMs(), kind, conn, prober ? "true" : "false", status,
               hawk::testing::JsonQuote(error).c_str(), static_cast<long long>(pid));
  std::fflush(events_);  // a driver may read it while the load runs
}

void LoadClient::OnSignal(uv_signal_t* handle, int signum) {
  auto* client = static_cast<LoadClient*>(handle->data);
  if (signum == SIGUSR1) {
    client->PrintSummary();
  } else {
    client->Stop();
  }
}

void LoadClient::OnDuration(uv_timer_t* timer) { static_cast<LoadClient*>(timer->data)->Stop(); }

void LoadClient::OnSweep(uv_timer_t* timer) {
  auto* client = static_cast<LoadClient*>(timer->data);
  uint64_t now = uv_hrtime();
  for (auto& slot : client->slots_) slot->CheckTimeout(now);
}

void LoadClient::PrintSummary() {
  double duration_ms = static_cast<double>(uv_hrtime() - start_ns_) / 1e6;
  std::string line = FormatSummary(stats_, duration_ms) + "\n";
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
}

void LoadClient::Stop() {
  if (stopping_) return;
  stopping_ = true;
  // Requests cut by the stop are abandoned, not failed: the stop is ours, not the server's.
  for (auto& slot : slots_) slot->Stop();
  PrintSummary();
  for (uv_signal_t* signal : {&sigterm_, &sigint_, &sigusr1_}) {
    uv_close(reinterpret_cast<uv_handle_t*>(signal), nullptr);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&duration_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sweep_timer_), nullptr);
  if (events_ != nullptr) {
    std::fclose(events_);
    events_ = nullptr;
  }
}

}  // namespace

int RunLoadClient(const LoadClientOptions& options) {
  std::signal(SIGPIPE, SIG_IGN);  // a server that goes away is a write error, not a signal
  uv_loop_t loop;
  if (int rc = uv_loop_init(&loop); rc != 0) {
    std::fprintf(stderr, "hawk_load_client: uv_loop_init: %s\n", uv_strerror(rc));
    return 1;
  }
  int exit_code = 0;
  {
    LoadClient client(&loop, options);
    if (client.Start()) {
      uv_run(&loop, UV_RUN_DEFAULT);
    } else {
      exit_code = 1;
    }
  }
  if (int rc = uv_loop_close(&loop); rc != 0) {
    std::fprintf(stderr, "hawk_load_client: uv_loop_close: %s\n", uv_strerror(rc));
    return 1;
  }
  return exit_code;
}

}  // namespace hawk::e2e

#include "agent/http/connection.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/base/log.h"

namespace hawk::http {
namespace internal {
namespace {

// Parsed requests a connection holds before it stops reading: bounds what a pipelining client
// makes us buffer while a handler is slow.
constexpr size_t kMaxPendingRequests = 32;
constexpr absl::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

absl::string_view ErrorCodeName(ParseErrorKind kind) {
  return kind == ParseErrorKind::kMalformed ? "INVALID_ARGUMENT" : "RESOURCE_EXHAUSTED";
}

}  // namespace

Exchange::~Exchange() {
  if (answered) return;
  if (std::shared_ptr<Connection> owner = connection.lock()) owner->Abandoned(id);
}

Connection::Connection(Server* server, uv_loop_t* loop,
                       std::shared_ptr<const Server::Shared> shared,
                       std::unique_ptr<uv::ByteStream> stream, tls::ServerStream* tls, Slot slot)
    : server_(server),
      loop_(loop),
      shared_(std::move(shared)),
      options_(shared_->options),
      stream_(std::move(stream)),
      tls_(tls),
      timer_(loop),
      parser_(options_.parser,
              options_.admit ? HeadCheck([this](const Request& head) { return CheckHead(head); })
                             : HeadCheck()),
      slot_(slot),
      accepted_ms_(uv_now(loop)) {}

void Connection::Start() {
  last_activity_ms_ = Now();
  if (tls_ != nullptr && slot_ == Slot::kUnproven) {
    tls_->SetHandshakeCallback([this] { OnHandshake(); });
  }
  StartReading();
  UpdateTimer();
}

bool Connection::CheckHead(const Request& head) {
  Admission admission = options_.admit(head);
  if (admission.refusal.has_value()) {
    refusal_ = std::move(admission.refusal);
    return false;
  }
  if (admission.proves_peer && !Prove()) {
    refusal_ = JsonError(
        503, "UNAVAILABLE",
        absl::StrCat("too many connections (", options_.max_connections, "); retry later"));
    return false;
  }
  return true;
}

void Connection::OnHandshake() {
  if (tls_ == nullptr || !tls_->peer_verified() || phase_ == Phase::kClosing) return;
  Prove();  // if the proven budget is full, the connection stays unproven
  UpdateTimer();
}

bool Connection::Prove() {
  if (slot_ == Slot::kProven) return true;
  return server_ != nullptr && server_->Prove(this);
}

absl::Duration Connection::HeaderTimeout() const {
  return slot_ == Slot::kUnproven ? options_.unproven_header_timeout : options_.header_timeout;
}

absl::Duration Connection::IdleTimeout() const {
  return slot_ == Slot::kUnproven ? options_.unproven_idle_timeout : options_.idle_timeout;
}

void Connection::Refuse() {
  StartReading();
  if (phase_ == Phase::kClosing) return;
  SendFinal(JsonError(
      503, "UNAVAILABLE",
      absl::StrCat("too many connections (", options_.max_connections, "); retry later")));
}

void Connection::Abort() {
  if (phase_ == Phase::kClosing) return;
  phase_ = Phase::kClosing;
  timer_.Stop();
  stream_->Close([self = shared_from_this()] { self->OnStreamClosed(); });
}

void Connection::RunClosedCallbacks() {
  if (closed_callbacks_ran_) return;
  closed_callbacks_ran_ = true;
  std::vector<std::function<void()>> callbacks = std::move(closed_callbacks_);
  closed_callbacks_.clear();
  for (auto& callback : callbacks) callback();
}

void Connection::Send(uint64_t id, Response response) {
  if (!Owes(id) || phase_ != Phase::kHandling) return;
  if (!Write(Serialize(response, framing_))) return;
  Complete();
}

bool Connection::Alive(uint64_t id) const {
  return Owes(id) && (phase_ == Phase::kHandling || phase_ == Phase::kStreaming);
}

bool Connection::StartStream(uint64_t id, int status, absl::string_view content_type) {
  if (!Owes(id) || phase_ != Phase::kHandling) return false;
  phase_ = Phase::kStreaming;
  if (framing_.http10) framing_.keep_alive = false;  // no chunked encoding: the close ends it
  if (!Write(SerializeStreamHead(status, content_type, framing_))) return false;
  if (framing_.head) {
    // HEAD: the head is the whole response. Nothing will be streamed and nothing ends the
    // stream later, so the exchange completes now (a keep-alive client's next request waits
    // for it).
    Complete();
    return false;
  }
  return CheckStreamBuffer();
}

bool Connection::WriteChunk(uint64_t id, absl::string_view data) {
  if (!Owes(id) || phase_ != Phase::kStreaming) return false;
  if (framing_.head || data.empty()) return true;
  if (!Write(framing_.http10 ? std::string(data) : EncodeChunk(data))) return false;
  return CheckStreamBuffer();
}

void Connection::EndStream(uint64_t id) {
  if (!Owes(id) || phase_ != Phase::kStreaming) return;
  if (!framing_.http10 && !framing_.head && !Write(std::string(kLastChunk))) return;
  Complete();
}

size_t Connection::BufferedBytes() const {
  return phase_ == Phase::kClosing ? 0 : stream_->write_queue_bytes();
}

void Connection::AddClosedCallback(std::function<void()> callback) {
  if (closed_callbacks_ran_) {
    callback();
    return;
  }
  closed_callbacks_.push_back(std::move(callback));
}

void Connection::Abandoned(uint64_t id) {
  if (!Alive(id)) return;
  abandoned_ = true;
  UpdateTimer();  // answered from the timer, not from the destructor's caller
}

uint64_t Connection::Now() const { return uv_now(loop_); }

// True while request `id` is the current one and the connection is open.
bool Connection::Owes(uint64_t id) const { return phase_ != Phase::kClosing && id == current_id_; }

void Connection::StartReading() {
  if (phase_ == Phase::kClosing) return;
  reading_ = true;
  absl::Status status = stream_->StartReading([this](absl::string_view bytes) { OnData(bytes); },
                                              [this](absl::Status end) { OnEnd(std::move(end)); });
  if (!status.ok()) {
    base::LogDebug("http: ", status.message());
    Abort();
  }
}

// Queues bytes; false (and the connection aborted) if the stream refused them.
bool Connection::Write(std::string bytes) {
  if (bytes.empty()) return true;
  ++unflushed_writes_;
  absl::Status status =
      stream_->Write(std::move(bytes), [this](absl::Status done) { OnWritten(std::move(done)); });
  if (!status.ok()) {
    --unflushed_writes_;
    base::LogDebug("http: ", status.message());
    Abort();
    return false;
  }
  return true;
}

bool Connection::CheckStreamBuffer() {
  size_t unsent = stream_->write_queue_bytes();
  if (unsent <= options_.max_stream_buffer_bytes) return true;
  base::LogWarn("http: dropping a client that does not read its stream of ", current_.method, " ",
                current_.path, ": ", unsent, " bytes unsent, limit ",
                options_.max_stream_buffer_bytes);
  Abort();
  return false;
}

void Connection::OnData(absl::string_view bytes) {
  if (phase_ == Phase::kClosing || phase_ == Phase::kFinishing || parse_failed_) return;
  uint64_t now = Now();
  last_activity_ms_ = now;
  received_bytes_ = true;
  std::vector<Request> parsed;
  absl::Status status = parser_.Feed(bytes, &parsed);
  for (Request& request : parsed) pending_.push_back(std::move(request));
  if (!status.ok() && parser_.error_kind() == ParseErrorKind::kRefused && refusal_.has_value()) {
    // Answered after the requests before it, like a parse error; its body is never read.
    parse_failed_ = true;
    error_response_ = std::move(*refusal_);
    refusal_.reset();
  } else if (!status.ok()) {
    base::LogDebug("http: ", status.message());
    parse_failed_ = true;
    error_response_ = JsonError(HttpStatusFor(parser_.error_kind()),
                                ErrorCodeName(parser_.error_kind()), status.message());
  } else if (parser_.message_in_progress() && !parser_.headers_complete() &&
             header_clock_message_ != parser_.messages_started()) {
    header_clock_message_ = parser_.messages_started();
    header_start_ms_ = now;
  }
  if (pending_.size() >= kMaxPendingRequests && reading_) {
    stream_->StopReading();
    reading_ = false;
  }
  Advance();
}

void Connection::OnEnd(absl::Status status) {
  if (phase_ == Phase::kClosing) return;
  reading_ = false;
  if (!status.ok()) {
    base::LogDebug("http: ", status.message());
    Abort();
    return;
  }
  peer_ended_ = true;
  switch (phase_) {
    case Phase::kReading:
      Advance();
      return;
    case Phase::kHandling:
    case Phase::kStreaming:
      // HTTP clients do not half-close: one that closed its side has gone away, and the
      // handler hears of it (OnClosed) instead of answering into the void later.
      Abort();
      return;
    case Phase::kFinishing:
      MaybeFinish();
      return;
    case Phase::kDraining:  // answered already; the client may still read it
    case Phase::kClosing:
      return;
  }
}

void Connection::OnWritten(absl::Status status) {
  --unflushed_writes_;
  if (phase_ == Phase::kClosing) return;
  if (!status.ok()) {
    base::LogDebug("http: ", status.message());
    Abort();
    return;
  }
  if (phase_ == Phase::kDraining &&
      stream_->write_queue_bytes() <= options_.max_stream_buffer_bytes) {
    phase_ = Phase::kReading;
    last_activity_ms_ = Now();
    Advance();
  } else if (phase_ == Phase::kFinishing) {
    // The linger bound counts from when the last response is out, not from when it was
    // queued: a client may take a while to read a big one.
    if (unflushed_writes_ == 0) finishing_since_ms_ = Now();
    MaybeFinish();
    UpdateTimer();
  }
}

// Moves on while no request is in hand: dispatches the next request, or sends the final
// error, or closes after a client that is done. The loop (not recursion) lets a handler that
// answers at once be followed by the next pipelined request.
void Connection::Advance() {
  if (advancing_) return;
  advancing_ = true;
  while (phase_ == Phase::kReading) {
    if (!pending_.empty()) {
      Dispatch();
    } else if (parse_failed_) {
      SendFinal(std::move(error_response_));
    } else if (peer_ended_) {
      if (parser_.message_in_progress()) {
        Abort();  // the client stopped in the middle of a request
      } else {
        StartFinishing();
      }
    } else {
      break;
    }
  }
  advancing_ = false;
  defer_advance_ = false;  // whatever a synchronous answer deferred, the loop above did
  if (phase_ == Phase::kReading) {
    MaybeSendContinue();
    if (!reading_ && !peer_ended_ && pending_.size() < kMaxPendingRequests) StartReading();
  }
  UpdateTimer();
}

void Connection::Dispatch() {
  current_ = std::move(pending_.front());
  pending_.pop_front();
  current_id_ = ++last_id_;
  framing_ = Framing();
  framing_.keep_alive = current_.keep_alive;
  framing_.http10 = current_.http_major == 1 && current_.http_minor == 0;
  framing_.head = current_.method == "HEAD";
  phase_ = Phase::kHandling;
  abandoned_ = false;
  auto exchange = std::make_shared<Exchange>(weak_from_this(), current_id_);
  exchange_ = exchange;
  // A copy: the handler may destroy the Server, and with it the Server's reference.
  std::shared_ptr<const Server::Shared> shared = shared_;
  shared->handler(current_, Responder(std::move(exchange)));
  // The handler had the request for the call only (server.h): its body goes now, not when the
  // next request on this connection replaces it. A controller that keeps its connection open
  // after a whole-state PUT would otherwise pin the body's megabytes for as long as it stays idle,
  // past the moment state::ChangeReader gives a large document's memory back.
  std::string().swap(current_.body);
}

// The current request's response is all queued.
void Connection::Complete() {
  closed_callbacks_.clear();
  if (std::shared_ptr<Exchange> exchange = exchange_.lock()) exchange->answered = true;
  exchange_.reset();
  abandoned_ = false;
  last_activity_ms_ = Now();
  if (!framing_.keep_alive) {
    StartFinishing();
    return;
  }
  if (stream_->write_queue_bytes() > options_.max_stream_buffer_bytes) {
    phase_ = Phase::kDraining;  // OnWritten() resumes
  } else {
    phase_ = Phase::kReading;
    defer_advance_ = true;  // the next request is dispatched from the loop (or by Advance())
  }
  UpdateTimer();
}

void Connection::MaybeSendContinue() {
  if (!pending_.empty() || parse_failed_ || !parser_.expects_continue() ||
      continue_sent_message_ == parser_.messages_started()) {
    return;
  }
  continue_sent_message_ = parser_.messages_started();
  Write(std::string(kContinue));
}

// Sends a response after which the connection closes, whatever the request said.
void Connection::SendFinal(Response response) {
  framing_ = Framing();
  framing_.keep_alive = false;
  if (!Write(Serialize(response, framing_))) return;
  StartFinishing();
}

// Lingering close: shut the write side down once the queued bytes are out and keep reading
// (discarding) until the client closes, so that its unread bytes cannot make the kernel reset
// the connection and destroy the response in flight. linger_timeout bounds the wait.
void Connection::StartFinishing() {
  phase_ = Phase::kFinishing;
  finishing_since_ms_ = Now();
  last_activity_ms_ = finishing_since_ms_;
  pending_.clear();
  if (!peer_ended_) {
    stream_->Shutdown();
    if (!reading_) StartReading();
  }
  MaybeFinish();
  UpdateTimer();
}

void Connection::MaybeFinish() {
  if (phase_ == Phase::kFinishing && peer_ended_ && unflushed_writes_ == 0) Abort();
}

void Connection::OnStreamClosed() {
  stream_.reset();  // allowed from the stream's own close callback (see uv/byte_stream.h)
  if (server_ != nullptr) {
    Server* server = server_;
    server_ = nullptr;
    server->Forget(this);
  }
  RunClosedCallbacks();  // last: a callback may destroy the Server
}

}  // namespace internal

}  // namespace hawk::http

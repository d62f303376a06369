#pragma once

// One accepted HTTP connection's state machine, internal to agent/http (users see Server and
// Responder in server.h): reading and parsing requests, handing them to the handler one at a
// time, the exchange a request's Responders share, writing responses and streams, the timeouts,
// and the lingering close. server.cc accepts connections, counts them against the limits and
// closes them all with the Server.

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/http/request.h"
#include "agent/http/request_parser.h"
#include "agent/http/response.h"
#include "agent/http/server.h"
#include "agent/tls/server_stream.h"
#include "agent/uv/byte_stream.h"
#include "agent/uv/timer.h"

namespace hawk::http {

// What a Server shares with its connections: the handler may destroy the Server while a
// connection still runs, so each connection holds these, not the Server's copy.
struct Server::Shared {
  ServerOptions options;
  Handler handler;
};

namespace internal {

// What the Responders of one request share: which connection and request they answer.
// Destroyed when the last Responder copy is: an unanswered request is then answered with a 500.
struct Exchange {
  Exchange(std::weak_ptr<Connection> owner, uint64_t request_id)
      : connection(std::move(owner)), id(request_id) {}
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  std::weak_ptr<Connection> connection;
  uint64_t id;
  bool answered = false;  // the response is complete: every call is a no-op
};

// One accepted connection, over a plain socket or TLS (a uv::ByteStream either way). Ownership:
// the Server's map holds it while it is open, its stream's close callback while it closes;
// Responders hold it weakly. It never dies on its own callbacks' stacks: Abort() closes the
// stream and the close callback drops the last owner. Stream and timer callbacks capture `this`:
// both handles are members and call nothing once destroyed. Threading: the loop thread only.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Which of the Server's budgets the connection counts against (server.h).
  enum class Slot {
    kProven,    // served under max_connections
    kUnproven,  // served under max_unproven_connections, with the shorter timeouts
    kRefused,   // answered 503 and closed
    kNone,      // evicted: closing, counted nowhere
  };

  // `tls`: the stream itself when it is TLS, else null.
  Connection(Server* server, uv_loop_t* loop, std::shared_ptr<const Server::Shared> shared,
             std::unique_ptr<uv::ByteStream> stream, tls::ServerStream* tls, Slot slot);

  // Serves requests.
  void Start();
  // Answers 503 (over max_connections) and closes.
  void Refuse();
  // Closes now, dropping unsent bytes. Idempotent.
  void Abort();
  // The Server lets go of this connection: it is not told when the stream closes.
  void Detach() { server_ = nullptr; }
  Slot slot() const { return slot_; }
  void set_slot(Slot slot) { slot_ = slot; }
  // The client has sent at least one byte of HTTP.
  bool received_bytes() const { return received_bytes_; }
  // uv_now() when the connection was accepted.
  uint64_t accepted_ms() const { return accepted_ms_; }
  // No request is in hand: closing the connection breaks no exchange.
  bool Evictable() const {
    return phase_ != Phase::kHandling && phase_ != Phase::kStreaming && phase_ != Phase::kClosing;
  }
  // Runs the OnClosed callbacks of the request in hand, once.
  void RunClosedCallbacks();

  // Responder operations on request `id` (see Responder in server.h).
  void Send(uint64_t id, Response response);
  bool Alive(uint64_t id) const;
  bool StartStream(uint64_t id, int status, absl::string_view content_type);
  bool WriteChunk(uint64_t id, absl::string_view data);
  void EndStream(uint64_t id);
  size_t BufferedBytes() const;
  void AddClosedCallback(std::function<void()> callback);
  // Every Responder of request `id` is gone.
  void Abandoned(uint64_t id);

 private:
  enum class Phase {
    kReading,    // no request in hand: waiting for one, or for the rest of one
    kHandling,   // the handler owes the response to the current request
    kStreaming,  // the current request's streamed response is open
    kDraining,   // a response is queued past max_stream_buffer_bytes: the next request waits
    kFinishing,  // the last response is queued: close once the client has it (or lingered)
    kClosing,    // the stream is closing or closed; nothing more happens
  };

  uint64_t Now() const;
  bool Owes(uint64_t id) const;
  void StartReading();
  bool Write(std::string bytes);
  bool CheckStreamBuffer();
  void OnData(absl::string_view bytes);
  void OnEnd(absl::Status status);
  void OnWritten(absl::Status status);
  void Advance();
  void Dispatch();
  void Complete();
  void MaybeSendContinue();
  void SendFinal(Response response);
  void StartFinishing();
  void MaybeFinish();
  void UpdateTimer();
  void OnTimer();
  void OnStreamClosed();
  // The head check (RequestParser): admission, and the move to the proven budget.
  bool CheckHead(const Request& head);
  // The TLS handshake is done: a verified client certificate proves the peer.
  void OnHandshake();
  bool Prove();
  absl::Duration HeaderTimeout() const;
  absl::Duration IdleTimeout() const;

  Server* server_;  // null once the Server has let go of this connection
  uv_loop_t* loop_;
  std::shared_ptr<const Server::Shared> shared_;
  const ServerOptions& options_;  // in *shared_
  std::unique_ptr<uv::ByteStream> stream_;
  tls::ServerStream* tls_;  // stream_ when it is TLS, else null
  uv::Timer timer_;
  RequestParser parser_;
  Slot slot_;
  const uint64_t accepted_ms_;
  bool received_bytes_ = false;
  Phase phase_ = Phase::kReading;

  // Input.
  std::deque<Request> pending_;  // parsed, not yet handed to the handler
  bool reading_ = false;         // the stream is reading (paused while pending_ is full)
  bool peer_ended_ = false;      // the client closed its side (EOF)
  bool parse_failed_ = false;    // error_response_ goes out after the pending requests
  Response error_response_;
  absl::optional<Response> refusal_;    // the head check's answer to a request it refused
  uint64_t header_clock_message_ = 0;   // the message whose header clock runs
  uint64_t continue_sent_message_ = 0;  // the message that got its 100 Continue

  // The request in hand (kHandling, kStreaming) or last handled.
  Request current_;
  uint64_t current_id_ = 0;
  uint64_t last_id_ = 0;
  Framing framing_;
  std::weak_ptr<Exchange> exchange_;
  std::vector<std::function<void()>> closed_callbacks_;
  bool closed_callbacks_ran_ = false;
  bool abandoned_ = false;  // every Responder of the current request is gone

  // Output and time (uv_now() milliseconds).
  size_t unflushed_writes_ = 0;  // writes whose callback has not run yet
  uint64_t last_activity_ms_ = 0;
  uint64_t header_start_ms_ = 0;
  uint64_t finishing_since_ms_ = 0;
  uint64_t armed_deadline_ = 0;
  bool advancing_ = false;      // inside Advance(): it loops rather than recurses
  bool defer_advance_ = false;  // a Responder call freed the connection: Advance() from the loop
};

}  // namespace internal
}  // namespace hawk::http

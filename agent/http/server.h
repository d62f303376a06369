#pragma once

// An HTTP/1.1 server on one unix or TCP listener (agent/uv), for hawk's API.
//
// Ownership and threading: the Server owns its Listener and its connections; everything runs on
// the loop thread. A connection's state is shared with the Responders of its requests through
// weak pointers, so a Responder may outlive its connection (and the Server): it then does
// nothing. Destroying the Server (or Close()) closes the listener and every connection at once;
// the loop then runs dry.
//
// Per connection, requests are answered strictly in order: request N+1 (pipelined or not) is
// not handed to the handler before N's response is complete. Keep-alive follows the request
// (HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`). A client
// that closes its side (EOF) while its request is being answered is taken as gone, as Node's
// HTTP server does: the connection closes and the Responder's OnClosed callbacks run.
//
// Protection, each closing the connection: malformed requests get 400, limits 414/431/413
// (ParserOptions), a request whose headers take longer than header_timeout 408, a connection
// with no request for idle_timeout nothing. Above max_connections, new connections get 503. A
// response the client does not read is buffered up to max_stream_buffer_bytes: past that a
// stream is dropped, and the next request waits until the client has read the last response.
// Nothing ever blocks the loop.
//
// Admission (ServerOptions::admit) is decided on each request's head: once its headers are
// complete the check runs, before any byte of the body is read and before `100 Continue` is
// sent. A refusal goes out at once and the connection closes without reading the body, so a
// client without credentials cannot make the server hold a body, nor wait for one.
//
// Proven and unproven connections (ServerOptions::start_unproven): on a listener whose clients
// must prove who they are, a new connection is unproven until a request carries a credential
// the admission check accepts (Admission::proves_peer) or its TLS handshake verified a client
// certificate. Unproven connections have a budget of their own (max_unproven_connections) and
// shorter timeouts (unproven_header_timeout, unproven_idle_timeout); proven ones have
// max_connections and the normal timeouts, so clients without credentials can never take a
// proven client's slot. When the unproven budget is full, a new connection takes the slot of the
// oldest unproven connection that has no request in hand and has had its chance: it has sent
// bytes without proving anything, or nothing for unproven_grace. A connection accepted in the
// same burst as the new one has not been read yet (libuv accepts everything pending before it
// reads), so it is never the one closed: a controller connecting among slowloris clients that
// reconnect as fast as they are dropped is read, and served. When no connection has had its
// chance, the new one is served over the budget, up to four times it; beyond that it is refused
// (503), as when every unproven connection has a request in hand.
//
// TLS (ServerOptions::tls) is a transport under all of this (agent/tls): each accepted socket is
// wrapped in a tls::ServerStream before its connection sees a byte, so every endpoint, limit and
// timeout above behaves the same over TLS as over plain TCP. A connection in its handshake counts
// against max_connections like any other; one whose handshake fails (no valid client
// certificate, not TLS 1.3, garbage) is closed at once, and one whose handshake does not complete
// within handshake_timeout is closed then. A unix socket may carry TLS too: nothing in it needs
// TCP, though the socket file's mode already restricts who connects.

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/base/address.h"
#include "agent/http/admission.h"
#include "agent/http/request_parser.h"
#include "agent/http/response.h"
#include "agent/uv/listener.h"

namespace hawk::tls {
class ServerContext;
}  // namespace hawk::tls

namespace hawk::http {

namespace internal {
class Connection;
struct Exchange;
}  // namespace internal

struct ServerOptions {
  ParserOptions parser;
  // From a request's first byte until its headers are complete.
  absl::Duration header_timeout = absl::Seconds(10);
  // Without a request on a keep-alive connection; also between the bytes of a request body and
  // while a client does not read a response.
  absl::Duration idle_timeout = absl::Seconds(60);
  // Once the last response of a closing connection is sent: how long to wait for the client to
  // close its side, so that unread request bytes do not turn the close into a reset that would
  // destroy the response.
  absl::Duration linger_timeout = absl::Seconds(2);
  size_t max_connections = 256;
  // Unsent bytes a connection may hold before a stream is dropped.
  size_t max_stream_buffer_bytes = 1024 * 1024;
  // Null: plain HTTP. Else every connection is TLS 1.3 with these certificates
  // (tls::ServerContext::Create), client certificates included when it has a client CA.
  std::shared_ptr<tls::ServerContext> tls;
  // With `tls`: from accept until the TLS handshake is complete.
  absl::Duration handshake_timeout = absl::Seconds(10);

  // Decides on each request from its head (see "Admission" above). Null: every request is
  // admitted.
  AdmissionCheck admit;
  // New connections start unproven (see "Proven and unproven connections" above). false: every
  // connection is served under max_connections and the timeouts above from the start (a unix
  // socket whose mode picks its clients, a listener where nobody could prove anything).
  bool start_unproven = false;
  size_t max_unproven_connections = 64;
  // For unproven connections, in place of header_timeout and idle_timeout.
  absl::Duration unproven_header_timeout = absl::Seconds(3);
  absl::Duration unproven_idle_timeout = absl::Seconds(5);
  // How long a silent unproven connection is kept from eviction (see above).
  absl::Duration unproven_grace = absl::Milliseconds(100);
};

// Answers one request, now or later: a cheap handle to copy, move or store. Calls on a Responder
// whose connection is gone (or whose request is already answered) do nothing. Responder calls
// never call back into the handler or OnClosed callbacks synchronously.
//
// If every copy of a Responder is dropped without answering, the client gets a 500 (and an
// unfinished stream is ended): a handler bug must not hang the connection.
class Responder {
 public:
  Responder() = default;  // answers nothing; alive() is false

  // Sends the whole response. For a HEAD request only the headers go out.
  void Send(Response response);
  // True while the connection is open and this request still awaits (the rest of) its answer.
  bool alive() const;

  // Streaming, for long-lived responses of unknown length (ndjson watch): the head now, then
  // chunks as they come, then EndStream(). Returns false if the connection is gone or the
  // request was already answered, and for a HEAD request once its head is sent (the response is
  // complete: stream nothing).
  bool StartStream(int status, absl::string_view content_type);
  // False once the connection is gone, including when this chunk took its unsent bytes past
  // ServerOptions::max_stream_buffer_bytes: a reader that slow is dropped.
  bool WriteChunk(absl::string_view data);
  void EndStream();
  // Bytes written but not yet taken by the client's socket; 0 once the connection is gone.
  size_t buffered_bytes() const;

  // `callback` runs once, from the loop, if the connection goes away before this request's
  // response is complete (at once if it is already gone; from Server::Close() if that closes
  // it). It never runs once the response is complete.
  void OnClosed(std::function<void()> callback);

 private:
  friend class internal::Connection;
  explicit Responder(std::shared_ptr<internal::Exchange> exchange);

  std::shared_ptr<internal::Exchange> exchange_;
};

// `request` is valid during the call only: copy what an asynchronous answer needs.
using Handler = std::function<void(const Request& request, Responder responder)>;

class Server {
 public:
  static absl::StatusOr<std::unique_ptr<Server>> Create(uv_loop_t* loop,
                                                        const base::Address& address,
                                                        ServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Idempotent. Stops accepting, closes every connection without waiting for pending answers
  // and runs their OnClosed callbacks before returning; after that the server never calls user
  // code again. May be called from a handler.
  void Close();

  // The address as bound (a TCP port 0 is replaced by the port the kernel chose).
  const base::Address& address() const { return address_; }
  // Open connections, those being refused with a 503 included.
  size_t connection_count() const { return connections_.size(); }
  // Connections served as unproven now, and unproven connections closed so far to make room for
  // new ones.
  size_t unproven_count() const { return unproven_.size(); }
  uint64_t evicted_count() const { return evicted_; }

 private:
  friend class internal::Connection;
  struct Shared;  // options and handler, shared with the connections

  Server(uv_loop_t* loop, std::shared_ptr<const Shared> shared);
  void OnConnection(std::unique_ptr<uv::Stream> socket);
  // The connection's stream is closed: forget it.
  void Forget(internal::Connection* connection);
  // Moves an unproven connection into the proven budget; false when that budget is full.
  bool Prove(internal::Connection* connection);
  // Closes the unproven connection that has waited longest to prove itself (see above); false
  // when every one has a request in hand.
  bool EvictUnproven();

  uv_loop_t* loop_;
  std::shared_ptr<const Shared> shared_;
  std::unique_ptr<uv::Listener> listener_;
  base::Address address_;
  absl::flat_hash_map<internal::Connection*, std::shared_ptr<internal::Connection>> connections_;
  size_t proven_ = 0;    // connections served as proven
  size_t refusing_ = 0;  // connections being refused (503)
  // Connections served as unproven, oldest first (a few dozen: scanned, not indexed).
  std::vector<internal::Connection*> unproven_;
  uint64_t evicted_ = 0;
  uint64_t eviction_log_after_ms_ = 0;  // one warning a minute at most
  uint64_t evictions_unlogged_ = 0;
  bool closed_ = false;
};

}  // namespace hawk::http

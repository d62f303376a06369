#pragma once

// ServerStream: the server side of one TLS connection, as a uv::ByteStream of plaintext over an
// accepted uv::Stream of ciphertext. OpenSSL works on two memory BIOs; this class moves bytes
// between them and the socket: ciphertext in → SSL_do_handshake / SSL_read → plaintext to the
// data callback; plaintext Write() → SSL_write → ciphertext out through the socket's Write(),
// one socket write per Write(), whose callback is that Write()'s.
//
// Ownership and threading: owns the socket, the SSL and a timer; loop thread only. The lifetime
// rules are uv::Stream's (agent/uv/handle.h): Close(on_closed) and destroy it from on_closed.
//
// The handshake starts at construction: the stream reads the socket on its own until the
// handshake is done, and after that only while its owner reads (StopReading() is backpressure on
// the socket, as with a plain stream). Writes made before the handshake is done are held and go
// out after it; write_queue_bytes() counts them, plus the ciphertext the socket has not sent.
// A handshake that fails (no valid client certificate, not TLS 1.3, not TLS at all) or is not
// done within `handshake_timeout` of construction ends the stream with the error: the owner
// never sees a byte from such a client. Failures are logged rate-limited (ServerContext).
//
// Shutdown() sends close_notify, then half-closes the socket; reading goes on (a lingering close).
// A peer's close_notify, or its EOF after the handshake, is an orderly end.

#include <uv.h>

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/tls/server_context.h"
#include "agent/uv/byte_stream.h"
#include "agent/uv/stream.h"
#include "agent/uv/timer.h"

namespace hawk::tls {

class ServerStream final : public uv::ByteStream {
 public:
  ServerStream(uv_loop_t* loop, std::unique_ptr<uv::Stream> socket,
               std::shared_ptr<ServerContext> context, absl::Duration handshake_timeout);
  ~ServerStream() override;
  ServerStream(const ServerStream&) = delete;
  ServerStream& operator=(const ServerStream&) = delete;

  absl::Status StartReading(DataCallback on_data, EndCallback on_end) override;
  void StopReading() override;
  absl::Status Write(std::string bytes, WriteCallback on_written) override;
  void Shutdown() override;
  void Close(std::function<void()> on_closed) override;
  bool closing() const override { return state_ == State::kClosing || state_ == State::kClosed; }
  size_t write_queue_bytes() const override;

  bool handshake_done() const { return handshake_done_; }
  // The handshake is done and verified a client certificate (the context has a client CA, and
  // the certificate passed it and the client allow-list).
  bool peer_verified() const;
  // Runs once, from the loop, when the handshake completes (not when it fails). Cleared by
  // Close().
  void SetHandshakeCallback(std::function<void()> callback) { on_handshake_ = std::move(callback); }

 private:
  enum class State {
    kHandshake,  // reading the socket on our own; writes are held; the deadline timer runs
    kOpen,       // plaintext flows both ways
    kFailed,     // the handshake or the session failed (error_): only Close() is left to do
    kClosing,    // Close() called: callbacks cleared, waiting for the socket's close callback
    kClosed,     // the socket is closed
  };
  struct HeldWrite {
    std::string bytes;
    WriteCallback on_written;
  };

  void OnSocketData(absl::string_view ciphertext);
  void OnSocketEnd(absl::Status status);
  void OnTimer();
  // Runs OpenSSL on what the socket brought: the handshake, then plaintext to the owner.
  void Advance();
  void Handshake();
  void DeliverPlaintext();
  absl::Status WriteNow(std::string bytes, WriteCallback on_written);
  void SendCloseNotify();
  // Hands the ciphertext OpenSSL produced to the socket, as one write whose callback is
  // `on_written` (or, without one, a failure ends the stream).
  absl::Status Flush(WriteCallback on_written);
  void FailHandshake(absl::Status status, bool log);
  void Fail(absl::Status status);
  void End(absl::Status status);
  // Reads the socket while the handshake needs it or the owner reads.
  void UpdateSocketReading();
  // Runs Advance() (or delivers the end) from the loop: StartReading() must not call back.
  void Defer();
  std::string PeerName() const;

  uv_loop_t* loop_;
  std::unique_ptr<uv::Stream> socket_;
  std::shared_ptr<ServerContext> context_;
  SslPtr ssl_;
  BIO* network_in_ = nullptr;   // ciphertext from the socket, owned by ssl_
  BIO* network_out_ = nullptr;  // ciphertext for the socket, owned by ssl_
  uv::Timer timer_;             // kHandshake: the deadline; afterwards: Defer()
  absl::Duration handshake_timeout_;
  State state_ = State::kHandshake;
  absl::Status error_;  // kFailed: why

  DataCallback on_data_;
  EndCallback on_end_;
  std::function<void()> on_handshake_;
  bool reading_ = false;         // the owner reads
  bool socket_reading_ = false;  // the socket reads
  bool socket_ended_ = false;    // the socket reported its end (EOF): no more ciphertext
  bool peer_ended_ = false;      // close_notify or EOF seen; the EndCallback is due or ran
  bool end_delivered_ = false;   // the EndCallback ran
  bool got_bytes_ = false;       // the client sent anything at all
  bool handshake_done_ = false;
  bool shutdown_requested_ = false;
  std::deque<HeldWrite> held_;
  size_t held_bytes_ = 0;
};

}  // namespace hawk::tls

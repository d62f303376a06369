#include "agent/tls/server_stream.h"

#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/base/log.h"

namespace hawk::tls {
namespace {

// One TLS record's worth of plaintext at most per SSL_read.
constexpr size_t kPlaintextChunk = 16 * 1024;

// Why an SSL call failed, for a log line: the client's certificate problem if verification
// failed, else OpenSSL's reason ("unsupported protocol", "wrong version number", "peer did not
// return a certificate"). Clears OpenSSL's error queue, which is per thread and shared.
std::string FailureReason(SSL* ssl, int ssl_error) {
  long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    ERR_clear_error();
    if (std::string names = RejectedClientNames(ssl); !names.empty()) {
      return absl::StrCat("client certificate rejected: none of its names (", names,
                          ") is one --tls-client-allow lets in");
    }
    return absl::StrCat("client certificate rejected: ", X509_verify_cert_error_string(verify));
  }
  unsigned long error = ERR_peek_last_error();
  const char* reason = error != 0 ? ERR_reason_error_string(error) : nullptr;
  ERR_clear_error();
  if (reason != nullptr) return reason;
  if (ssl_error == SSL_ERROR_SYSCALL) return "unexpected end of the stream";
  return absl::StrCat("SSL error ", ssl_error);
}

}  // namespace

ServerStream::ServerStream(uv_loop_t* loop, std::unique_ptr<uv::Stream> socket,
                           std::shared_ptr<ServerContext> context, absl::Duration handshake_timeout)
    : loop_(loop),
      socket_(std::move(socket)),
      context_(std::move(context)),
      timer_(loop),
      handshake_timeout_(handshake_timeout) {
  ssl_ = context_->NewSession(uv_now(loop_));
  if (ssl_ != nullptr) {
    network_in_ = BIO_new(BIO_s_mem());
    network_out_ = BIO_new(BIO_s_mem());
    if (network_in_ != nullptr && network_out_ != nullptr) {
      SSL_set_bio(ssl_.get(), network_in_, network_out_);  // ssl_ owns both now
    } else {
      BIO_free(network_in_);
      BIO_free(network_out_);
      network_in_ = network_out_ = nullptr;
      ssl_.reset();
    }
  }
  if (ssl_ == nullptr) {
    ERR_clear_error();
    Fail(absl::ResourceExhaustedError("TLS: cannot allocate a session"));
    return;
  }
  timer_.Start(handshake_timeout_, [this] { OnTimer(); });
  UpdateSocketReading();
}

ServerStream::~ServerStream() = default;

absl::Status ServerStream::StartReading(DataCallback on_data, EndCallback on_end) {
  if (closing()) return absl::FailedPreconditionError("read on a closing stream");
  on_data_ = std::move(on_data);
  on_end_ = std::move(on_end);
  reading_ = true;
  if (state_ == State::kFailed) {
    Defer();  // the end is due
  } else if (state_ == State::kOpen) {
    // Plaintext or an end may be waiting since the owner stopped reading.
    if (SSL_has_pending(ssl_.get()) || BIO_ctrl_pending(network_in_) > 0 || peer_ended_ ||
        socket_ended_) {
      Defer();
    }
    UpdateSocketReading();
  }
  return absl::OkStatus();
}

void ServerStream::StopReading() {
  reading_ = false;
  UpdateSocketReading();
}

absl::Status ServerStream::Write(std::string bytes, WriteCallback on_written) {
  if (closing()) return absl::FailedPreconditionError("write on a closing stream");
  if (state_ == State::kFailed) return error_;
  if (shutdown_requested_) return absl::FailedPreconditionError("write after shutdown");
  if (state_ == State::kHandshake) {
    held_bytes_ += bytes.size();
    held_.push_back(HeldWrite{std::move(bytes), std::move(on_written)});
    return absl::OkStatus();
  }
  return WriteNow(std::move(bytes), std::move(on_written));
}

void ServerStream::Shutdown() {
  if (closing() || state_ == State::kFailed || shutdown_requested_) return;
  shutdown_requested_ = true;
  if (state_ == State::kOpen) SendCloseNotify();  // else once the held writes are out
}

void ServerStream::Close(std::function<void()> on_closed) {
  if (closing()) return;
  state_ = State::kClosing;
  on_data_ = nullptr;
  on_end_ = nullptr;
  on_handshake_ = nullptr;
  held_.clear();
  held_bytes_ = 0;
  timer_.Stop();
  socket_reading_ = false;
  socket_->Close([this, on_closed = std::move(on_closed)] {
    state_ = State::kClosed;
    ssl_.reset();  // the SSL and its buffers go with the connection, not with this object
    network_in_ = network_out_ = nullptr;
    if (on_closed) on_closed();  // may destroy `this`
  });
}

size_t ServerStream::write_queue_bytes() const {
  if (closing()) return 0;
  size_t unsent = socket_->write_queue_bytes() + held_bytes_;
  if (network_out_ != nullptr) unsent += BIO_ctrl_pending(network_out_);
  return unsent;
}

void ServerStream::OnSocketData(absl::string_view ciphertext) {
  if (closing() || state_ == State::kFailed) return;
  got_bytes_ = true;
  // A memory BIO takes everything; its size is bounded because the socket is read only while the
  // handshake runs or the owner reads, and SSL_read drains it before the next socket read.
  int written = BIO_write(network_in_, ciphertext.data(), static_cast<int>(ciphertext.size()));
  if (written != static_cast<int>(ciphertext.size())) {
    ERR_clear_error();
    Fail(absl::ResourceExhaustedError("TLS: cannot buffer the received bytes"));
    return;
  }
  Advance();
}

void ServerStream::OnSocketEnd(absl::Status status) {
  socket_reading_ = false;
  socket_ended_ = true;
  if (closing() || state_ == State::kFailed) return;
  if (state_ == State::kHandshake) {
    // A client that connects and closes without a byte (a TCP probe, a port scan) is not worth
    // a log line; one that goes away mid-handshake is.
    FailHandshake(status.ok()
                      ? absl::UnavailableError("TLS handshake: the client closed the connection")
                      : absl::UnavailableError(absl::StrCat("TLS handshake: ", status.message())),
                  got_bytes_);
    return;
  }
  if (!status.ok()) {
    Fail(std::move(status));
    return;
  }
  DeliverPlaintext();  // what is left, then the end
}

void ServerStream::OnTimer() {
  switch (state_) {
    case State::kHandshake:
      FailHandshake(
          absl::DeadlineExceededError(absl::StrCat("TLS handshake not complete within ",
                                                   absl::FormatDuration(handshake_timeout_))),
          true);
      return;
    case State::kOpen:
      DeliverPlaintext();
      return;
    case State::kFailed: {
      End(error_);
      std::deque<HeldWrite> held = std::move(held_);
      held_.clear();
      held_bytes_ = 0;
      for (HeldWrite& write : held) {
        if (closing()) return;  // a callback closed us: no more callbacks
        if (write.on_written) write.on_written(error_);
      }
      return;
    }
    case State::kClosing:
    case State::kClosed:
      return;
  }
}

void ServerStream::Advance() {
  if (state_ == State::kHandshake) Handshake();
  if (state_ == State::kOpen) DeliverPlaintext();
}

void ServerStream::Handshake() {
  ERR_clear_error();
  int rc = SSL_do_handshake(ssl_.get());
  if (rc != 1) {
    int error = SSL_get_error(ssl_.get(), rc);
    // Our flight (ServerHello … Finished), or the alert that tells the client why it failed.
    absl::Status flushed = Flush(nullptr);
    if (error == SSL_ERROR_WANT_READ) {
      if (!flushed.ok()) Fail(std::move(flushed));
      return;
    }
    FailHandshake(absl::UnavailableError(
                      absl::StrCat("TLS handshake failed: ", FailureReason(ssl_.get(), error))),
                  true);
    return;
  }
  state_ = State::kOpen;
  handshake_done_ = true;
  timer_.Stop();
  absl::Status flushed = Flush(nullptr);
  if (!flushed.ok()) {
    Fail(std::move(flushed));
    return;
  }
  while (!held_.empty()) {
    HeldWrite write = std::move(held_.front());
    held_.pop_front();
    held_bytes_ -= write.bytes.size();
    WriteCallback on_written = write.on_written;  // kept for the failure report below
    absl::Status status = WriteNow(std::move(write.bytes), std::move(write.on_written));
    if (!status.ok()) {
      // Its owner was told the write was accepted: report the failure through its callback.
      held_.push_front(HeldWrite{std::string(), std::move(on_written)});
      Fail(std::move(status));
      return;
    }
  }
  if (shutdown_requested_) SendCloseNotify();
  if (on_handshake_ && state_ == State::kOpen) {
    std::function<void()> callback = std::move(on_handshake_);
    on_handshake_ = nullptr;
    callback();  // may Close() this stream: Advance() then does nothing more
  }
}

bool ServerStream::peer_verified() const {
  return handshake_done_ && ssl_ != nullptr && SSL_get0_peer_certificate(ssl_.get()) != nullptr &&
         SSL_get_verify_result(ssl_.get()) == X509_V_OK &&
         (SSL_get_verify_mode(ssl_.get()) & SSL_VERIFY_PEER) != 0;
}

void ServerStream::DeliverPlaintext() {
  while (state_ == State::kOpen && reading_ && !peer_ended_) {
    char buffer[kPlaintextChunk];
    size_t read = 0;
    ERR_clear_error();
    if (SSL_read_ex(ssl_.get(), buffer, sizeof(buffer), &read) == 1) {
      DataCallback callback = on_data_;  // it may Close() us, which clears on_data_
      callback(absl::string_view(buffer, read));
      continue;
    }
    int error = SSL_get_error(ssl_.get(), 0);
    if (error == SSL_ERROR_WANT_READ) {
      // Without close_notify (or in the middle of a record), an EOF after the handshake still
      // ends the stream in order: HTTP messages carry their own length, so a truncated one is
      // caught by the parser above.
      if (socket_ended_) peer_ended_ = true;
      break;
    }
    if (error == SSL_ERROR_ZERO_RETURN) {  // close_notify
      peer_ended_ = true;
      break;
    }
    Fail(absl::UnavailableError(
        absl::StrCat("TLS read failed: ", FailureReason(ssl_.get(), error))));
    return;
  }
  if (state_ != State::kOpen) return;
  // Whatever reading produced (a KeyUpdate reply, an alert) goes out.
  absl::Status flushed = Flush(nullptr);
  if (!flushed.ok()) {
    Fail(std::move(flushed));
    return;
  }
  if (peer_ended_ && reading_) End(absl::OkStatus());
  UpdateSocketReading();
}

absl::Status ServerStream::WriteNow(std::string bytes, WriteCallback on_written) {
  if (!bytes.empty()) {
    ERR_clear_error();
    size_t written = 0;
    // A memory BIO never pushes back, so SSL_write takes everything at once.
    if (SSL_write_ex(ssl_.get(), bytes.data(), bytes.size(), &written) != 1) {
      int error = SSL_get_error(ssl_.get(), 0);
      return absl::UnavailableError(
          absl::StrCat("TLS write failed: ", FailureReason(ssl_.get(), error)));
    }
  }
  return Flush(std::move(on_written));
}

void ServerStream::SendCloseNotify() {
  ERR_clear_error();
  SSL_shutdown(ssl_.get());  // queues close_notify; the peer's comes through SSL_read
  ERR_clear_error();
  absl::Status flushed = Flush(nullptr);
  if (!flushed.ok()) {
    Fail(std::move(flushed));
    return;
  }
  socket_->Shutdown();
}

absl::Status ServerStream::Flush(WriteCallback on_written) {
  size_t pending = BIO_ctrl_pending(network_out_);
  if (pending == 0 && !on_written) return absl::OkStatus();
  std::string ciphertext(pending, '\0');
  if (pending > 0 && BIO_read(network_out_, ciphertext.data(), static_cast<int>(pending)) !=
                         static_cast<int>(pending)) {
    ERR_clear_error();
    return absl::InternalError("TLS: cannot read the encrypted bytes");
  }
  if (!on_written) {
    // The socket calls back only while it (and so this object) is open.
    on_written = [this](absl::Status status) {
      if (!status.ok()) Fail(std::move(status));
    };
  }
  return socket_->Write(std::move(ciphertext), std::move(on_written));
}

void ServerStream::FailHandshake(absl::Status status, bool log) {
  uint64_t suppressed = 0;
  if (log && context_->AllowFailureLog(uv_now(loop_), &suppressed)) {
    base::LogWarn("tls: client ", PeerName(), ": ", status.message(),
                  suppressed > 0 ? absl::StrCat(" (and ", suppressed,
                                                " more failed handshakes since the last report)")
                                 : "");
  }
  Fail(std::move(status));
}

void ServerStream::Fail(absl::Status status) {
  if (closing() || state_ == State::kFailed) return;
  state_ = State::kFailed;
  error_ = std::move(status);
  UpdateSocketReading();
  Defer();  // the owner hears of it from the loop, never from inside one of its own calls
}

void ServerStream::End(absl::Status status) {
  if (end_delivered_ || !on_end_) return;  // without a reader, StartReading() delivers it
  end_delivered_ = true;
  EndCallback callback = std::move(on_end_);
  on_end_ = nullptr;
  callback(std::move(status));
}

void ServerStream::UpdateSocketReading() {
  bool want = !closing() && !socket_ended_ &&
              (state_ == State::kHandshake || (state_ == State::kOpen && reading_ && !peer_ended_));
  if (want == socket_reading_) return;
  if (!want) {
    socket_->StopReading();
    socket_reading_ = false;
    return;
  }
  absl::Status status =
      socket_->StartReading([this](absl::string_view bytes) { OnSocketData(bytes); },
                            [this](absl::Status end) { OnSocketEnd(std::move(end)); });
  if (!status.ok()) {
    Fail(std::move(status));
    return;
  }
  socket_reading_ = true;
}

void ServerStream::Defer() {
  timer_.Start(absl::ZeroDuration(), [this] { OnTimer(); });
}

std::string ServerStream::PeerName() const {
  uv_stream_t* raw = socket_->raw();
  if (raw == nullptr || uv_handle_get_type(reinterpret_cast<uv_handle_t*>(raw)) != UV_TCP) {
    return "on the unix socket";
  }
  sockaddr_storage address{};
  int length = sizeof(address);
  if (uv_tcp_getpeername(reinterpret_cast<uv_tcp_t*>(raw), reinterpret_cast<sockaddr*>(&address),
                         &length) != 0) {
    return "(address unknown)";
  }
  char host[64] = {};
  if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    uv_ip6_name(in6, host, sizeof(host));
    return absl::StrCat("[", host, "]:", ntohs(in6->sin6_port));
  }
  const auto* in4 = reinterpret_cast<const sockaddr_in*>(&address);
  uv_ip4_name(in4, host, sizeof(host));
  return absl::StrCat(host, ":", ntohs(in4->sin_port));
}

}  // namespace hawk::tls

#include "agent/http/server.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/base/log.h"
#include "agent/http/connection.h"
#include "agent/tls/server_stream.h"
#include "agent/uv/byte_stream.h"
#include "agent/uv/stream.h"

namespace hawk::http {

Server::Server(uv_loop_t* loop, std::shared_ptr<const Shared> shared)
    : loop_(loop), shared_(std::move(shared)) {}

Server::~Server() { Close(); }

absl::StatusOr<std::unique_ptr<Server>> Server::Create(uv_loop_t* loop,
                                                       const base::Address& address,
                                                       ServerOptions options, Handler handler) {
  if (!handler) {
    return absl::InvalidArgumentError(
        absl::StrCat("http server on ", address.ToString(), ": no handler"));
  }
  auto shared = std::make_shared<Shared>(Shared{std::move(options), std::move(handler)});
  std::unique_ptr<Server> server(new Server(loop, std::move(shared)));
  Server* raw = server.get();
  absl::StatusOr<std::unique_ptr<uv::Listener>> listener = uv::Listener::Create(
      loop, address,
      [raw](std::unique_ptr<uv::Stream> stream) { raw->OnConnection(std::move(stream)); });
  if (!listener.ok()) return listener.status();
  server->listener_ = *std::move(listener);
  server->address_ = server->listener_->address();
  return server;
}

void Server::Close() {
  if (closed_) return;
  closed_ = true;
  listener_.reset();
  auto connections = std::move(connections_);
  connections_.clear();
  proven_ = 0;
  refusing_ = 0;
  unproven_.clear();
  for (auto& [raw, connection] : connections) {
    connection->Detach();
    connection->Abort();
  }
  for (auto& [raw, connection] : connections) connection->RunClosedCallbacks();
}

void Server::OnConnection(std::unique_ptr<uv::Stream> socket) {
  if (closed_) return;  // the socket closes itself on destruction
  const ServerOptions& options = shared_->options;
  std::unique_ptr<uv::ByteStream> stream;
  tls::ServerStream* tls = nullptr;
  if (options.tls != nullptr) {
    // The handshake starts now, before the connection is served or refused: a 503 goes out
    // over TLS too, and a stalled handshake holds a connection slot until handshake_timeout.
    auto tls_stream = std::make_unique<tls::ServerStream>(loop_, std::move(socket), options.tls,
                                                          options.handshake_timeout);
    tls = tls_stream.get();
    stream = std::move(tls_stream);
  } else {
    stream = std::move(socket);
  }
  using Slot = internal::Connection::Slot;
  Slot slot = Slot::kRefused;
  if (!options.start_unproven) {
    if (proven_ < options.max_connections) slot = Slot::kProven;
  } else if (unproven_.size() < options.max_unproven_connections || EvictUnproven() ||
             unproven_.size() < 4 * options.max_unproven_connections) {
    slot = Slot::kUnproven;
  }
  auto connection =
      std::make_shared<internal::Connection>(this, loop_, shared_, std::move(stream), tls, slot);
  connections_.emplace(connection.get(), connection);
  if (slot == Slot::kProven) {
    ++proven_;
    connection->Start();
    return;
  }
  if (slot == Slot::kUnproven) {
    unproven_.push_back(connection.get());
    connection->Start();
    return;
  }
  if (refusing_ == 0) {
    base::LogWarn(
        "http: ", address_.ToString(), ": ",
        options.start_unproven ? options.max_unproven_connections : options.max_connections,
        options.start_unproven ? " unauthenticated" : "",
        " connections open; refusing new ones with 503");
  }
  ++refusing_;
  // Refusals linger too (see StartFinishing); a flood of them is cut short instead.
  if (refusing_ > std::max<size_t>(options.max_connections, 16)) {
    connection->Abort();
  } else {
    connection->Refuse();
  }
}

bool Server::EvictUnproven() {
  // The oldest that has sent bytes without proving itself; else the oldest that has sent
  // nothing for the grace period. Never one with a request in hand.
  uint64_t now = uv_now(loop_);
  uint64_t grace = static_cast<uint64_t>(
      std::max<int64_t>(absl::ToInt64Milliseconds(shared_->options.unproven_grace), 0));
  auto victim = unproven_.end();
  for (auto it = unproven_.begin(); it != unproven_.end(); ++it) {
    if (!(*it)->Evictable()) continue;
    if ((*it)->received_bytes()) {
      victim = it;
      break;
    }
    if (victim == unproven_.end() && now >= (*it)->accepted_ms() + grace) victim = it;
  }
  if (victim == unproven_.end()) return false;
  internal::Connection* connection = *victim;
  unproven_.erase(victim);
  connection->set_slot(internal::Connection::Slot::kNone);
  connection->Abort();
  ++evicted_;
  if (now >= eviction_log_after_ms_) {
    base::LogWarn("http: ", address_.ToString(), ": ", shared_->options.max_unproven_connections,
                  " unauthenticated connections open; closing the oldest for each new one",
                  evictions_unlogged_ > 0
                      ? absl::StrCat(" (", evictions_unlogged_, " more since the last report)")
                      : "");
    eviction_log_after_ms_ = now + 60 * 1000;
    evictions_unlogged_ = 0;
  } else {
    ++evictions_unlogged_;
  }
  return true;
}

bool Server::Prove(internal::Connection* connection) {
  using Slot = internal::Connection::Slot;
  if (connection->slot() == Slot::kProven) return true;
  if (connection->slot() != Slot::kUnproven) return false;
  if (proven_ >= shared_->options.max_connections) return false;
  unproven_.erase(std::find(unproven_.begin(), unproven_.end(), connection));
  ++proven_;
  connection->set_slot(Slot::kProven);
  return true;
}

void Server::Forget(internal::Connection* connection) {
  auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  using Slot = internal::Connection::Slot;
  switch (connection->slot()) {
    case Slot::kProven:
      --proven_;
      break;
    case Slot::kUnproven:
      unproven_.erase(std::find(unproven_.begin(), unproven_.end(), connection));
      break;
    case Slot::kRefused:
      --refusing_;
      break;
    case Slot::kNone:
      break;
  }
  connections_.erase(it);
}

}  // namespace hawk::http

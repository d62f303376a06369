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
  active_ = 0;
  refusing_ = 0;
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
  if (options.tls != nullptr) {
    // The handshake starts now, before the connection is served or refused: a 503 goes out
    // over TLS too, and a stalled handshake holds a connection slot until handshake_timeout.
    stream = std::make_unique<tls::ServerStream>(loop_, std::move(socket), options.tls,
                                                 options.handshake_timeout);
  } else {
    stream = std::move(socket);
  }
  bool refuse = active_ >= options.max_connections;
  auto connection =
      std::make_shared<internal::Connection>(this, loop_, shared_, std::move(stream), refuse);
  connections_.emplace(connection.get(), connection);
  if (!refuse) {
    ++active_;
    connection->Start();
    return;
  }
  if (refusing_ == 0) {
    base::LogWarn("http: ", address_.ToString(), ": ", options.max_connections,
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

void Server::Forget(internal::Connection* connection) {
  auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  if (connection->refused()) {
    --refusing_;
  } else {
    --active_;
  }
  connections_.erase(it);
}

}  // namespace hawk::http

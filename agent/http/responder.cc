// Responder (server.h): a handler's handle on the request it answers, which outlives neither
// the answer nor the connection: every call is a no-op once the connection is gone.

#include <memory>
#include <utility>

#include "agent/http/connection.h"
#include "agent/http/server.h"

namespace hawk::http {

namespace {

// The connection that request `exchange` still awaits an answer on, or null.
std::shared_ptr<internal::Connection> Owner(const std::shared_ptr<internal::Exchange>& exchange) {
  if (exchange == nullptr || exchange->answered) return nullptr;
  return exchange->connection.lock();
}

}  // namespace

Responder::Responder(std::shared_ptr<internal::Exchange> exchange)
    : exchange_(std::move(exchange)) {}

void Responder::Send(Response response) {
  if (auto owner = Owner(exchange_)) owner->Send(exchange_->id, std::move(response));
}

bool Responder::alive() const {
  auto owner = Owner(exchange_);
  return owner != nullptr && owner->Alive(exchange_->id);
}

bool Responder::StartStream(int status, absl::string_view content_type) {
  auto owner = Owner(exchange_);
  return owner != nullptr && owner->StartStream(exchange_->id, status, content_type);
}

bool Responder::WriteChunk(absl::string_view data) {
  auto owner = Owner(exchange_);
  return owner != nullptr && owner->WriteChunk(exchange_->id, data);
}

void Responder::EndStream() {
  if (auto owner = Owner(exchange_)) owner->EndStream(exchange_->id);
}

size_t Responder::buffered_bytes() const {
  auto owner = Owner(exchange_);
  return owner != nullptr && owner->Alive(exchange_->id) ? owner->BufferedBytes() : 0;
}

void Responder::OnClosed(std::function<void()> callback) {
  if (exchange_ == nullptr || exchange_->answered || !callback) return;
  if (auto owner = exchange_->connection.lock()) {
    owner->AddClosedCallback(std::move(callback));
  } else {
    callback();
  }
}

}  // namespace hawk::http

#include "tests/support/in_flight_request.h"

#include <utility>

namespace hawk::testing {

InFlightRequest::InFlightRequest(const std::string& address, const std::string& target,
                                 std::chrono::milliseconds timeout) {
  std::string error;
  connection_ = HttpConnection::Connect(address, std::chrono::seconds(5), &error);
  if (!connection_) {
    result_.error = error;
    sent_ = done_ = true;
    return;
  }
  thread_ = std::thread(&InFlightRequest::Run, this, target, timeout);
}

InFlightRequest::InFlightRequest(int port, const std::string& target,
                                 std::chrono::milliseconds timeout)
    : InFlightRequest("tcp:127.0.0.1:" + std::to_string(port), target, timeout) {}

InFlightRequest::~InFlightRequest() {
  if (thread_.joinable()) {
    if (!done()) connection_->Shutdown();
    thread_.join();
  }
}

void InFlightRequest::Run(std::string target, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  HttpRequest request;
  request.target = std::move(target);
  request.headers.emplace_back("Connection", "close");
  HttpResult result;
  bool sent = connection_->SendRequest(request, timeout, &result.error);
  {
    std::lock_guard<std::mutex> lock(mu_);
    sent_ = true;
  }
  cv_.notify_all();
  if (sent) {
    result = connection_->ReadResponse(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    result_ = std::move(result);
    done_ = true;
  }
  cv_.notify_all();
}

bool InFlightRequest::WaitSent(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return sent_; });
}

bool InFlightRequest::Wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return done_; });
}

bool InFlightRequest::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

HttpResult InFlightRequest::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return result_;
}

}  // namespace hawk::testing

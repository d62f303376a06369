#pragma once

// InFlightRequest: one HTTP GET running on its own thread, e.g. a slow request through an
// HAProxy frontend that must survive a reload. The connection is made in the constructor
// (so it exists before the test goes on); the request is sent and its response read on the
// thread.
//
// Threading: the public methods may be called from any thread. The destructor never blocks
// for long: it shuts the socket down (waking the thread) and joins it.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tests/support/http_client.h"

namespace hawk::testing {

class InFlightRequest {
 public:
  // `address` as for HttpConnection (`tcp:127.0.0.1:PORT`, `unix:PATH`). The request carries
  // `Connection: close`. `timeout` bounds the whole exchange.
  InFlightRequest(const std::string& address, const std::string& target,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Shorthand for tcp:127.0.0.1:<port>.
  InFlightRequest(int port, const std::string& target,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~InFlightRequest();
  InFlightRequest(const InFlightRequest&) = delete;
  InFlightRequest& operator=(const InFlightRequest&) = delete;

  // Waits until the request has been written to the socket (or failed).
  bool WaitSent(std::chrono::milliseconds timeout);
  // Waits for the response (or failure); true if it is done.
  bool Wait(std::chrono::milliseconds timeout);
  bool done() const;
  // The outcome; meaningful once done().
  HttpResult result() const;

 private:
  void Run(std::string target, std::chrono::milliseconds timeout);

  std::unique_ptr<HttpConnection> connection_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool sent_ = false;  // guarded by mu_
  bool done_ = false;  // guarded by mu_
  HttpResult result_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace hawk::testing

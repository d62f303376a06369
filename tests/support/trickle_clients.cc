#include "tests/support/trickle_clients.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "tests/support/socket_util.h"

namespace hawk::testing {
namespace {

// A request that never ends: the header value grows by one byte per tick.
constexpr char kRequestStart[] = "GET /v1/workers HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";

}  // namespace

Tricklers::Tricklers(std::string address, int count, std::chrono::milliseconds interval)
    : address_(std::move(address)), count_(count), interval_(interval) {
  thread_ = std::thread([this] { Run(); });
}

Tricklers::~Tricklers() { Stop(); }

void Tricklers::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Tricklers::Run() {
  struct Client {
    UniqueFd fd;
    Clock::time_point next;
  };
  std::vector<Client> clients(static_cast<size_t>(count_));
  Clock::time_point start = Clock::now();
  for (int i = 0; i < count_; ++i) {
    clients[static_cast<size_t>(i)].next = start + interval_ * i / count_;
  }
  std::vector<pollfd> fds;
  std::vector<size_t> owners;
  while (!stop_) {
    Clock::time_point now = Clock::now();
    Clock::time_point wake = now + interval_;
    for (Client& client : clients) {
      if (client.next <= now) {
        client.next = now + interval_;
        std::string error;
        if (!client.fd.valid()) {
          client.fd = ConnectAddress(address_, now + std::chrono::milliseconds(200), &error);
          if (!client.fd.valid()) {
            ++failed_;
          } else {
            ++open_;
            ::send(client.fd.get(), kRequestStart, sizeof(kRequestStart) - 1, MSG_NOSIGNAL);
          }
        } else {
          ::send(client.fd.get(), "a", 1, MSG_NOSIGNAL);
        }
      }
      if (client.next < wake) wake = client.next;
    }
    fds.clear();
    owners.clear();
    for (size_t i = 0; i < clients.size(); ++i) {
      if (!clients[i].fd.valid()) continue;
      fds.push_back(pollfd{clients[i].fd.get(), POLLIN, 0});
      owners.push_back(i);
    }
    int wait_ms = std::min(RemainingMs(wake), 50);
    if (fds.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
      continue;
    }
    if (::poll(fds.data(), fds.size(), wait_ms) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      char buffer[4096];
      ssize_t n = ::recv(fds[i].fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n > 0) continue;  // an answer (a 408 or 503): the close follows
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      clients[owners[i]].fd.Reset();
      --open_;
      ++closed_;
    }
  }
  for (Client& client : clients) {
    if (client.fd.valid()) --open_;
    client.fd.Reset();
  }
}

}  // namespace hawk::testing

#include "tests/support/unix_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <list>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace hawk::testing {
namespace {

// Reading stops while this much is waiting to be written to the other side.
constexpr size_t kMaxBuffered = 256 * 1024;

// One end of a relayed connection.
struct Side {
  UniqueFd fd;
  std::string out;          // bytes read from the other side, to be written here
  bool read_eof = false;    // this side sent EOF (or reset)
  bool write_shut = false;  // we shut down writing to this side (after flushing `out`)
  bool gone = false;        // this side closed completely or failed: the pair must close
};

struct Pair {
  Side client;
  Side target;
  size_t index = 0;  // its transcript
};

bool WouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

// Reads everything available from `from` into `to.out`; counts the bytes and LFs read in
// `bytes`/`lines` when given.
void ReadInto(Side& from, Side& to, std::atomic<uint64_t>* bytes, std::atomic<uint64_t>* lines,
              const std::function<void(absl::string_view)>& record) {
  char buffer[16384];
  while (true) {
    ssize_t n = ::recv(from.fd.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      to.out.append(buffer, static_cast<size_t>(n));
      if (record) record(absl::string_view(buffer, static_cast<size_t>(n)));
      if (bytes != nullptr) {
        *bytes += static_cast<uint64_t>(n);
        *lines += static_cast<uint64_t>(std::count(buffer, buffer + n, '\n'));
      }
      if (to.out.size() >= kMaxBuffered) return;
      continue;
    }
    if (n == 0) {
      from.read_eof = true;
      return;
    }
    if (!WouldBlock(errno)) {
      from.read_eof = true;
      from.gone = true;
    }
    return;
  }
}

// Writes as much of `side.out` as the socket takes.
void Flush(Side& side) {
  while (!side.out.empty() && !side.gone) {
    ssize_t n =
        ::send(side.fd.get(), side.out.data(), side.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      side.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && WouldBlock(errno)) return;
    side.gone = true;  // EPIPE, ECONNRESET: the peer is gone
  }
}

short Interest(const Side& self, const Side& other) {
  short events = 0;
  if (!self.read_eof && other.out.size() < kMaxBuffered) events |= POLLIN;
  if (!self.out.empty()) events |= POLLOUT;
  return events;
}

void Handle(Side& self, Side& other, short revents, std::atomic<uint64_t>* bytes = nullptr,
            std::atomic<uint64_t>* lines = nullptr,
            const std::function<void(absl::string_view)>& record = nullptr) {
  if (revents & POLLERR) {
    self.gone = true;
    return;
  }
  if ((revents & (POLLIN | POLLHUP)) && !self.read_eof) ReadInto(self, other, bytes, lines, record);
  if (revents & POLLOUT) Flush(self);
  // On a unix stream socket POLLHUP means the peer closed both ways: nothing more can be
  // delivered to it, so once its last bytes are read the pair is finished.
  if ((revents & POLLHUP) && self.read_eof) self.gone = true;
}

// Passes a half-close on once everything before it was written; true when the pair is done.
bool Advance(Pair& pair) {
  for (auto [from, to] :
       {std::pair{&pair.client, &pair.target}, std::pair{&pair.target, &pair.client}}) {
    if (from->read_eof && to->out.empty() && !to->write_shut && !to->gone) {
      ::shutdown(to->fd.get(), SHUT_WR);
      to->write_shut = true;
    }
  }
  if (pair.client.gone || pair.target.gone) {
    Flush(pair.client);  // best effort: what the survivor still has to receive
    Flush(pair.target);
    return true;
  }
  return pair.client.write_shut && pair.target.write_shut;
}

}  // namespace

UnixRelay::UnixRelay(std::string listen_path, std::string target_path)
    : listen_path_(std::move(listen_path)), target_path_(std::move(target_path)) {}

UnixRelay::~UnixRelay() { Stop(); }

Result UnixRelay::Start() {
  if (thread_.joinable()) return Result::Error("UnixRelay: already started");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (listen_path_.size() >= sizeof(addr.sun_path)) {
    return Result::Error("UnixRelay: path too long: " + listen_path_);
  }
  std::memcpy(addr.sun_path, listen_path_.data(), listen_path_.size());
  ::unlink(listen_path_.c_str());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Result::Error(ErrnoMessage("UnixRelay: socket", errno));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Result::Error(ErrnoMessage("UnixRelay: bind " + listen_path_, errno));
  }
  if (::listen(fd.get(), 64) != 0) {
    return Result::Error(ErrnoMessage("UnixRelay: listen " + listen_path_, errno));
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    return Result::Error(ErrnoMessage("UnixRelay: pipe", errno));
  }
  wake_read_.Reset(pipe_fds[0]);
  wake_write_.Reset(pipe_fds[1]);
  listen_fd_ = std::move(fd);
  thread_ = std::thread(&UnixRelay::Loop, this);
  return Result::Ok();
}

void UnixRelay::Stop() {
  if (thread_.joinable()) {
    char byte = 'x';
    while (::write(wake_write_.get(), &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  if (listen_fd_.valid()) {
    listen_fd_.Reset();
    ::unlink(listen_path_.c_str());
  }
  wake_read_.Reset();
  wake_write_.Reset();
}

std::vector<std::string> UnixRelay::Transcripts() const {
  std::lock_guard<std::mutex> lock(transcripts_mutex_);
  return transcripts_;
}

void UnixRelay::Loop() {
  std::list<Pair> pairs;
  std::vector<pollfd> fds;
  std::vector<Pair*> owners;  // per fds entry after the first two: its pair
  while (true) {
    fds.clear();
    owners.clear();
    fds.push_back({wake_read_.get(), POLLIN, 0});
    fds.push_back({listen_fd_.get(), POLLIN, 0});
    for (Pair& pair : pairs) {
      fds.push_back({pair.client.fd.get(), Interest(pair.client, pair.target), 0});
      fds.push_back({pair.target.fd.get(), Interest(pair.target, pair.client), 0});
      owners.push_back(&pair);
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;  // Stop()

    for (size_t i = 0; i < owners.size(); ++i) {
      Pair& pair = *owners[i];
      Handle(pair.client, pair.target, fds[2 + 2 * i].revents, &bytes_to_target_, &lines_to_target_,
             [this, &pair](absl::string_view bytes) {
               std::lock_guard<std::mutex> lock(transcripts_mutex_);
               transcripts_[pair.index].append(bytes.data(), bytes.size());
             });
      Handle(pair.target, pair.client, fds[3 + 2 * i].revents);
      Flush(pair.client);
      Flush(pair.target);
    }
    for (auto it = pairs.begin(); it != pairs.end();) {
      if (Advance(*it)) {
        it = pairs.erase(it);  // closes both sockets
        --current_;
      } else {
        ++it;
      }
    }

    if (fds[1].revents & POLLIN) {
      while (true) {
        int client = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (client < 0) break;
        ++total_;
        int now = ++current_;
        int seen = max_.load();
        while (now > seen && !max_.compare_exchange_weak(seen, now)) {
        }
        std::string error;
        // Deadline "now": a full target backlog counts as a refusal instead of stalling.
        UniqueFd target = ConnectUnix(target_path_, Clock::now(), &error);
        if (!target.valid()) {
          ++failed_;
          ::close(client);
          --current_;
          continue;
        }
        Pair& pair = pairs.emplace_back();
        {
          std::lock_guard<std::mutex> lock(transcripts_mutex_);
          pair.index = transcripts_.size();
          transcripts_.emplace_back();
        }
        pair.client.fd.Reset(client);
        pair.target.fd = std::move(target);
      }
    }
  }
  current_ -= static_cast<int>(pairs.size());
  pairs.clear();
}

}  // namespace hawk::testing

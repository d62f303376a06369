// hawk_test_backend: a small real HTTP/1.1 backend for HAProxy in tests.
//
//   hawk_test_backend --listen 127.0.0.1:PORT --name NAME [--quiet]
//
// Every request gets 200 with body "NAME\n" and header `X-Backend: NAME`, except:
//   /slow?ms=N, /slow/N   the response is delayed by N ms (other connections are not delayed)
//   /status/CODE          answers CODE (body "NAME\n" unless CODE forbids a body)
// Keep-alive and pipelining are supported (responses in order). Prints
// "listening on 127.0.0.1:PORT" once ready (PORT 0 picks a free port and prints it), then
// "request METHOD TARGET" for each request unless --quiet, and exits 0 on SIGTERM or SIGINT.
//
// One thread, one poll() loop; requests parsed with llhttp. Independent of hawk's agent/ code.

#include <arpa/inet.h>
#include <fcntl.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int) {
  int saved = errno;
  char byte = 's';
  ssize_t ignored = ::write(g_signal_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved;
}

const char* Reason(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 409:
      return "Conflict";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Status";
  }
}

// A non-negative number made of digits only, at most `max`; -1 otherwise.
long ParseNumber(const std::string& text, long max) {
  if (text.empty() || text.size() > 9) return -1;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value <= max ? value : -1;
}

struct Response {
  Clock::time_point due;
  std::string bytes;
  bool close_after = false;
};

struct Connection {
  int fd = -1;
  llhttp_t parser;
  std::string url;
  std::deque<Response> queue;  // in request order; each waits for its due time
  std::string out;             // due bytes not yet written
  bool read_eof = false;
  bool no_more_requests = false;  // a request asked to close: ignore what follows
  bool close_after_flush = false;
  bool dead = false;
};

struct Server {
  std::string name;
  bool quiet = false;
};

Server g_server;
llhttp_settings_t g_settings;

std::string BuildResponse(int code, bool head, bool close) {
  std::string body = g_server.name + "\n";
  bool no_body = code == 204 || code == 304 || (code >= 100 && code < 200);
  std::string text = "HTTP/1.1 " + std::to_string(code) + " " + Reason(code) + "\r\n";
  text += "X-Backend: " + g_server.name + "\r\n";
  if (!no_body) {
    text += "Content-Type: text/plain\r\n";
    text += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  if (close) text += "Connection: close\r\n";
  text += "\r\n";
  if (!no_body && !head) text += body;
  return text;
}

int OnMessageBegin(llhttp_t* p) {
  static_cast<Connection*>(p->data)->url.clear();
  return 0;
}

int OnUrl(llhttp_t* p, const char* at, size_t length) {
  static_cast<Connection*>(p->data)->url.append(at, length);
  return 0;
}

int OnMessageComplete(llhttp_t* p) {
  Connection* conn = static_cast<Connection*>(p->data);
  const std::string& url = conn->url;
  std::string method = llhttp_method_name(static_cast<llhttp_method_t>(llhttp_get_method(p)));
  bool keep_alive = llhttp_should_keep_alive(p) != 0;
  if (!g_server.quiet) {
    std::printf("request %s %s\n", method.c_str(), url.c_str());
    std::fflush(stdout);
  }
  std::string path = url.substr(0, url.find('?'));
  std::string query = url.find('?') == std::string::npos ? "" : url.substr(url.find('?') + 1);
  long delay_ms = 0;
  int code = 200;
  if (path == "/slow") {
    for (size_t start = 0; start <= query.size();) {
      size_t end = std::min(query.find('&', start), query.size());
      std::string param = query.substr(start, end - start);
      if (param.rfind("ms=", 0) == 0)
        delay_ms = std::max(0L, ParseNumber(param.substr(3), 3600000));
      start = end + 1;
    }
  } else if (path.rfind("/slow/", 0) == 0) {
    delay_ms = std::max(0L, ParseNumber(path.substr(6), 3600000));
  } else if (path.rfind("/status/", 0) == 0) {
    long value = ParseNumber(path.substr(8), 999);
    code = value >= 200 ? static_cast<int>(value) : 400;
  }
  Response response;
  response.due = Clock::now() + std::chrono::milliseconds(delay_ms);
  response.bytes = BuildResponse(code, method == "HEAD", !keep_alive);
  response.close_after = !keep_alive;
  conn->queue.push_back(std::move(response));
  if (!keep_alive) {
    conn->no_more_requests = true;
    return HPE_PAUSED;
  }
  return 0;
}

void ReadRequests(Connection& conn) {
  char buffer[16384];
  while (!conn.no_more_requests) {
    ssize_t n = ::recv(conn.fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      llhttp_errno_t err = llhttp_execute(&conn.parser, buffer, static_cast<size_t>(n));
      if (err == HPE_OK || err == HPE_PAUSED) continue;
      Response bad;
      bad.due = Clock::now();
      bad.bytes = BuildResponse(400, false, true);
      bad.close_after = true;
      conn.queue.push_back(std::move(bad));
      conn.no_more_requests = true;
      return;
    }
    if (n == 0) {
      conn.read_eof = true;
      return;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) conn.dead = true;
    return;
  }
}

void Flush(Connection& conn) {
  while (!conn.out.empty()) {
    ssize_t n = ::send(conn.fd, conn.out.data(), conn.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      conn.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    conn.dead = true;
    return;
  }
}

// Moves due responses (in order) into the output buffer.
void Release(Connection& conn, Clock::time_point now) {
  while (!conn.queue.empty() && conn.queue.front().due <= now && !conn.close_after_flush) {
    conn.out += conn.queue.front().bytes;
    conn.close_after_flush = conn.queue.front().close_after;
    conn.queue.pop_front();
  }
}

bool ParseListen(const std::string& text, sockaddr_in* addr) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  long port = ParseNumber(text.substr(colon + 1), 65535);
  if (port < 0) return false;
  *addr = {};
  addr->sin_family = AF_INET;
  addr->sin_port = htons(static_cast<uint16_t>(port));
  return ::inet_pton(AF_INET, text.substr(0, colon).c_str(), &addr->sin_addr) == 1;
}

int Usage() {
  std::fprintf(stderr, "usage: hawk_test_backend --listen HOST:PORT --name NAME [--quiet]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--listen" && i + 1 < argc) {
      listen = argv[++i];
    } else if (arg == "--name" && i + 1 < argc) {
      g_server.name = argv[++i];
    } else if (arg == "--quiet") {
      g_server.quiet = true;
    } else {
      return Usage();
    }
  }
  sockaddr_in addr{};
  if (g_server.name.empty() || !ParseListen(listen, &addr)) return Usage();

  if (::pipe2(g_signal_pipe, O_NONBLOCK | O_CLOEXEC) != 0) return 1;
  struct sigaction action {};
  action.sa_handler = &OnSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  int listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (listen_fd < 0 || ::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd, 512) != 0) {
    std::fprintf(stderr, "hawk_test_backend: listen %s: %s\n", listen.c_str(),
                 std::strerror(errno));
    return 1;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  char host[INET_ADDRSTRLEN] = "";
  ::inet_ntop(AF_INET, &addr.sin_addr, host, sizeof(host));
  std::printf("listening on %s:%d\n", host, ntohs(addr.sin_port));
  std::fflush(stdout);

  llhttp_settings_init(&g_settings);
  g_settings.on_message_begin = &OnMessageBegin;
  g_settings.on_url = &OnUrl;
  g_settings.on_message_complete = &OnMessageComplete;

  std::list<Connection> conns;
  std::vector<pollfd> fds;
  std::vector<Connection*> owners;
  while (true) {
    auto now = Clock::now();
    int timeout_ms = -1;
    fds.clear();
    owners.clear();
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    fds.push_back({listen_fd, POLLIN, 0});
    for (Connection& conn : conns) {
      short events = 0;
      if (!conn.read_eof && !conn.no_more_requests) events |= POLLIN;
      if (!conn.out.empty()) events |= POLLOUT;
      fds.push_back({conn.fd, events, 0});
      owners.push_back(&conn);
      if (!conn.queue.empty() && conn.out.empty() && !conn.close_after_flush) {
        auto wait = std::chrono::ceil<std::chrono::milliseconds>(conn.queue.front().due - now);
        int ms = static_cast<int>(std::max<long>(0, static_cast<long>(wait.count())));
        timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
      }
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // SIGTERM / SIGINT

    now = Clock::now();
    for (size_t i = 0; i < owners.size(); ++i) {
      Connection& conn = *owners[i];
      short revents = fds[2 + i].revents;
      if (revents & (POLLIN | POLLHUP | POLLERR)) ReadRequests(conn);
      // A reset or a full close by the client: nobody is left to answer.
      if ((revents & POLLERR) || ((revents & POLLHUP) && conn.read_eof)) conn.dead = true;
    }
    for (auto it = conns.begin(); it != conns.end();) {
      Connection& conn = *it;
      Release(conn, now);
      Flush(conn);
      bool finished =
          conn.out.empty() && (conn.close_after_flush || (conn.read_eof && conn.queue.empty()));
      if (conn.dead || finished) {
        ::close(conn.fd);
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
    if (fds[1].revents & POLLIN) {
      while (true) {
        int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        Connection& conn = conns.emplace_back();
        conn.fd = fd;
        llhttp_init(&conn.parser, HTTP_REQUEST, &g_settings);
        conn.parser.data = &conn;
      }
    }
  }
  for (Connection& conn : conns) ::close(conn.fd);
  ::close(listen_fd);
  return 0;
}

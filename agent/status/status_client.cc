#include "agent/status/status_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/base/unique_fd.h"
#include "llhttp.h"

namespace hawk::status {
namespace {

using Fd = base::UniqueFd;

absl::Status Unreachable(const base::Address& address, absl::string_view what, int err) {
  return absl::UnavailableError(absl::StrCat("hawk is not reachable at ", address.ToString(), ": ",
                                             what, ": ", std::strerror(err)));
}

absl::StatusOr<int> Connect(const base::Address& address) {
  int fd = -1;
  if (address.kind == base::Address::Kind::kUnix) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (address.path.size() >= sizeof(sa.sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("socket path too long: ", address.path));
    }
    std::memcpy(sa.sun_path, address.path.c_str(), address.path.size() + 1);
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Unreachable(address, "socket", errno);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
      int err = errno;
      ::close(fd);
      return Unreachable(address, "connect", err);
    }
    return fd;
  }
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (address.host.find(':') != std::string::npos) {
    auto* sa6 = reinterpret_cast<sockaddr_in6*>(&storage);
    sa6->sin6_family = AF_INET6;
    sa6->sin6_port = htons(address.port);
    if (::inet_pton(AF_INET6, address.host.c_str(), &sa6->sin6_addr) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("not an address: ", address.host));
    }
    length = sizeof(sockaddr_in6);
  } else {
    auto* sa4 = reinterpret_cast<sockaddr_in*>(&storage);
    sa4->sin_family = AF_INET;
    sa4->sin_port = htons(address.port);
    if (::inet_pton(AF_INET, address.host.c_str(), &sa4->sin_addr) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("not an address: ", address.host));
    }
    length = sizeof(sockaddr_in);
  }
  fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unreachable(address, "socket", errno);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    int err = errno;
    ::close(fd);
    return Unreachable(address, "connect", err);
  }
  return fd;
}

// One response, fed to llhttp as it arrives.
struct Response {
  int status = 0;
  bool complete = false;
  std::string body;
  std::function<bool(absl::string_view)> on_line;  // streaming: lines of the body
  std::string line;
  bool stop = false;
};

int OnBody(llhttp_t* parser, const char* at, size_t length) {
  auto* response = static_cast<Response*>(parser->data);
  response->status = llhttp_get_status_code(parser);
  if (!response->on_line || response->status != 200) {
    response->body.append(at, length);
    return 0;
  }
  for (size_t i = 0; i < length && !response->stop; ++i) {
    if (at[i] != '\n') {
      response->line += at[i];
      continue;
    }
    if (!response->on_line(response->line)) response->stop = true;
    response->line.clear();
  }
  return 0;
}

int OnComplete(llhttp_t* parser) {
  auto* response = static_cast<Response*>(parser->data);
  response->status = llhttp_get_status_code(parser);
  response->complete = true;
  return 0;
}

absl::Status Exchange(const Endpoint& endpoint, absl::string_view method, absl::string_view target,
                      absl::string_view body, absl::Duration timeout, Response* response,
                      bool any_status = false) {
  const base::Address& address = endpoint.address;
  absl::StatusOr<int> connected = Connect(address);
  if (!connected.ok()) return connected.status();
  Fd fd(*connected);
  // Over TCP the Host is the address itself (hawk answers to IP literals; see --allowed-host).
  std::string host = "localhost";
  if (address.kind == base::Address::Kind::kTcp) {
    host = absl::StrCat(
        absl::StrContains(address.host, ':') ? absl::StrCat("[", address.host, "]") : address.host,
        ":", address.port);
  }
  std::string request = absl::StrCat(method, " ", target, " HTTP/1.1\r\nHost: ", host, "\r\n");
  if (!endpoint.bearer_token.empty()) {
    absl::StrAppend(&request, "Authorization: Bearer ", endpoint.bearer_token, "\r\n");
  }
  if (method != "GET") {
    absl::StrAppend(&request, "Content-Type: application/json\r\nContent-Length: ", body.size(),
                    "\r\n");
  }
  absl::StrAppend(&request, "Connection: close\r\n\r\n", body);
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Unreachable(address, "send", errno);
    sent += static_cast<size_t>(n);
  }
  llhttp_settings_t settings;
  llhttp_settings_init(&settings);
  settings.on_body = OnBody;
  settings.on_message_complete = OnComplete;
  llhttp_t parser;
  llhttp_init(&parser, HTTP_RESPONSE, &settings);
  parser.data = response;
  absl::Time deadline = absl::Now() + timeout;
  char buffer[65536];
  while (!response->complete && !response->stop) {
    int wait_ms = -1;
    if (timeout != absl::InfiniteDuration()) {
      wait_ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
      if (wait_ms <= 0) {
        return absl::DeadlineExceededError(absl::StrCat("hawk at ", address.ToString(),
                                                        " did not answer within ",
                                                        absl::FormatDuration(timeout)));
      }
    }
    pollfd p{fd.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Unreachable(address, "poll", errno);
    if (ready == 0) continue;  // the deadline check above ends it
    ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Unreachable(address, "recv", errno);
    llhttp_errno_t error =
        n == 0 ? llhttp_finish(&parser) : llhttp_execute(&parser, buffer, static_cast<size_t>(n));
    if (error != HPE_OK) {
      return absl::InternalError(
          absl::StrCat("hawk at ", address.ToString(),
                       " sent a malformed response: ", llhttp_errno_name(error)));
    }
    if (n == 0) break;
  }
  if (!response->complete && !response->stop) {
    return absl::UnavailableError(
        absl::StrCat("hawk at ", address.ToString(), " closed the connection mid-answer"));
  }
  if (response->status != 200 && !any_status) {
    return absl::InternalError(absl::StrCat("hawk at ", address.ToString(), " answered ",
                                            response->status, ": ", response->body));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> Get(const Endpoint& endpoint, absl::string_view target,
                                absl::Duration timeout) {
  Response response;
  if (absl::Status status = Exchange(endpoint, "GET", target, "", timeout, &response);
      !status.ok()) {
    return status;
  }
  return std::move(response.body);
}

absl::StatusOr<Answer> Send(const Endpoint& endpoint, absl::string_view method,
                            absl::string_view target, absl::string_view body,
                            absl::Duration timeout) {
  Response response;
  if (absl::Status status = Exchange(endpoint, method, target, body, timeout, &response,
                                     /*any_status=*/true);
      !status.ok()) {
    return status;
  }
  return Answer{response.status, std::move(response.body)};
}

absl::Status Stream(const Endpoint& endpoint, absl::string_view target,
                    const std::function<bool(absl::string_view line)>& on_line) {
  Response response;
  response.on_line = on_line;
  return Exchange(endpoint, "GET", target, "", absl::InfiniteDuration(), &response);
}

}  // namespace hawk::status

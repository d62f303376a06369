#include "agent/uv/listener.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/base/log.h"
#include "agent/uv/handle.h"

namespace hawk::uv {
namespace {
constexpr int kBacklog = 128;

// A socket file left by a crashed hawk is removed; one that still accepts connections belongs
// to a live process and is an error; anything that is not a socket is never touched.
absl::Status RemoveStaleUnixSocket(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("listen unix:", path, ": the path exists and is not a socket"));
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  std::memcpy(sun.sun_path, path.c_str(), path.size() + 1);
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&sun), sizeof(sun));
  close(fd);
  if (rc == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("listen unix:", path, ": another process is already serving on this socket"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(
        absl::StrCat("listen unix:", path, ": cannot remove stale socket: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}
}  // namespace

Listener::Listener(uv_loop_t* loop, base::Address address, ConnectionCallback on_connection)
    : loop_(loop),
      address_(std::move(address)),
      on_connection_(std::move(on_connection)),
      handle_(new HandleStorage) {
  if (address_.kind == base::Address::Kind::kUnix) {
    uv_pipe_init(loop_, &handle_->pipe, 0);
  } else {
    uv_tcp_init(loop_, &handle_->tcp);
  }
  handle_->handle.data = this;
}

Listener::~Listener() {
  CloseAndFree(handle_);
  if (bound_unix_path_) unlink(address_.path.c_str());
}

absl::StatusOr<std::unique_ptr<Listener>> Listener::Create(uv_loop_t* loop,
                                                           const base::Address& address,
                                                           ConnectionCallback on_connection) {
  std::unique_ptr<Listener> listener(new Listener(loop, address, std::move(on_connection)));
  absl::Status status = listener->Bind();
  if (!status.ok()) return status;
  return listener;
}

absl::Status Listener::Bind() {
  std::string what = absl::StrCat("listen ", address_.ToString());
  int rc = 0;
  if (address_.kind == base::Address::Kind::kUnix) {
    absl::Status stale = RemoveStaleUnixSocket(address_.path);
    if (!stale.ok()) return stale;
    // bind() creates the file with 0777 & ~umask: narrow the umask so that the socket is
    // never reachable by other users, not even between bind() and chmod().
    mode_t old_mask = umask(0177);
    rc = uv_pipe_bind(&handle_->pipe, address_.path.c_str());
    umask(old_mask);
    if (rc != 0) return UvError(rc, what);
    bound_unix_path_ = true;
    if (chmod(address_.path.c_str(), 0600) != 0) {
      return absl::InternalError(absl::StrCat(what, ": chmod 0600: ", std::strerror(errno)));
    }
  } else {
    sockaddr_storage storage{};
    rc = address_.host.find(':') == std::string::npos
             ? uv_ip4_addr(address_.host.c_str(), address_.port,
                           reinterpret_cast<sockaddr_in*>(&storage))
             : uv_ip6_addr(address_.host.c_str(), address_.port,
                           reinterpret_cast<sockaddr_in6*>(&storage));
    if (rc == 0) rc = uv_tcp_bind(&handle_->tcp, reinterpret_cast<const sockaddr*>(&storage), 0);
    if (rc != 0) return UvError(rc, what);
    if (address_.port == 0) {  // report the port the kernel picked (tests ask for port 0)
      sockaddr_storage bound{};
      int length = sizeof(bound);
      rc = uv_tcp_getsockname(&handle_->tcp, reinterpret_cast<sockaddr*>(&bound), &length);
      if (rc != 0) return UvError(rc, what);
      address_.port = ntohs(bound.ss_family == AF_INET6
                                ? reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port
                                : reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
    }
  }
  rc = uv_listen(&handle_->stream, kBacklog, &Listener::OnConnection);
  if (rc != 0) return UvError(rc, what);
  return absl::OkStatus();
}

void Listener::OnConnection(uv_stream_t* server, int status) {
  auto* self = static_cast<Listener*>(server->data);
  if (self == nullptr) return;
  if (status != 0) {
    base::LogWarn("accept on ", self->address_.ToString(), ": ", uv_strerror(status));
    return;
  }
  auto stream = std::make_unique<Stream>(self->loop_, self->address_.kind);
  if (uv_accept(server, stream->raw()) != 0) return;  // the stream closes itself on destruction
  if (self->on_connection_) {
    ConnectionCallback callback = self->on_connection_;
    callback(std::move(stream));
  }
}

}  // namespace hawk::uv

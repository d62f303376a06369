#include "agent/uv/stream.h"

#include "absl/strings/str_cat.h"

namespace hawk::uv {
namespace {
constexpr size_t kReadBufferBytes = 64 * 1024;

// One read buffer for every stream of the thread: libuv asks for a buffer, reads into it and
// hands it to OnRead before it reads anything else, and OnRead's callback gets the bytes only
// for the duration of the call (see DataCallback). So no stream needs a buffer of its own: with
// one each, 1,000 open connections held 64 MB.
char* SharedReadBuffer() {
  thread_local std::unique_ptr<char[]> buffer(new char[kReadBufferBytes]);
  return buffer.get();
}

struct WriteRequest {
  uv_write_t req;
  std::string bytes;
  Stream::WriteCallback on_written;
};
}  // namespace

absl::Status UvError(int code, absl::string_view operation) {
  std::string message =
      absl::StrCat(operation, ": ", uv_strerror(code), " (", uv_err_name(code), ")");
  switch (code) {
    case UV_ECONNREFUSED:
    case UV_ENOENT:
    case UV_ECONNRESET:
    case UV_EPIPE:
    case UV_EAGAIN:
    case UV_ETIMEDOUT:
      return absl::UnavailableError(message);
    case UV_EADDRINUSE:
    case UV_EACCES:
      return absl::FailedPreconditionError(message);
    case UV_EINVAL:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

Stream::Stream(uv_loop_t* loop, base::Address::Kind kind) : handle_(new HandleStorage) {
  if (kind == base::Address::Kind::kUnix) {
    uv_pipe_init(loop, &handle_->pipe, 0);
  } else {
    uv_tcp_init(loop, &handle_->tcp);
  }
  handle_->handle.data = this;
}

Stream::~Stream() {
  if (handle_ == nullptr) return;
  handle_->handle.data = nullptr;
  if (!uv_is_closing(&handle_->handle)) uv_close(&handle_->handle, &Stream::OnClosed);
}

uv_stream_t* Stream::raw() { return handle_ ? &handle_->stream : nullptr; }

size_t Stream::write_queue_bytes() const {
  return handle_ ? uv_stream_get_write_queue_size(&handle_->stream) : 0;
}

absl::Status Stream::Connect(const base::Address& address, std::function<void(absl::Status)> done) {
  if (closing()) return absl::FailedPreconditionError("connect on a closing stream");
  connect_target_ = address.ToString();
  auto* req = new uv_connect_t;
  if (address.kind == base::Address::Kind::kUnix) {
    on_connect_ = std::move(done);
    uv_pipe_connect(req, &handle_->pipe, address.path.c_str(), &Stream::OnConnect);
    return absl::OkStatus();  // libuv reports pipe errors through the callback
  }
  sockaddr_storage storage{};
  int rc = address.host.find(':') == std::string::npos
               ? uv_ip4_addr(address.host.c_str(), address.port,
                             reinterpret_cast<sockaddr_in*>(&storage))
               : uv_ip6_addr(address.host.c_str(), address.port,
                             reinterpret_cast<sockaddr_in6*>(&storage));
  if (rc == 0) {
    rc = uv_tcp_connect(req, &handle_->tcp, reinterpret_cast<const sockaddr*>(&storage),
                        &Stream::OnConnect);
  }
  if (rc != 0) {
    delete req;
    return UvError(rc, absl::StrCat("connect ", connect_target_));
  }
  on_connect_ = std::move(done);
  return absl::OkStatus();
}

void Stream::OnConnect(uv_connect_t* req, int status) {
  auto* self = static_cast<Stream*>(req->handle->data);
  delete req;
  if (self == nullptr || status == UV_ECANCELED || !self->on_connect_) return;
  auto callback = std::move(self->on_connect_);
  self->on_connect_ = nullptr;
  callback(status == 0 ? absl::OkStatus()
                       : UvError(status, absl::StrCat("connect ", self->connect_target_)));
}

absl::Status Stream::StartReading(DataCallback on_data, EndCallback on_end) {
  if (closing()) return absl::FailedPreconditionError("read on a closing stream");
  on_data_ = std::move(on_data);
  on_end_ = std::move(on_end);
  int rc = uv_read_start(&handle_->stream, &Stream::OnAlloc, &Stream::OnRead);
  if (rc != 0) return UvError(rc, "uv_read_start");
  return absl::OkStatus();
}

void Stream::StopReading() {
  if (handle_ != nullptr && !closing()) uv_read_stop(&handle_->stream);
}

void Stream::OnAlloc(uv_handle_t* handle, size_t, uv_buf_t* buf) {
  auto* self = static_cast<Stream*>(handle->data);
  if (self == nullptr) {
    *buf = uv_buf_init(nullptr, 0);  // libuv reports UV_ENOBUFS; OnRead ignores it
    return;
  }
  *buf = uv_buf_init(SharedReadBuffer(), static_cast<unsigned>(kReadBufferBytes));
}

void Stream::OnRead(uv_stream_t* handle, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<Stream*>(handle->data);
  if (self == nullptr || self->closing()) return;
  if (nread > 0) {
    if (self->on_data_) {
      DataCallback callback = self->on_data_;  // the callback may Close() us
      callback(absl::string_view(buf->base, static_cast<size_t>(nread)));
    }
    return;
  }
  if (nread == 0) return;  // EAGAIN: nothing to read this time
  uv_read_stop(handle);
  self->End(nread == UV_EOF ? absl::OkStatus() : UvError(static_cast<int>(nread), "read"));
}

void Stream::End(absl::Status status) {
  if (ended_ || !on_end_) return;
  ended_ = true;
  EndCallback callback = std::move(on_end_);
  on_end_ = nullptr;
  callback(std::move(status));
}

absl::Status Stream::Write(std::string bytes, WriteCallback on_written) {
  if (closing()) return absl::FailedPreconditionError("write on a closing stream");
  auto* request = new WriteRequest{uv_write_t{}, std::move(bytes), std::move(on_written)};
  uv_buf_t buf = uv_buf_init(request->bytes.data(), static_cast<unsigned>(request->bytes.size()));
  int rc = uv_write(&request->req, &handle_->stream, &buf, 1, &Stream::OnWrite);
  if (rc != 0) {
    delete request;
    return UvError(rc, "write");
  }
  return absl::OkStatus();
}

void Stream::OnWrite(uv_write_t* req, int status) {
  auto* request = reinterpret_cast<WriteRequest*>(req);
  auto* self = static_cast<Stream*>(req->handle->data);
  WriteCallback on_written = std::move(request->on_written);
  delete request;
  if (self == nullptr || status == UV_ECANCELED || self->closing()) return;
  if (on_written) {
    on_written(status == 0 ? absl::OkStatus() : UvError(status, "write"));  // may Close() us
    return;
  }
  if (status != 0) self->End(UvError(status, "write"));
}

void Stream::Shutdown() {
  if (closing()) return;
  auto* req = new uv_shutdown_t;
  if (uv_shutdown(req, &handle_->stream, &Stream::OnShutdown) != 0) delete req;
}

void Stream::OnShutdown(uv_shutdown_t* req, int) { delete req; }

void Stream::Close(std::function<void()> on_closed) {
  if (closing()) return;
  state_ = State::kClosing;
  on_data_ = nullptr;
  on_end_ = nullptr;
  on_connect_ = nullptr;
  on_closed_ = std::move(on_closed);
  uv_close(&handle_->handle, &Stream::OnClosed);
}

void Stream::OnClosed(uv_handle_t* handle) {
  auto* self = static_cast<Stream*>(handle->data);
  delete reinterpret_cast<HandleStorage*>(handle);
  if (self == nullptr) return;
  self->handle_ = nullptr;
  self->state_ = State::kClosed;
  auto callback = std::move(self->on_closed_);
  self->on_closed_ = nullptr;
  if (callback) callback();  // may destroy `self`
}

}  // namespace hawk::uv

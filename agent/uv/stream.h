#pragma once

// Stream owns one connected (or connecting) unix or TCP stream handle; see handle.h for the
// lifetime rules. Single-threaded: every method and callback runs on the loop thread. It is the
// plain ByteStream (byte_stream.h); the interface declares no default arguments, so the defaults
// below apply only when the static type is Stream.
//
// States: kOpen (connecting or connected) → kClosing (Close() called, callbacks cleared) →
// kClosed (libuv's close callback ran; the handle memory is gone).

#include <uv.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/base/address.h"
#include "agent/uv/byte_stream.h"

namespace hawk::uv {

// Turns a libuv error code into a Status naming the operation: "connect /run/x.sock: ...".
absl::Status UvError(int code, absl::string_view operation);

class Stream final : public ByteStream {
 public:
  // DataCallback, EndCallback (OK: EOF) and WriteCallback (OK: libuv wrote the bytes) are
  // ByteStream's.

  Stream(uv_loop_t* loop, base::Address::Kind kind);
  ~Stream() override;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Starts an asynchronous connect; `done` gets OK or the reason (ECONNREFUSED, ENOENT, …).
  // An error returned here (a bad address) means `done` will not run.
  absl::Status Connect(const base::Address& address, std::function<void(absl::Status)> done);
  absl::Status StartReading(DataCallback on_data, EndCallback on_end) override;
  void StopReading() override;
  // Queues the bytes; the stream owns them until libuv has written them. A failed write is
  // reported to `on_written` when given (so that its owner can tell which write failed), else to
  // the EndCallback. An error returned here means `on_written` will not run.
  absl::Status Write(std::string bytes, WriteCallback on_written = nullptr) override;
  // Half-closes (SHUT_WR) once queued writes are done.
  void Shutdown() override;
  // Idempotent. Clears the data and end callbacks; `on_closed` runs from the loop once the
  // handle is gone, which is the safe place to destroy this object.
  void Close(std::function<void()> on_closed = nullptr) override;

  bool closing() const override { return state_ != State::kOpen; }
  size_t write_queue_bytes() const override;
  uv_stream_t* raw();

 private:
  union HandleStorage {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tcp_t tcp;
  };
  enum class State {
    kOpen,     // connecting or connected; callbacks live
    kClosing,  // Close() called; waiting for libuv's close callback
    kClosed,   // handle freed
  };

  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* handle, ssize_t nread, const uv_buf_t* buf);
  static void OnConnect(uv_connect_t* req, int status);
  static void OnWrite(uv_write_t* req, int status);
  static void OnShutdown(uv_shutdown_t* req, int status);
  static void OnClosed(uv_handle_t* handle);
  void End(absl::Status status);

  HandleStorage* handle_;
  State state_ = State::kOpen;
  bool ended_ = false;
  DataCallback on_data_;
  EndCallback on_end_;
  std::function<void(absl::Status)> on_connect_;
  std::function<void()> on_closed_;
  std::string connect_target_;
};

}  // namespace hawk::uv

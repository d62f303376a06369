#pragma once

// Listener owns one listening unix or TCP socket (see handle.h). A unix socket is created with
// mode 0600 (no window with wider permissions) and unlinked when the listener goes away.
// Single-threaded.

#include <uv.h>

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "agent/base/address.h"
#include "agent/uv/stream.h"

namespace hawk::uv {

class Listener {
 public:
  using ConnectionCallback = std::function<void(std::unique_ptr<Stream>)>;

  static absl::StatusOr<std::unique_ptr<Listener>> Create(uv_loop_t* loop,
                                                          const base::Address& address,
                                                          ConnectionCallback on_connection);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // The address as bound: a TCP port 0 is replaced by the port the kernel picked.
  const base::Address& address() const { return address_; }

 private:
  union HandleStorage {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tcp_t tcp;
  };
  Listener(uv_loop_t* loop, base::Address address, ConnectionCallback on_connection);
  absl::Status Bind();
  static void OnConnection(uv_stream_t* server, int status);

  uv_loop_t* loop_;
  base::Address address_;
  ConnectionCallback on_connection_;
  HandleStorage* handle_;
  bool bound_unix_path_ = false;
};

}  // namespace hawk::uv

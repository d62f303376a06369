#pragma once

// ByteStream: the operations a connection's owner uses on a connected, bidirectional byte stream,
// whatever carries the bytes: a socket (uv::Stream) or a transport over one (tls::ServerStream).
// The HTTP server talks to this interface only, so a transport under it changes nothing above.
//
// Contract (uv::Stream's, which every implementation keeps): single-threaded, on the loop thread.
// No callback runs synchronously from a call on the stream itself. Close() is idempotent and
// clears the data and end callbacks; after it no callback runs except `on_closed`, which runs
// from the loop and is the only safe place to destroy the stream (see agent/uv/handle.h).

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hawk::uv {

class ByteStream {
 public:
  // Bytes are valid only during the call: copy what you keep.
  using DataCallback = std::function<void(absl::string_view bytes)>;
  // Called at most once: OK for an orderly end from the peer, an error for a failed read or
  // write. The stream stays open until Close().
  using EndCallback = std::function<void(absl::Status status)>;
  // Called once one Write()'s bytes are written (OK) or failed to be (the error); never after
  // Close() and never for a cancelled write.
  using WriteCallback = std::function<void(absl::Status status)>;

  virtual ~ByteStream() = default;

  virtual absl::Status StartReading(DataCallback on_data, EndCallback on_end) = 0;
  virtual void StopReading() = 0;
  // Queues the bytes. A failed write is reported to `on_written` when given, else to the
  // EndCallback. An error returned here means `on_written` will not run.
  virtual absl::Status Write(std::string bytes, WriteCallback on_written) = 0;
  // Ends the write side once queued writes are done (the peer reads an orderly end).
  virtual void Shutdown() = 0;
  virtual void Close(std::function<void()> on_closed) = 0;

  virtual bool closing() const = 0;
  // Bytes accepted by Write() and not yet handed to the kernel.
  virtual size_t write_queue_bytes() const = 0;
};

}  // namespace hawk::uv

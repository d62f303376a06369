#include "agent/uv/process.h"

#include <signal.h>

#include "absl/strings/str_cat.h"
#include "agent/uv/handle.h"
#include "agent/uv/stream.h"

namespace hawk::uv {
namespace {

// How long the output pipes may stay open after the program exited.
constexpr absl::Duration kDrainAfterExit = absl::Milliseconds(100);

}  // namespace

ChildProcess::ChildProcess(uv_loop_t* loop) : deadline_(loop) {}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(uv_loop_t* loop,
                                                                  std::vector<std::string> argv,
                                                                  absl::Duration timeout,
                                                                  size_t max_output_bytes,
                                                                  Done done) {
  if (argv.empty() || argv[0].empty()) {
    return absl::InvalidArgumentError("spawn: no program given");
  }
  std::unique_ptr<ChildProcess> self(new ChildProcess(loop));
  self->max_output_bytes_ = max_output_bytes;
  self->done_ = std::move(done);
  for (uv_pipe_t*& pipe : self->pipes_) {
    pipe = new uv_pipe_t;
    uv_pipe_init(loop, pipe, 0);
    pipe->data = self.get();
  }
  std::vector<char*> args;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_IGNORE;
  for (int i = 0; i < 2; ++i) {
    stdio[i + 1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[i + 1].data.stream = reinterpret_cast<uv_stream_t*>(self->pipes_[i]);
  }
  uv_process_options_t options{};
  options.exit_cb = &ChildProcess::OnExit;
  options.file = args[0];
  options.args = args.data();
  options.stdio = stdio;
  options.stdio_count = 3;
  auto* process = new uv_process_t;
  process->data = self.get();
  if (int rc = uv_spawn(loop, process, &options); rc != 0) {
    // libuv initialised the handle: it must still be closed before it is freed.
    CloseAndFree(process);
    return UvError(rc, absl::StrCat("start ", argv[0]));
  }
  self->process_ = process;
  self->pid_ = process->pid;
  for (uv_pipe_t* pipe : self->pipes_) {
    uv_read_start(reinterpret_cast<uv_stream_t*>(pipe), &ChildProcess::OnAlloc,
                  &ChildProcess::OnRead);
  }
  ChildProcess* raw = self.get();
  self->deadline_.Start(timeout, [raw] { raw->OnDeadline(); });
  return self;
}

void ChildProcess::OnDeadline() {
  if (exited_) {
    // It exited, and something it started still holds its output open: stop waiting.
    for (uv_pipe_t* pipe : pipes_) uv_read_stop(reinterpret_cast<uv_stream_t*>(pipe));
    open_pipes_ = 0;
    MaybeFinish();
    return;
  }
  result_.timed_out = true;
  uv_process_kill(process_, SIGKILL);
}

ChildProcess::~ChildProcess() {
  done_ = nullptr;
  if (process_ != nullptr && !exited_) {
    // libuv reaps a child only while its handle is open: leave the handle to OnExit, which
    // closes it once the killed child has been reaped (no zombie is left behind).
    process_->data = nullptr;
    uv_process_kill(process_, SIGKILL);
  } else {
    CloseAndFree(process_);
  }
  for (uv_pipe_t* pipe : pipes_) CloseAndFree(pipe);
}

void ChildProcess::OnExit(uv_process_t* handle, int64_t exit_status, int term_signal) {
  auto* self = static_cast<ChildProcess*>(handle->data);
  if (self == nullptr) {
    CloseAndFree(handle);  // its owner is gone (see the destructor)
    return;
  }
  self->exited_ = true;
  self->result_.exit_status = exit_status;
  self->result_.term_signal = term_signal;
  if (self->open_pipes_ > 0) {
    // Whatever the program wrote before it exited is in the pipes already and is read within a
    // loop turn or two; a pipe still open after that is held by something it started (a wrapper
    // script that leaves a process behind), and the check is done when the program is.
    self->deadline_.Start(kDrainAfterExit, [self] { self->OnDeadline(); });
  }
  self->MaybeFinish();
}

void ChildProcess::OnAlloc(uv_handle_t* handle, size_t, uv_buf_t* buf) {
  auto* self = static_cast<ChildProcess*>(handle->data);
  if (self == nullptr) {
    *buf = uv_buf_init(nullptr, 0);
    return;
  }
  *buf = uv_buf_init(self->read_buffer_, sizeof(self->read_buffer_));
}

void ChildProcess::OnRead(uv_stream_t* handle, ssize_t nread, const uv_buf_t* buf) {
  auto* self = static_cast<ChildProcess*>(handle->data);
  if (self == nullptr) return;
  if (nread > 0) {
    self->Append(buf->base, static_cast<size_t>(nread));
    return;
  }
  if (nread == 0) return;  // EAGAIN: nothing to read this time
  // EOF or a read error: this pipe is done either way.
  uv_read_stop(handle);
  --self->open_pipes_;
  self->MaybeFinish();
}

void ChildProcess::Append(const char* data, size_t size) {
  std::string& out = result_.output;
  size_t room = out.size() < max_output_bytes_ ? max_output_bytes_ - out.size() : 0;
  if (size > room) result_.output_truncated = true;
  out.append(data, std::min(size, room));
}

void ChildProcess::MaybeFinish() {
  if (!exited_ || open_pipes_ > 0 || !done_) return;
  deadline_.Stop();
  Done done = std::move(done_);
  done_ = nullptr;
  ProcessResult result = std::move(result_);
  done(std::move(result));  // last: it may destroy this object
}

}  // namespace hawk::uv

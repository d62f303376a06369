#pragma once

// ChildProcess runs one program to completion and captures what it prints (stdout and stderr,
// in arrival order, capped). hawk uses it for `haproxy -c -f <config>` before a reload.
//
// Ownership and threading: owns the uv_process_t, its two output pipes and a deadline timer
// (handle.h rules); loop thread only. Destroying the object before the program ended kills it
// (SIGKILL) and drops `done`; the process handle then stays open until libuv has reaped the
// child, and frees itself. `done` runs once, last, with everything it needs moved out, so
// it may destroy this object.

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/uv/timer.h"

namespace hawk::uv {

struct ProcessResult {
  int64_t exit_status = -1;  // the exit code, when the program exited by itself
  int term_signal = 0;       // the signal that ended it, 0 if none
  bool timed_out = false;    // killed by hawk at the deadline
  std::string output;        // stdout and stderr as they arrived, cut at max_output_bytes
  bool output_truncated = false;

  bool succeeded() const { return !timed_out && term_signal == 0 && exit_status == 0; }
};

class ChildProcess {
 public:
  using Done = std::function<void(ProcessResult)>;

  // Starts argv[0] (a path, or a bare name that libuv looks up in PATH, as execvp does) with
  // `argv`, stdin ignored. Fails when the program cannot be started (ENOENT, EACCES): `done` then
  // never runs.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(uv_loop_t* loop,
                                                             std::vector<std::string> argv,
                                                             absl::Duration timeout,
                                                             size_t max_output_bytes, Done done);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  int pid() const { return pid_; }

 private:
  explicit ChildProcess(uv_loop_t* loop);

  static void OnExit(uv_process_t* handle, int64_t exit_status, int term_signal);
  static void OnAlloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* handle, ssize_t nread, const uv_buf_t* buf);
  void Append(const char* data, size_t size);
  // The deadline, or the end of the time the pipes may stay open after the program exited.
  void OnDeadline();
  // Runs `done` once the program has exited and both pipes reached EOF (or were given up).
  void MaybeFinish();

  uv_process_t* process_ = nullptr;           // null until spawned; freed in its close callback
  uv_pipe_t* pipes_[2] = {nullptr, nullptr};  // the child's stdout and stderr
  Timer deadline_;
  int pid_ = 0;
  bool exited_ = false;
  int open_pipes_ = 2;
  size_t max_output_bytes_ = 0;
  ProcessResult result_;
  Done done_;
  char read_buffer_[16 * 1024];
};

}  // namespace hawk::uv

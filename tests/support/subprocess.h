#pragma once

// Subprocess: one child process started with posix_spawn (safe in a multi-threaded test).
//
// Ownership: the object owns the child: it reaps it (Running(), WaitExit()) and its destructor
// calls Stop(). Not thread-safe; use it from one thread. The child gets default signal
// dispositions, an empty signal mask, stdin from /dev/null, and, by default, its own process
// group (pgid == pid) so that everything it forks can be signalled as a group.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hawk::testing {

struct SubprocessOptions {
  std::vector<std::string> argv;  // argv[0] is the program; a name without '/' is searched in PATH
  std::string stdout_path;        // appended to (created if missing); "" = /dev/null
  std::string stderr_path;        // same; may equal stdout_path to share one file
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing) ours
  bool new_process_group = true;
  bool stop_signals_group = false;  // Stop() signals the whole process group, not only the pid
  std::chrono::milliseconds stop_grace{5000};  // Stop(): SIGTERM, then SIGKILL after this
};

class Subprocess {
 public:
  // Returns nullptr and sets `*error` if the program cannot be started.
  static std::unique_ptr<Subprocess> Spawn(SubprocessOptions options, std::string* error);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  pid_t pgid() const { return options_.new_process_group ? pid_ : -1; }

  // True while the child has not exited; reaps it (WNOHANG) once it has.
  bool Running();
  // Sends `sig` to the child (no-op returning false once it has been reaped).
  bool Signal(int sig);
  // Sends `sig` to the child's process group (requires new_process_group).
  bool SignalGroup(int sig);
  // Waits up to `deadline` for the child to exit; true once it has been reaped.
  bool WaitExit(std::chrono::milliseconds deadline);
  // SIGTERM (to the group if stop_signals_group), wait stop_grace, then SIGKILL and wait.
  // Idempotent. With stop_signals_group, stragglers in the group get SIGKILL at the end.
  void Stop();

  bool exited() const { return reaped_; }
  int wait_status() const { return wait_status_; }  // raw waitpid() status once exited()
  int exit_code() const;                            // -1 unless it exited normally
  int term_signal() const;                          // 0 unless killed by a signal
  std::string DescribeExit() const;                 // "exit code 0", "signal 9", "running"

 private:
  Subprocess(SubprocessOptions options, pid_t pid) : options_(std::move(options)), pid_(pid) {}

  SubprocessOptions options_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  bool group_swept_ = false;
};

// True if `pid` names a live process: exists (kill(pid, 0)) and is not a zombie.
bool ProcessAlive(pid_t pid);
// Pids of processes whose parent is this process (zombies included), from /proc.
std::vector<pid_t> ChildPids();
// The parent pid from /proc/<pid>/stat, or -1 if the process is gone.
pid_t ParentPid(pid_t pid);
// Reaps the zombies in process group `pgid` that are our children (adopted orphans, see
// HaproxyProcess); true when the group has no live member and no zombie of ours left. Zombies
// that another parent will reap do not count.
bool ProcessGroupGone(pid_t pgid);
// The process's command name from /proc/<pid>/comm ("" if gone).
std::string ProcessName(pid_t pid);

}  // namespace hawk::testing

#pragma once

// HaproxyProcess: a real `haproxy -W -S <dir>/master.sock -f <dir>/haproxy.cfg` in the
// foreground, so that the spawned pid is the master (it keeps its pid across reloads: it
// re-executes itself).
//
// Ownership: owns the master and every worker it has seen (through ShowProc()/Start()/…) and
// the whole process group; Stop()/Kill()/the destructor leave none of them running. On Linux
// the first Start() makes this test process a child subreaper (PR_SET_CHILD_SUBREAPER), so
// workers orphaned by a killed master become our children and are reaped here instead of
// lingering as zombies. Not thread-safe.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/support/master_cli.h"
#include "tests/support/result.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace hawk::testing {

// `haproxy -v`'s version, for tests whose expectations follow HAProxy's own behaviour by version.
struct HaproxyVersion {
  int major = 0;
  int minor = 0;
  bool AtLeast(int want_major, int want_minor) const {
    return major > want_major || (major == want_major && minor >= want_minor);
  }
};

class HaproxyProcess {
 public:
  // The binary the suites run against: $HAWK_HAPROXY_BINARY (CTest sets it per version, see
  // scripts/haproxy-versions.sh), else Debian 12's /usr/sbin/haproxy.
  static std::string DefaultBinary();

  // Writes nothing yet; Start() writes the config.
  HaproxyProcess(const TempDir& dir, std::string config, std::string binary = DefaultBinary());
  ~HaproxyProcess();  // Stop()
  HaproxyProcess(const HaproxyProcess&) = delete;
  HaproxyProcess& operator=(const HaproxyProcess&) = delete;

  // Writes the config, starts the master, and waits until `show proc` lists a worker. On
  // failure the error carries the log tail; whatever was started is stopped.
  Result Start(std::chrono::milliseconds deadline = std::chrono::seconds(5));

  pid_t master_pid() const { return process_ ? process_->pid() : -1; }
  const std::string& master_socket() const { return master_socket_; }
  const std::string& config_path() const { return config_path_; }
  const std::string& log_path() const { return log_path_; }
  bool MasterRunning();

  // Replaces haproxy.cfg (for the next reload).
  Result WriteConfig(const std::string& text);
  // Sends `reload` on the master socket. On 2.6 the master answers nothing and closes; the
  // reload then happens asynchronously: wait with WaitForNewWorker().
  Result ReloadViaCli(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // SIGUSR2 to the master.
  Result ReloadViaSignal();
  // Polls until a worker other than `old_worker_pid` serves (see CurrentWorkerPid); returns it,
  // or -1 at the deadline. Connection refusals (the master re-executing) are retried.
  pid_t WaitForNewWorker(pid_t old_worker_pid,
                         std::chrono::milliseconds deadline = std::chrono::seconds(5));

  // `show proc` through the master socket; remembers every pid it lists.
  std::optional<ProcList> ShowProc(std::chrono::milliseconds timeout = std::chrono::seconds(2),
                                   std::string* error = nullptr);
  // The worker that serves: listed by `show proc` (in either section) and answering its own
  // `show info` with its pid and `Stopping: 0`. -1 when none does. On 3.1+ a worker listed
  // while it still parses its configuration does not serve yet, and after a failed reload 3.4
  // lists the serving worker under `# old workers`; every version agrees on `show info`.
  pid_t CurrentWorkerPid(std::chrono::milliseconds timeout = std::chrono::seconds(2),
                         std::string* error = nullptr);
  // The version of this process's binary.
  HaproxyVersion version() const { return BinaryVersion(binary_); }
  static HaproxyVersion BinaryVersion(const std::string& binary);
  // Every worker pid seen so far (current and old).
  std::vector<pid_t> known_worker_pids() const;

  // SIGKILL to the master, its process group, and every known worker; waits until all are gone.
  void Kill();
  // SIGTERM to the master (it stops its workers), waits up to 5 s, then Kill(). Idempotent.
  void Stop();

  // The last `max_bytes` of haproxy's stdout+stderr.
  std::string LogTail(size_t max_bytes = 4096) const;

 private:
  void Remember(const ProcList& list);
  // Waits until every known worker is gone (reaping those that became our children).
  bool WaitWorkersGone(std::chrono::milliseconds deadline);
  void Finish();

  std::string binary_;
  std::string config_;
  std::string config_path_;
  std::string master_socket_;
  std::string log_path_;
  std::unique_ptr<Subprocess> process_;
  std::set<pid_t> known_workers_;
  bool finished_ = false;  // stopped for good: nothing (not even the group) is signalled again
};

}  // namespace hawk::testing

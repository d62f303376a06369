#pragma once

// FakeMaster: a small HAProxy 2.6 behind a master CLI unix socket, served on the test's own uv
// loop, for tests of the reconciler (and whatever else talks to the master through MasterClient).
//
// Ownership and threading: owns its listener and every accepted connection; loop thread only.
//
// It models a master pid, its reload counter, and workers (pid, current or leaving, `show info`,
// `show sess`). Each worker's runtime state (backends, servers, maps, ACLs) and the commands that
// read or change it are plan::testing::SimWorker's, started from the configuration. Replies use
// the byte formats recorded from 2.6.12 in tests/fixtures/haproxy-2.6 (loaded from there where a
// fixture exists), in prompt mode:
//   - every reply ends with its blank line and then `master> ` once `prompt` was sent;
//   - a payload (`… <<`) gets a `+ ` prompt after its command line and after each payload line;
//   - `@!<unknown pid> …` gets `Can't find the target PID matching the prefix '@!<pid>'` and, as
//     on 2.6, the connection is closed, dropping the commands behind it;
//   - a frozen worker (`runtime.set_frozen(true)`: a leaving worker whose soft-stop has stopped
//     its proxies) answers every server-changing command with `Proxy is disabled.` and still
//     runs map commands;
//   - Reload() closes every client connection, as the real master does on every version;
//   - `reload` on the master CLI, once AnswerReloads() was called, is such a Reload(), answered
//     as 2.6 answers it: with nothing (the connection closes).
// Every command sent to a worker is recorded in that worker's `received`, in arrival order.

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/plan/observed.h"
#include "agent/uv/listener.h"
#include "agent/uv/stream.h"
#include "tests/unit/plan/sim_worker.h"

namespace hawk::fake {

// A recorded 2.6.12 reply from tests/fixtures/haproxy-2.6, verbatim (blank line included); fails
// the current test when the file cannot be read.
std::string Fixture(absl::string_view name);

// One command as the worker received it: the line without its `@!<pid> ` prefix, and its payload
// when it had one (the lines, each ended by its LF, as cli::Command holds it).
struct ReceivedCommand {
  std::string line;
  std::string payload;
};

struct FakeWorker {
  FakeWorker(int worker_pid, const plan::ObservedWorker& config)
      : pid(worker_pid), runtime(config, worker_pid) {}

  int pid = 0;
  int reloads = 0;
  bool stopping = false;  // `Stopping: 1`, listed under `# old workers`
  // Its backends, servers, maps and ACLs, and every command on them (`show servers state`,
  // `show map`/`show acl`, `set server`, map and ACL transactions and per-entry commands), as
  // HAProxy reads them.
  plan::testing::SimWorker runtime;
  std::string sessions;  // the `show sess` reply (blank line included)
  std::vector<ReceivedCommand> received;
};

class FakeMaster {
 public:
  // Consulted before a worker runs a command: true closes the connection instead (the command
  // does not run and gets no reply), like a reload landing in the middle of a batch.
  using CutHook = std::function<bool(int pid, const ReceivedCommand& command)>;

  FakeMaster(uv_loop_t* loop, std::string socket_path, int master_pid,
             const plan::ObservedWorker& config);
  ~FakeMaster();
  FakeMaster(const FakeMaster&) = delete;
  FakeMaster& operator=(const FakeMaster&) = delete;

  // Binds the socket; fails the current test on error.
  void Listen();

  // What workers started from now on hold (the constructor's `config` until then).
  void set_config(const plan::ObservedWorker& config) { config_ = config; }
  // A worker started from the configuration, without a reload (present when hawk starts).
  FakeWorker& AddWorker(int pid);
  // A reload: every worker becomes leaving and counts one more reload, `new_pid` starts from the
  // configuration, the master counts the reload, and every client connection is closed.
  FakeWorker& Reload(int new_pid);
  // The worker exits (its last connection ended): the master no longer routes to it.
  void RemoveWorker(int pid) { workers_.erase(pid); }
  // A worker still parsing its configuration (3.1+): `show proc` lists it first under
  // `# workers`, and `@!<pid>` gets `Can't find the target PID` until FinishStarting(pid).
  void AddStartingWorker(int pid) { starting_.push_back(pid); }
  FakeWorker& FinishStarting(int pid);
  // From now on `reload` on the master CLI runs Reload(first_new_pid), then Reload(first_new_pid
  // + 1), … (before: an unknown command).
  void AnswerReloads(int first_new_pid) { next_reload_pid_ = first_new_pid; }
  void CloseAllConnections();
  void set_cut_hook(CutHook hook) { cut_hook_ = std::move(hook); }

  // Null once the worker has exited (RemoveWorker): keep what a test needs from it before.
  FakeWorker* worker(int pid);
  // `@!<pid>` prefixes the master could not route (unknown or exited pids), with their command.
  const std::vector<std::string>& unrouted_lines() const { return unrouted_lines_; }
  // Lines without an `@!` prefix (`prompt`, `show proc`).
  const std::vector<std::string>& master_lines() const { return master_lines_; }
  // The connection each of master_lines() came on, numbered from 1 in the order of accept().
  const std::vector<int>& master_line_connections() const { return master_line_connections_; }
  // Connections closed by the cut hook.
  int cuts() const { return cuts_; }
  int accepted() const { return accepted_; }

 private:
  struct Conn;

  void Accept(std::unique_ptr<uv::Stream> stream);
  void OnData(Conn* conn, absl::string_view bytes);
  void RunLine(Conn* conn, const std::string& line, std::string payload);
  void Reply(Conn* conn, const std::string& text);
  void Close(Conn* conn);

  std::string ShowProc() const;
  std::string MasterUnknownCommand() const;
  std::string Execute(FakeWorker* worker, const ReceivedCommand& command);
  std::string ShowInfo(const FakeWorker& worker) const;

  uv_loop_t* loop_;
  std::string path_;
  int master_pid_;
  int master_reloads_ = 0;
  plan::ObservedWorker config_;
  std::map<int, FakeWorker> workers_;  // by pid
  std::vector<int> starting_;          // listed, not routable yet
  std::unique_ptr<uv::Listener> listener_;
  std::vector<std::unique_ptr<Conn>> conns_;  // closed ones included, freed with the fake
  CutHook cut_hook_;
  std::vector<std::string> master_lines_;
  std::vector<int> master_line_connections_;
  int next_reload_pid_ = 0;  // 0: `reload` is an unknown command
  std::vector<std::string> unrouted_lines_;
  int cuts_ = 0;
  int accepted_ = 0;
};

}  // namespace hawk::fake

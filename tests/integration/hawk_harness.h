#pragma once

// Shared pieces of hawk's integration tests: a real HAProxy (tests/support), a real backend,
// and the real hawk binary, each in the test's own temp dir with free ports, each stopped by pid.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/haproxy_process.h"
#include "tests/support/http_client.h"
#include "tests/support/json_quote.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace hawk::testing {

// What the tests read back from GET /v1/workers.
struct WorkerView {
  int pid = 0;
  std::string role;
  bool stopping = false;
  int reloads = 0;
  int connections = 0;
  std::string applied_version;
  std::string applied_generation;  // "" when absent
  bool in_sync = false;
  bool frozen = false;
  std::string not_relayed;                 // why hawk sends it nothing more ("" while it does)
  std::vector<std::string> stale_objects;  // "backend/be_app/server/SRV_1", …
  int sessions_on_stale_servers = 0;
};
struct WorkersView {
  bool ok = false;
  std::string error;
  std::string raw;
  bool master_reachable = false;
  int master_pid = 0;
  int master_reloads = 0;
  int master_failed = 0;
  std::vector<WorkerView> workers;

  const WorkerView* Find(int pid) const;
  std::vector<int> PidsWithRole(const std::string& role) const;
};
// One server's row of `show servers state`, by column name.
struct ServerRow {
  std::string name;
  std::string address;
  int port = 0;
  int admin = -1;  // srv_admin_state bits; -1: the server was not listed
  int weight = -1;
};
// `@!<pid> show servers state <backend>` through the master socket (tests' own client), the row
// of `server`.
ServerRow ReadServerRow(const std::string& master_socket, int pid, const std::string& backend,
                        const std::string& server);
// The same columns from a server-state table's text (a `show servers state` reply or a
// server-state file): every row of `backend`, in order, and the row of `backend`/`server`.
std::vector<ServerRow> ServerRowsFromText(const std::string& text, const std::string& backend);
ServerRow ServerRowFromText(const std::string& text, const std::string& backend,
                            const std::string& server);

// Parses the JSON of GET /v1/workers (simdjson); ok=false with the reason on any mismatch.
WorkersView ParseWorkersView(const std::string& json);

// A small HAProxy config: frontend on `frontend_port`, backend be_app with SRV_1 at
// 127.0.0.1:`backend_port`, and `extra_global` lines in the global section.
std::string BasicHaproxyConfig(int frontend_port, int backend_port,
                               const std::string& extra_global = "");

// A config for desired-state tests: like BasicHaproxyConfig, plus SRV_2 (192.0.2.1:80,
// disabled), a map <dir>/hosts.map that routes by Host header (default be_app) and an ACL file
// <dir>/blocked.acl that denies matching source addresses. Writes both files (empty).
std::string StateHaproxyConfig(const TempDir& dir, int frontend_port, int backend_port,
                               const std::string& extra_global = "");

// The hawk_test_backend binary (path from HAWK_TEST_BACKEND), started on a free port.
class Backend {
 public:
  Backend(const TempDir& dir, const std::string& name);
  int port() const { return port_; }
  bool ok() const { return process_ != nullptr; }
  const std::string& error() const { return error_; }

 private:
  int port_ = -1;
  std::string error_;
  std::unique_ptr<Subprocess> process_;
};

// A process's VmRSS in KiB (/proc/<pid>/status), -1 if unreadable.
long ResidentKib(pid_t pid);

// One run of the hawk binary (path from HAWK_BINARY) with `args` (`--help`, `status …`), to its
// exit within `deadline`: its exit code and what it printed (stdout and stderr together).
struct RunResult {
  int exit_code = -1;  // also when it could not be started or did not exit in time (see output)
  std::string output;
};
RunResult RunHawk(const TempDir& dir, std::vector<std::string> args,
                  std::chrono::milliseconds deadline = std::chrono::seconds(10));

// The hawk binary (path from HAWK_BINARY) with --listen unix:<dir>/hawk.sock and a TCP probe
// listener; `extra_args` appended.
class HawkProcess {
 public:
  HawkProcess(const TempDir& dir, const std::string& master_socket,
              std::vector<std::string> extra_args = {});
  ~HawkProcess();

  bool ok() const { return process_ != nullptr; }
  const std::string& error() const { return error_; }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  Subprocess* process() { return process_.get(); }
  std::string api_address() const { return "unix:" + socket_; }
  std::string probe_address() const { return "tcp:127.0.0.1:" + std::to_string(probe_port_); }
  std::string LogTail() const;

  // Waits until the API socket answers /healthz.
  bool WaitServing(std::chrono::milliseconds deadline = std::chrono::seconds(5));
  HttpResult Get(const std::string& target) const;
  HttpResult Put(const std::string& target, const std::string& body) const;
  HttpResult Patch(const std::string& target, const std::string& body) const;
  HttpResult Post(const std::string& target, const std::string& body,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  WorkersView Workers() const;

 private:
  std::string socket_;
  std::string log_;
  int probe_port_ = -1;
  std::string error_;
  std::unique_ptr<Subprocess> process_;
};

// hawk is ready (its probe's /readyz) and lists a current worker: a push now has a worker to
// answer for.
bool ReadyWithACurrentWorker(const HawkProcess& hawk);

// hawk reaches the master and every worker it lists holds `version` in full.
bool EveryWorkerHolds(const HawkProcess& hawk, const std::string& version);
// hawk reaches the master, lists a CURRENT worker, and every worker it sends commands to (all
// but those it reports `notRelayed`) holds `version` in full.
bool EveryRelayedWorkerHolds(const HawkProcess& hawk, const std::string& version);

}  // namespace hawk::testing

#include "tests/integration/hawk_harness.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "simdjson.h"
#include "tests/support/free_port.h"
#include "tests/support/master_cli.h"
#include "tests/support/wait_until.h"

namespace hawk::testing {

const WorkerView* WorkersView::Find(int pid) const {
  for (const WorkerView& w : workers) {
    if (w.pid == pid) return &w;
  }
  return nullptr;
}

std::vector<int> WorkersView::PidsWithRole(const std::string& role) const {
  std::vector<int> pids;
  for (const WorkerView& w : workers) {
    if (w.role == role) pids.push_back(w.pid);
  }
  return pids;
}

WorkersView ParseWorkersView(const std::string& json) {
  WorkersView view;
  view.raw = json;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) {
    view.error = "not JSON: " + json;
    return view;
  }
  auto get_int = [](simdjson::dom::element e, const char* key, int* out) {
    int64_t v = 0;
    if (e[key].get_int64().get(v) != simdjson::SUCCESS) return false;
    *out = static_cast<int>(v);
    return true;
  };
  bool reachable = false;
  if (doc["masterReachable"].get_bool().get(reachable) == simdjson::SUCCESS) {
    view.master_reachable = reachable;
  }
  simdjson::dom::element master;
  if (doc["master"].get(master) != simdjson::SUCCESS || !get_int(master, "pid", &view.master_pid) ||
      !get_int(master, "reloads", &view.master_reloads) ||
      !get_int(master, "failedReloads", &view.master_failed)) {
    view.error = "no master object: " + json;
    return view;
  }
  simdjson::dom::array workers;
  if (doc["workers"].get_array().get(workers) != simdjson::SUCCESS) {
    view.error = "no workers array: " + json;
    return view;
  }
  for (simdjson::dom::element w : workers) {
    WorkerView worker;
    std::string_view role;
    bool stopping = false;
    if (!get_int(w, "pid", &worker.pid) || !get_int(w, "reloads", &worker.reloads) ||
        !get_int(w, "connections", &worker.connections) ||
        w["role"].get_string().get(role) != simdjson::SUCCESS ||
        w["stopping"].get_bool().get(stopping) != simdjson::SUCCESS) {
      view.error = "malformed worker: " + json;
      return view;
    }
    worker.role = std::string(role);
    worker.stopping = stopping;
    std::string_view applied;
    if (w["appliedVersion"].get_string().get(applied) == simdjson::SUCCESS) {
      worker.applied_version = std::string(applied);
    }
    std::string_view generation;
    if (w["appliedGeneration"].get_string().get(generation) == simdjson::SUCCESS) {
      worker.applied_generation = std::string(generation);
    }
    std::string_view not_relayed;
    if (w["notRelayed"].get_string().get(not_relayed) == simdjson::SUCCESS) {
      worker.not_relayed = std::string(not_relayed);
    }
    bool flag = false;
    if (w["inSync"].get_bool().get(flag) == simdjson::SUCCESS) worker.in_sync = flag;
    if (w["frozen"].get_bool().get(flag) == simdjson::SUCCESS) worker.frozen = flag;
    get_int(w, "sessionsOnStaleServers", &worker.sessions_on_stale_servers);
    simdjson::dom::array stale;
    if (w["stale"].get_array().get(stale) == simdjson::SUCCESS) {
      for (simdjson::dom::element item : stale) {
        std::string_view object;
        if (item["object"].get_string().get(object) == simdjson::SUCCESS) {
          worker.stale_objects.emplace_back(object);
        }
      }
    }
    view.workers.push_back(worker);
  }
  view.ok = true;
  return view;
}

std::string BasicHaproxyConfig(int frontend_port, int backend_port,
                               const std::string& extra_global) {
  return "global\n" + extra_global +
         "defaults\n"
         "    mode http\n"
         "    timeout connect 1s\n"
         "    timeout client 30s\n"
         "    timeout server 30s\n"
         "frontend fe\n"
         "    bind 127.0.0.1:" +
         std::to_string(frontend_port) +
         "\n"
         "    http-after-response set-header X-Pid %pid\n"
         "    default_backend be_app\n"
         "backend be_app\n"
         "    server SRV_1 127.0.0.1:" +
         std::to_string(backend_port) + "\n";
}

std::string StateHaproxyConfig(const TempDir& dir, int frontend_port, int backend_port,
                               const std::string& extra_global) {
  WriteFile(dir.File("hosts.map"), "");
  WriteFile(dir.File("blocked.acl"), "");
  return "global\n" + extra_global +
         "defaults\n"
         "    mode http\n"
         "    timeout connect 1s\n"
         "    timeout client 30s\n"
         "    timeout server 30s\n"
         "frontend fe\n"
         "    bind 127.0.0.1:" +
         std::to_string(frontend_port) +
         "\n"
         "    http-after-response set-header X-Pid %pid\n"
         "    http-request deny if { src -f " +
         dir.File("blocked.acl") +
         " }\n"
         "    use_backend %[req.hdr(host),lower,map(" +
         dir.File("hosts.map") +
         ",be_app)]\n"
         "backend be_app\n"
         "    server SRV_1 127.0.0.1:" +
         std::to_string(backend_port) +
         "\n"
         "    server SRV_2 192.0.2.1:80 disabled\n"
         "backend be_other\n"
         "    server o1 127.0.0.1:" +
         std::to_string(backend_port) + "\n";
}

Backend::Backend(const TempDir& dir, const std::string& name) {
  const char* binary = std::getenv("HAWK_TEST_BACKEND");
  if (binary == nullptr) {
    error_ = "HAWK_TEST_BACKEND is not set";
    return;
  }
  port_ = FreeTcpPort();
  SubprocessOptions options;
  options.argv = {binary, "--listen", "127.0.0.1:" + std::to_string(port_), "--name", name};
  options.stdout_path = dir.File("backend-" + name + ".log");
  options.stderr_path = options.stdout_path;
  process_ = Subprocess::Spawn(options, &error_);
  if (!process_) return;
  bool up = WaitUntil(
      [&] { return ReadFile(options.stdout_path).find("listening on") != std::string::npos; },
      std::chrono::seconds(5));
  if (!up) {
    error_ = "backend did not start: " + ReadFile(options.stdout_path);
    process_.reset();
  }
}

long ResidentKib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

bool ReadyWithACurrentWorker(const HawkProcess& hawk) {
  return Fetch(hawk.probe_address(), "GET", "/readyz").status == 200 &&
         !hawk.Workers().PidsWithRole("CURRENT").empty();
}

bool EveryWorkerHolds(const HawkProcess& hawk, const std::string& version) {
  WorkersView view = hawk.Workers();
  if (!view.ok || !view.master_reachable || view.workers.empty()) return false;
  for (const WorkerView& w : view.workers) {
    if (!w.in_sync || w.applied_version != version) return false;
  }
  return true;
}

bool EveryRelayedWorkerHolds(const HawkProcess& hawk, const std::string& version) {
  WorkersView view = hawk.Workers();
  if (!view.ok || !view.master_reachable || view.PidsWithRole("CURRENT").empty()) return false;
  for (const WorkerView& w : view.workers) {
    if (!w.not_relayed.empty()) continue;
    if (!w.in_sync || w.applied_version != version) return false;
  }
  return true;
}

RunResult RunHawk(const TempDir& dir, std::vector<std::string> args,
                  std::chrono::milliseconds deadline) {
  SubprocessOptions options;
  options.argv = {std::getenv("HAWK_BINARY")};
  for (std::string& a : args) options.argv.push_back(std::move(a));
  options.stdout_path = dir.File("run-output.txt");
  options.stderr_path = options.stdout_path;
  ::unlink(options.stdout_path.c_str());
  RunResult run;
  auto process = Subprocess::Spawn(options, &run.output);
  if (process == nullptr) return run;
  bool exited = process->WaitExit(deadline);
  run.output = ReadFile(options.stdout_path);
  if (!exited) {
    run.output += "\n(hawk did not exit in time: stopped by the test)";
    return run;  // the Subprocess's destructor stops it
  }
  run.exit_code = process->exit_code();
  return run;
}

HawkProcess::HawkProcess(const TempDir& dir, const std::string& master_socket,
                         std::vector<std::string> extra_args)
    : socket_(dir.File("hawk.sock")), log_(dir.File("hawk.log")) {
  const char* binary = std::getenv("HAWK_BINARY");
  if (binary == nullptr) {
    error_ = "HAWK_BINARY is not set";
    return;
  }
  probe_port_ = FreeTcpPort();
  SubprocessOptions options;
  options.argv = {binary,           "--master-socket", master_socket, "--listen", "unix:" + socket_,
                  "--probe-listen", probe_address(),   "--log-level", "debug"};
  for (std::string& arg : extra_args) options.argv.push_back(std::move(arg));
  options.stdout_path = log_;
  options.stderr_path = log_;
  process_ = Subprocess::Spawn(options, &error_);
}

HawkProcess::~HawkProcess() {
  if (process_) process_->Stop();
}

std::string HawkProcess::LogTail() const {
  std::string text = ReadFile(log_);
  return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
}

bool HawkProcess::WaitServing(std::chrono::milliseconds deadline) {
  return WaitUntil(
      [&] {
        HttpResult r = Get("/healthz");
        return r.ok && r.status == 200;
      },
      deadline, std::chrono::milliseconds(10));
}

HttpResult HawkProcess::Get(const std::string& target) const {
  return Fetch(api_address(), "GET", target, "", std::chrono::seconds(5));
}

HttpResult HawkProcess::Put(const std::string& target, const std::string& body) const {
  return Fetch(api_address(), "PUT", target, body, std::chrono::seconds(10));
}

HttpResult HawkProcess::Patch(const std::string& target, const std::string& body) const {
  return Fetch(api_address(), "PATCH", target, body, std::chrono::seconds(10));
}

HttpResult HawkProcess::Post(const std::string& target, const std::string& body,
                             std::chrono::milliseconds timeout) const {
  return Fetch(api_address(), "POST", target, body, timeout);
}

std::vector<ServerRow> ServerRowsFromText(const std::string& text, const std::string& backend) {
  std::vector<std::string> header;
  std::vector<ServerRow> rows;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<std::string> cols = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (absl::StartsWith(line, "# be_id")) {
      header.assign(cols.begin() + 1, cols.end());
      continue;
    }
    if (header.empty() || cols.size() < header.size() || cols[1] != backend) continue;
    ServerRow& row = rows.emplace_back();
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == "srv_name") row.name = cols[i];
      if (header[i] == "srv_addr") row.address = cols[i];
      if (header[i] == "srv_port") row.port = std::stoi(cols[i]);
      if (header[i] == "srv_admin_state") row.admin = std::stoi(cols[i]);
      if (header[i] == "srv_uweight") row.weight = std::stoi(cols[i]);
    }
  }
  return rows;
}

ServerRow ServerRowFromText(const std::string& text, const std::string& backend,
                            const std::string& server) {
  ServerRow found;
  for (ServerRow& row : ServerRowsFromText(text, backend)) {
    if (row.name == server) found = std::move(row);
  }
  return found;
}

ServerRow ReadServerRow(const std::string& master_socket, int pid, const std::string& backend,
                        const std::string& server) {
  return ServerRowFromText(MasterCli::Command(master_socket, "@!" + std::to_string(pid) +
                                                                 " show servers state " + backend),
                           backend, server);
}

WorkersView HawkProcess::Workers() const {
  HttpResult r = Get("/v1/workers");
  if (!r.ok || r.status != 200) {
    WorkersView view;
    view.error = "GET /v1/workers: " + (r.ok ? std::to_string(r.status) + " " + r.body : r.error);
    return view;
  }
  return ParseWorkersView(r.body);
}

}  // namespace hawk::testing

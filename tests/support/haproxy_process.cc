#include "tests/support/haproxy_process.h"

#include <signal.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "tests/support/wait_until.h"

namespace hawk::testing {
namespace {

using std::chrono::milliseconds;

void BecomeSubreaper() {
#ifdef __linux__
  static const bool done = [] {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    return true;
  }();
  (void)done;
#endif
}

// Gone for good: no such process, or a zombie that someone else will reap. Reaps it first if it
// is our (adopted) child.
bool Gone(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, WNOHANG);
  if (ProcessAlive(pid)) return false;
  return ParentPid(pid) != ::getpid();
}

}  // namespace

std::string HaproxyProcess::DefaultBinary() {
  const char* env = std::getenv("HAWK_HAPROXY_BINARY");
  return env != nullptr && *env != '\0' ? env : "/usr/sbin/haproxy";
}

HaproxyProcess::HaproxyProcess(const TempDir& dir, std::string config, std::string binary)
    : binary_(std::move(binary)),
      config_(std::move(config)),
      config_path_(dir.File("haproxy.cfg")),
      master_socket_(dir.File("master.sock")),
      log_path_(dir.File("haproxy.log")) {}

HaproxyProcess::~HaproxyProcess() { Stop(); }

Result HaproxyProcess::Start(milliseconds deadline) {
  if (process_) return Result::Error("HaproxyProcess: already started");
  if (master_socket_.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Result::Error("HaproxyProcess: master socket path too long: " + master_socket_);
  }
  if (Result r = WriteConfig(config_); !r) return r;
  BecomeSubreaper();

  SubprocessOptions options;
  options.argv = {binary_, "-W", "-S", master_socket_, "-f", config_path_};
  options.stdout_path = log_path_;
  options.stderr_path = log_path_;
  options.new_process_group = true;
  std::string error;
  process_ = Subprocess::Spawn(std::move(options), &error);
  if (!process_) return Result::Error(error);

  std::string last_error;
  bool exited = false;
  bool ready = WaitUntil(
      [&] {
        if (!process_->Running()) {
          exited = true;
          return true;
        }
        pid_t serving = CurrentWorkerPid(milliseconds(500), &last_error);
        if (serving <= 0 && last_error.empty()) last_error = "no worker serves yet";
        return serving > 0;
      },
      deadline, milliseconds(10));
  if (ready && !exited) return Result::Ok();
  std::string message = exited ? "haproxy exited during start (" + process_->DescribeExit() + ")"
                               : "haproxy had no serving worker within " +
                                     std::to_string(deadline.count()) + " ms (" + last_error + ")";
  Stop();
  return Result::Error(message + "\n--- " + log_path_ + " ---\n" + LogTail());
}

bool HaproxyProcess::MasterRunning() { return process_ && process_->Running(); }

Result HaproxyProcess::WriteConfig(const std::string& text) {
  config_ = text;
  if (!WriteFile(config_path_, text)) {
    return Result::Error("HaproxyProcess: cannot write " + config_path_);
  }
  return Result::Ok();
}

Result HaproxyProcess::ReloadViaCli(milliseconds timeout) {
  CliReply reply = MasterCli::Run(master_socket_, "reload", timeout);
  // A connect failure means nothing was sent. After the command went out, a reset instead of
  // a clean EOF still means the master took it (it closes every connection when it re-execs).
  if (!reply.ok && reply.error_number != 0) {
    return Result::Error("reload via " + master_socket_ + ": " + reply.error);
  }
  if (!reply.ok && reply.error.find("timeout") != std::string::npos) {
    return Result::Error("reload via " + master_socket_ + ": " + reply.error);
  }
  return Result::Ok();
}

Result HaproxyProcess::ReloadViaSignal() {
  if (!process_ || !process_->Signal(SIGUSR2)) {
    return Result::Error("reload: cannot signal the master (not running)");
  }
  return Result::Ok();
}

pid_t HaproxyProcess::WaitForNewWorker(pid_t old_worker_pid, milliseconds deadline) {
  pid_t found = -1;
  WaitUntil(
      [&] {
        pid_t serving = CurrentWorkerPid(milliseconds(500));
        if (serving <= 0 || serving == old_worker_pid) return false;
        found = serving;
        return true;
      },
      deadline, milliseconds(10));
  return found;
}

pid_t HaproxyProcess::CurrentWorkerPid(milliseconds timeout, std::string* error) {
  auto list = ShowProc(timeout, error);
  if (!list) return -1;
  // Either section: 3.1+ lists a worker that is still parsing its configuration under
  // `# workers` (it answers `Can't find the target PID` until it is ready), and after a failed
  // reload 3.4 lists the worker that still serves under `# old workers`.
  std::vector<int> pids = list->workers;
  pids.insert(pids.end(), list->old_workers.begin(), list->old_workers.end());
  for (int pid : pids) {
    std::string info =
        MasterCli::Command(master_socket_, "@!" + std::to_string(pid) + " show info", timeout);
    if (info.find("\nPid: " + std::to_string(pid) + "\n") != std::string::npos &&
        info.find("\nStopping: 0\n") != std::string::npos) {
      return pid;
    }
  }
  if (error != nullptr) *error = "no listed worker answers `show info` with `Stopping: 0` yet";
  return -1;
}

HaproxyVersion HaproxyProcess::BinaryVersion(const std::string& binary) {
  HaproxyVersion version;
  std::string output;
  if (FILE* pipe = ::popen((binary + " -v 2>&1").c_str(), "r")) {
    char buffer[256];
    while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
    ::pclose(pipe);
  }
  // "HAProxy version 3.4.7-1 2026/10/14 - https://haproxy.org/"
  size_t at = output.find("version ");
  if (at != std::string::npos) {
    std::sscanf(output.c_str() + at, "version %d.%d", &version.major, &version.minor);
  }
  return version;
}

std::optional<ProcList> HaproxyProcess::ShowProc(milliseconds timeout, std::string* error) {
  auto list = MasterCli::ShowProc(master_socket_, timeout, error);
  if (list) Remember(*list);
  return list;
}

std::vector<pid_t> HaproxyProcess::known_worker_pids() const {
  return std::vector<pid_t>(known_workers_.begin(), known_workers_.end());
}

void HaproxyProcess::Remember(const ProcList& list) {
  // Forget pids that are gone, so that a recycled pid is never signalled or waited for.
  for (auto it = known_workers_.begin(); it != known_workers_.end();) {
    it = Gone(*it) ? known_workers_.erase(it) : std::next(it);
  }
  known_workers_.insert(list.workers.begin(), list.workers.end());
  known_workers_.insert(list.old_workers.begin(), list.old_workers.end());
}

bool HaproxyProcess::WaitWorkersGone(milliseconds deadline) {
  return WaitUntil(
      [this] {
        for (auto it = known_workers_.begin(); it != known_workers_.end();) {
          it = Gone(*it) ? known_workers_.erase(it) : std::next(it);
        }
        return known_workers_.empty();
      },
      deadline, milliseconds(2));
}

void HaproxyProcess::Kill() {
  if (!process_ || finished_) return;
  if (process_->Running()) ShowProc(milliseconds(300));  // learn the workers we have not seen
  for (pid_t pid : known_workers_) {
    if (ProcessAlive(pid) && ProcessName(pid) == "haproxy") ::kill(pid, SIGKILL);
  }
  process_->SignalGroup(SIGKILL);
  process_->Signal(SIGKILL);
  process_->WaitExit(std::chrono::seconds(10));
  WaitWorkersGone(std::chrono::seconds(5));
  Finish();
}

void HaproxyProcess::Stop() {
  if (!process_ || finished_) return;
  if (process_->Running()) {
    ShowProc(milliseconds(300));
    process_->Signal(SIGTERM);
    process_->WaitExit(std::chrono::seconds(5));
  }
  if (process_->Running() || !WaitWorkersGone(std::chrono::seconds(2))) {
    Kill();
    return;
  }
  Finish();
}

void HaproxyProcess::Finish() {
  // Anything else left in the group; then never signal the group again: once it is empty its
  // id may be recycled.
  process_->SignalGroup(SIGKILL);
  WaitUntil([this] { return ProcessGroupGone(process_->pgid()); }, std::chrono::seconds(2),
            milliseconds(2));
  finished_ = true;
}

std::string HaproxyProcess::LogTail(size_t max_bytes) const {
  std::string log = ReadFile(log_path_);
  if (log.size() <= max_bytes) return log;
  return "…" + log.substr(log.size() - max_bytes);
}

}  // namespace hawk::testing

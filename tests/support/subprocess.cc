#include "tests/support/subprocess.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/support/wait_until.h"

extern char** environ;

namespace hawk::testing {
namespace {

std::vector<std::string> BuildEnvironment(
    const std::vector<std::pair<std::string, std::string>>& additions) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    std::string key = entry.substr(0, eq);
    if (vars.emplace(key, entry).second) order.push_back(key);
  }
  for (const auto& [key, value] : additions) {
    if (vars.find(key) == vars.end()) order.push_back(key);
    vars[key] = key + "=" + value;
  }
  std::vector<std::string> env;
  env.reserve(order.size());
  for (const auto& key : order) env.push_back(vars[key]);
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::unique_ptr<Subprocess> Subprocess::Spawn(SubprocessOptions options, std::string* error) {
  if (options.argv.empty()) {
    if (error != nullptr) *error = "Subprocess: empty argv";
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const char* out = options.stdout_path.empty() ? "/dev/null" : options.stdout_path.c_str();
  const char* err = options.stderr_path.empty() ? "/dev/null" : options.stderr_path.c_str();
  constexpr int kFlags = O_WRONLY | O_CREAT | O_APPEND;
  posix_spawn_file_actions_addopen(&actions, 1, out, kFlags, 0644);
  if (!options.stderr_path.empty() && options.stderr_path == options.stdout_path) {
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, err, kFlags, 0644);
  }

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all;
  sigfillset(&all);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
  if (options.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);

  std::vector<std::string> argv_strings = options.argv;
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<std::string> env_strings = BuildEnvironment(options.env);
  std::vector<char*> envp = CStrings(env_strings);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    if (error != nullptr) *error = "spawn " + options.argv[0] + ": " + std::strerror(rc);
    return nullptr;
  }
  return std::unique_ptr<Subprocess>(new Subprocess(std::move(options), pid));
}

Subprocess::~Subprocess() { Stop(); }

bool Subprocess::Running() {
  if (reaped_) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    wait_status_ = status;
    return false;
  }
  if (r < 0 && errno == ECHILD) {  // someone else reaped it; treat as gone
    reaped_ = true;
    return false;
  }
  return true;
}

bool Subprocess::Signal(int sig) {
  if (!Running()) return false;
  return ::kill(pid_, sig) == 0;
}

bool Subprocess::SignalGroup(int sig) {
  if (!options_.new_process_group) return false;
  return ::kill(-pid_, sig) == 0;
}

bool Subprocess::WaitExit(std::chrono::milliseconds deadline) {
  return WaitUntil([this] { return !Running(); }, deadline, std::chrono::milliseconds(2));
}

void Subprocess::Stop() {
  bool group = options_.stop_signals_group && options_.new_process_group;
  if (Running()) {
    if (group) {
      SignalGroup(SIGTERM);
    } else {
      Signal(SIGTERM);
    }
    if (!WaitExit(options_.stop_grace)) {
      if (group) SignalGroup(SIGKILL);
      Signal(SIGKILL);
      WaitExit(std::chrono::seconds(10));
    }
  }
  if (group && !group_swept_) {
    // Stragglers; afterwards the group id may be recycled, so never signal it again.
    SignalGroup(SIGKILL);
    WaitUntil([this] { return ProcessGroupGone(pid_); }, std::chrono::seconds(2),
              std::chrono::milliseconds(2));
    group_swept_ = true;
  }
}

int Subprocess::exit_code() const {
  return reaped_ && WIFEXITED(wait_status_) ? WEXITSTATUS(wait_status_) : -1;
}

int Subprocess::term_signal() const {
  return reaped_ && WIFSIGNALED(wait_status_) ? WTERMSIG(wait_status_) : 0;
}

std::string Subprocess::DescribeExit() const {
  if (!reaped_) return "running";
  if (WIFEXITED(wait_status_)) return "exit code " + std::to_string(WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) return "signal " + std::to_string(WTERMSIG(wait_status_));
  return "status " + std::to_string(wait_status_);
}

namespace {

struct ProcStat {
  char state = '?';
  pid_t ppid = -1;
  pid_t pgrp = -1;
};

// The fields of /proc/<pid>/stat after the command name: state, ppid, pgrp, …
bool ReadStat(pid_t pid, ProcStat* stat) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return false;
  auto close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 1));
  long ppid = 0;
  long pgrp = 0;
  if (!(rest >> stat->state >> ppid >> pgrp)) return false;
  stat->ppid = static_cast<pid_t>(ppid);
  stat->pgrp = static_cast<pid_t>(pgrp);
  return true;
}

// Calls `fn(pid, stat)` for every process in /proc.
template <typename Fn>
void ForEachProcess(Fn fn) {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return;
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    ProcStat stat;
    if (ReadStat(static_cast<pid_t>(pid), &stat)) fn(static_cast<pid_t>(pid), stat);
  }
  ::closedir(dir);
}

}  // namespace

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  ProcStat stat;
  if (!ReadStat(pid, &stat)) return true;  // no /proc: trust kill()
  return stat.state != 'Z' && stat.state != 'X';
}

std::vector<pid_t> ChildPids() {
  std::vector<pid_t> children;
  pid_t self = ::getpid();
  ForEachProcess([&](pid_t pid, const ProcStat& stat) {
    if (stat.ppid == self) children.push_back(pid);
  });
  return children;
}

pid_t ParentPid(pid_t pid) {
  ProcStat stat;
  return ReadStat(pid, &stat) ? stat.ppid : -1;
}

bool ProcessGroupGone(pid_t pgid) {
  if (pgid <= 0) return true;
  pid_t self = ::getpid();
  bool gone = true;
  ForEachProcess([&](pid_t pid, const ProcStat& stat) {
    if (stat.pgrp != pgid) return;
    bool zombie = stat.state == 'Z' || stat.state == 'X';
    if (zombie && stat.ppid == self) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) != pid) gone = false;
    } else if (!zombie) {
      gone = false;
    }
  });
  return gone;
}

std::string ProcessName(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  if (in) std::getline(in, name);
  return name;
}

}  // namespace hawk::testing

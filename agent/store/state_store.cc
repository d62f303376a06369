#include "agent/store/state_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/base/status_field.h"
#include "agent/model/desired_json.h"
#include "agent/store/atomic_file.h"

namespace hawk::store {
namespace {

// `operation path: strerror(err)`, with the code errno maps to.
absl::Status ErrnoError(int err, absl::string_view operation, absl::string_view path) {
  return absl::ErrnoToStatus(err, absl::StrCat(operation, " ", path));
}

absl::Status Precondition(absl::string_view what, int err, absl::string_view operation,
                          absl::string_view path) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, ": ", ErrnoError(err, operation, path).message()));
}

// mkdir -p, mode 0700 for the directories it creates.
absl::Status MakeDirectories(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string prefix = dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return Precondition(absl::StrCat("cannot create state directory ", dir), errno, "mkdir",
                          prefix);
    }
    if (slash == std::string::npos) return absl::OkStatus();
  }
}

// Removes `desired-state.json.tmp-<pid>` files whose process no longer exists (a crash between
// open and rename). Best effort: a leftover file costs only disk space.
void RemoveStaleTempFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::string prefix = absl::StrCat(kStateFileName, kTempSuffix);
  while (struct dirent* entry = ::readdir(d)) {
    absl::string_view name(entry->d_name);
    int pid = 0;
    if (!absl::ConsumePrefix(&name, prefix) || !absl::SimpleAtoi(name, &pid) || pid <= 0) continue;
    if (pid != ::getpid() && (::kill(pid, 0) == 0 || errno != ESRCH)) continue;
    ::unlink(absl::StrCat(dir, "/", entry->d_name).c_str());
  }
  ::closedir(d);
}

}  // namespace

StateStore::StateStore(std::string dir)
    : dir_(std::move(dir)), path_(absl::StrCat(dir_, "/", kStateFileName)) {}

absl::StatusOr<std::unique_ptr<StateStore>> StateStore::Open(std::string dir) {
  if (dir.empty()) return absl::InvalidArgumentError("the state directory path is empty");
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (absl::Status status = MakeDirectories(dir); !status.ok()) return status;
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return Precondition(absl::StrCat("cannot use state directory ", dir), errno, "stat", dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("state directory ", dir, " exists and is not a directory"));
  }
  // access(W_OK) would be wrong for root and for read-only mounts: try what Save does.
  std::string probe = absl::StrCat(dir, "/.hawk-write-probe-", ::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return Precondition(absl::StrCat("state directory ", dir, " is not writable"), errno, "create",
                        probe);
  }
  ::close(fd);
  ::unlink(probe.c_str());
  RemoveStaleTempFiles(dir);
  return std::unique_ptr<StateStore>(new StateStore(std::move(dir)));
}

absl::StatusOr<absl::optional<model::DesiredState>> StateStore::Load() {
  absl::StatusOr<std::string> contents =
      ReadFileBounded(path_, kMaxStateFileBytes, "load desired state");
  if (absl::IsNotFound(contents.status())) return absl::optional<model::DesiredState>();
  if (absl::IsDataLoss(contents.status())) {
    return absl::DataLossError(
        absl::StrCat("desired state file ", path_, " is corrupt: ", contents.status().message()));
  }
  if (!contents.ok()) return contents.status();
  absl::StatusOr<model::DesiredState> state = model::ParseDesiredState(*contents);
  if (!state.ok()) {
    absl::Status loss = absl::DataLossError(
        absl::StrCat("desired state file ", path_, " is corrupt: ", state.status().message()));
    std::string field = base::FieldOf(state.status());
    return field.empty() ? loss : base::WithField(std::move(loss), field);
  }
  return absl::optional<model::DesiredState>(*std::move(state));
}

absl::Status StateStore::Save(const model::DesiredState& state) {
  std::string json = model::DesiredStateToJson(state);
  json.push_back('\n');
  return WriteFileAtomically(path_, json, 0600, "save desired state");
}

}  // namespace hawk::store

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

// Closes the descriptor on scope exit unless Close() already did.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and returns close()'s errno (0 on success): a failed close can mean lost data.
  int Close() {
    int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

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

// 0, or the errno of the failed write.
int WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

absl::Status FsyncDirectory(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError(errno, "save desired state: open directory", dir);
  if (::fsync(fd.get()) != 0) return ErrnoError(errno, "save desired state: fsync directory", dir);
  return absl::OkStatus();
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
  Fd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return absl::optional<model::DesiredState>();
    return ErrnoError(errno, "load desired state: open", path_);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(errno, "load desired state: stat", path_);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("load desired state: ", path_, " is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxStateFileBytes) {
    return absl::DataLossError(absl::StrCat("desired state file ", path_, " is corrupt: ",
                                            st.st_size, " bytes, more than ", kMaxStateFileBytes));
  }
  std::string contents;
  contents.reserve(static_cast<size_t>(st.st_size));
  char buffer[64 * 1024];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "load desired state: read", path_);
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
    if (contents.size() > kMaxStateFileBytes) {  // it grew after fstat
      return absl::DataLossError(absl::StrCat(
          "desired state file ", path_, " is corrupt: more than ", kMaxStateFileBytes, " bytes"));
    }
  }
  absl::StatusOr<model::DesiredState> state = model::ParseDesiredState(contents);
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
  std::string temp = absl::StrCat(path_, kTempSuffix, ::getpid());
  // O_NOFOLLOW: never write through a symlink planted at the temporary name. A directory there
  // fails with EISDIR and is left alone: it is not ours to remove.
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) return ErrnoError(errno, "save desired state: create", temp);
  // From here on, every failure removes the temporary file; `err` is read before unlink runs.
  auto fail = [&temp](int err, absl::string_view operation, absl::string_view path) {
    ::unlink(temp.c_str());
    return ErrnoError(err, absl::StrCat("save desired state: ", operation), path);
  };
  if (int err = WriteAll(fd.get(), json); err != 0) return fail(err, "write", temp);
  if (::fsync(fd.get()) != 0) return fail(errno, "fsync", temp);
  if (int err = fd.Close(); err != 0) return fail(err, "close", temp);
  if (::rename(temp.c_str(), path_.c_str()) != 0) {
    return fail(errno, absl::StrCat("rename ", temp, " to"), path_);
  }
  // The rename is durable only once the directory entry is.
  return FsyncDirectory(dir_);
}

}  // namespace hawk::store

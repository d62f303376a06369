#include "agent/store/confined_dir.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/base/errno_status.h"
#include "agent/base/unique_fd.h"

namespace hawk::store {
namespace {

using Fd = base::UniqueFd;
using base::ErrnoError;
using base::WriteAll;

// `path` made absolute (against the working directory) without empty or `.` components.
// InvalidArgument, naming `what`, when it has a `..` component: resolving one from the text alone
// could name another directory than the kernel would (a symlink before it).
absl::StatusOr<std::string> Normalize(const std::string& path, absl::string_view what) {
  std::string absolute = path;
  if (!absl::StartsWith(path, "/")) {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) {
      return ErrnoError(errno, what, ": getcwd for ", path);
    }
    absolute = absl::StrCat(cwd, "/", path);
  }
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(absolute, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", path, ": has a `..` component; name the directory without one"));
    }
    parts.push_back(part);
  }
  return absl::StrCat("/", absl::StrJoin(parts, "/"));
}

// `dir` + "/", for prefix checks ("/" stays "/").
std::string WithSlash(const std::string& dir) { return dir == "/" ? dir : dir + "/"; }

bool IsInside(absl::string_view path, const std::string& dir) {
  return path == dir || absl::StartsWith(path, WithSlash(dir));
}

ConfinedFile FileOf(const struct stat& st) {
  ConfinedFile file;
  file.device = static_cast<uint64_t>(st.st_dev);
  file.inode = static_cast<uint64_t>(st.st_ino);
  file.size = static_cast<int64_t>(st.st_size);
  file.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  file.ownership = FileOwnership{static_cast<mode_t>(st.st_mode & 07777), st.st_uid, st.st_gid};
  return file;
}

uint64_t RandomSuffix() {
  uint64_t value = 0;
  if (::getrandom(&value, sizeof(value), GRND_NONBLOCK) == static_cast<ssize_t>(sizeof(value))) {
    return value;
  }
  // No entropy yet (early boot): unpredictable enough for a name created O_EXCL.
  struct timespec now {};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  static uint64_t counter = 0;
  return (static_cast<uint64_t>(now.tv_nsec) << 20) ^ static_cast<uint64_t>(now.tv_sec) ^
         (++counter * 0x9e3779b97f4a7c15ULL);
}

// The regular file `name` in the directory `parent`, not following a final symlink.
absl::StatusOr<struct stat> StatRegular(int parent, const std::string& name,
                                        absl::string_view path) {
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError("no such file: hawk replaces only files that exist");
    }
    return ErrnoError(err, "stat ", path);
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(
        "a symbolic link: hawk never replaces one (nor writes where it leads)");
  }
  if (!S_ISREG(st.st_mode)) return absl::FailedPreconditionError("not a regular file");
  return st;
}

}  // namespace

struct ConfinedDir::Target {
  Fd parent;             // the file's directory, O_RDONLY (fsync needs it)
  std::string name;      // the file's name in it
  std::string absolute;  // for messages
};

absl::StatusOr<std::unique_ptr<ConfinedDir>> ConfinedDir::Create(const std::string& dir,
                                                                 ConfinedDirOptions options) {
  if (dir.empty()) return absl::InvalidArgumentError(absl::StrCat(options.name, ": empty path"));
  absl::StatusOr<std::string> path = Normalize(dir, options.name);
  if (!path.ok()) return path.status();
  Fd fd(::open(path->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError(errno, options.name, ": open ", *path);
  std::unique_ptr<ConfinedDir> confined(new ConfinedDir(std::move(fd), *path, std::move(options)));
  const ConfinedDirOptions& opts = confined->options_;
  for (const ConfinedDirOptions::Excluded& excluded : opts.excluded) {
    if (excluded.path.empty()) continue;
    absl::StatusOr<std::string> excluded_path = Normalize(excluded.path, excluded.name);
    if (!excluded_path.ok()) return excluded_path.status();
    ExcludedDir entry{excluded.name, *excluded_path};
    struct stat st {};
    if (::stat(excluded_path->c_str(), &st) == 0) {
      entry.exists = true;
      entry.device = static_cast<uint64_t>(st.st_dev);
      entry.inode = static_cast<uint64_t>(st.st_ino);
    } else if (errno != ENOENT) {
      return ErrnoError(errno, excluded.name, ": stat ", *excluded_path);
    }
    if (IsInside(*path, entry.path)) {
      return absl::PermissionDeniedError(absl::StrCat(opts.name, " ", *path, " is inside ",
                                                      entry.name, " ", entry.path,
                                                      ": hawk never writes there"));
    }
    confined->excluded_.push_back(std::move(entry));
  }
  // The directory, or one above it, may be an excluded one under another path: walk up to "/".
  Fd cur(::openat(confined->fd_.get(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  for (int level = 0; cur.get() >= 0 && level < 4096; ++level) {
    struct stat st {};
    if (::fstat(cur.get(), &st) != 0) break;
    for (const ExcludedDir& excluded : confined->excluded_) {
      if (excluded.exists && excluded.device == static_cast<uint64_t>(st.st_dev) &&
          excluded.inode == static_cast<uint64_t>(st.st_ino)) {
        return absl::PermissionDeniedError(absl::StrCat(opts.name, " ", *path, " is inside ",
                                                        excluded.name, " ", excluded.path,
                                                        ": hawk never writes there"));
      }
    }
    Fd up(::openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    struct stat up_st {};
    if (up.get() < 0 || ::fstat(up.get(), &up_st) != 0) break;
    if (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino) break;  // "/"
    cur = std::move(up);
  }
  return confined;
}

ConfinedDir::ConfinedDir(base::UniqueFd fd, std::string path, ConfinedDirOptions options)
    : fd_(std::move(fd)),
      device_(0),
      inode_(0),
      path_(std::move(path)),
      options_(std::move(options)) {
  struct stat st {};
  if (::fstat(fd_.get(), &st) == 0) {
    device_ = static_cast<uint64_t>(st.st_dev);
    inode_ = static_cast<uint64_t>(st.st_ino);
  }
}

ConfinedDir::~ConfinedDir() = default;

absl::StatusOr<ConfinedDir::Target> ConfinedDir::Resolve(absl::string_view path) const {
  if (path.empty()) return absl::InvalidArgumentError("empty path");
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("the path holds a NUL byte");
  }
  // Lexically first: what the kernel would resolve differently from the text is refused.
  std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
  for (size_t i = 0; i < parts.size(); ++i) {
    absl::string_view part = parts[i];
    if (part.empty() && i == 0) continue;  // the leading '/' of an absolute path
    if (part.empty()) {
      return absl::InvalidArgumentError(
          "has an empty component (`//`, or a `/` at the end): hawk resolves paths as written");
    }
    if (part == "." || part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("has a `", part, "` component: hawk resolves none"));
    }
  }
  absl::string_view relative = path;
  if (absl::StartsWith(path, "/")) {
    if (path == path_) {
      return absl::InvalidArgumentError(
          absl::StrCat("names ", options_.name, " ", path_, " itself, not a file in it"));
    }
    std::string prefix = WithSlash(path_);
    if (!absl::StartsWith(path, prefix)) {
      return absl::PermissionDeniedError(
          absl::StrCat("outside ", options_.name, " ", path_, ": hawk writes only there"));
    }
    relative.remove_prefix(prefix.size());
  }
  std::vector<std::string> components = absl::StrSplit(relative, '/');
  std::string absolute = absl::StrCat(WithSlash(path_), relative);
  for (const ExcludedDir& excluded : excluded_) {
    if (IsInside(absolute, excluded.path)) {
      return absl::PermissionDeniedError(
          absl::StrCat("inside ", excluded.name, " ", excluded.path, ": hawk never writes there"));
    }
  }
  absl::StatusOr<int> parent = OpenParent(components);
  if (!parent.ok()) return parent.status();
  Target target{Fd(*parent), components.back(), absolute};
  absl::Status allowed = CheckNotExcluded(target.parent.get(), components.size() - 1);
  if (!allowed.ok()) return allowed;
  return target;
}

absl::StatusOr<int> ConfinedDir::OpenParent(const std::vector<std::string>& components) const {
  if (openat2_ && options_.use_openat2) {
    std::string parent = components.size() == 1
                             ? std::string(".")
                             : absl::StrJoin(components.begin(), components.end() - 1, "/");
    struct open_how how {};
    how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = ::syscall(SYS_openat2, fd_.get(), parent.c_str(), &how, sizeof(how));
    if (fd >= 0) return static_cast<int>(fd);
    // Older kernels answer ENOSYS, some seccomp profiles EPERM: walk from now on. Any other
    // failure (ELOOP for a symlink, ENOENT, …): the walk finds out which component is to blame,
    // and is as strict.
    if (errno == ENOSYS || errno == EPERM) openat2_ = false;
  }
  return WalkToParent(components);
}

absl::StatusOr<int> ConfinedDir::WalkToParent(const std::vector<std::string>& components) const {
  Fd cur(::openat(fd_.get(), ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (cur.get() < 0) return ErrnoError(errno, "open ", path_);
  std::string so_far = path_;
  for (size_t i = 0; i + 1 < components.size(); ++i) {
    const std::string& component = components[i];
    so_far = absl::StrCat(WithSlash(so_far), component);
    Fd next(::openat(cur.get(), component.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) {
      int err = errno;
      struct stat st {};
      if (::fstatat(cur.get(), component.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) {
          return absl::PermissionDeniedError(
              absl::StrCat(so_far, " is a symbolic link: hawk writes no file reached through one"));
        }
        if (!S_ISDIR(st.st_mode)) {
          return absl::FailedPreconditionError(absl::StrCat(so_far, " is not a directory"));
        }
      }
      return ErrnoError(err, "open directory ", so_far);
    }
    cur = std::move(next);
  }
  int parent = ::openat(cur.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return ErrnoError(errno, "open directory ", so_far);
  return parent;
}

absl::Status ConfinedDir::CheckNotExcluded(int fd, size_t depth) const {
  bool any = false;
  for (const ExcludedDir& excluded : excluded_) any = any || excluded.exists;
  if (!any) return absl::OkStatus();
  Fd cur(::openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  for (size_t level = 0;; ++level) {
    struct stat st {};
    if (cur.get() < 0 || ::fstat(cur.get(), &st) != 0) return ErrnoError(errno, "stat ..");
    uint64_t device = static_cast<uint64_t>(st.st_dev);
    uint64_t inode = static_cast<uint64_t>(st.st_ino);
    if (level == depth) {
      if (device == device_ && inode == inode_) return absl::OkStatus();
      return absl::PermissionDeniedError(
          absl::StrCat("no longer inside ", options_.name, " ", path_, " (moved meanwhile?)"));
    }
    for (const ExcludedDir& excluded : excluded_) {
      if (excluded.exists && excluded.device == device && excluded.inode == inode) {
        return absl::PermissionDeniedError(absl::StrCat(
            "inside ", excluded.name, " ", excluded.path, ": hawk never writes there"));
      }
    }
    cur = Fd(::openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
}

absl::StatusOr<ConfinedFile> ConfinedDir::Lookup(absl::string_view path) const {
  absl::StatusOr<Target> target = Resolve(path);
  if (!target.ok()) return target.status();
  absl::StatusOr<struct stat> st =
      StatRegular(target->parent.get(), target->name, target->absolute);
  if (!st.ok()) return st.status();
  return FileOf(*st);
}

absl::StatusOr<ConfinedFile> ConfinedDir::Replace(absl::string_view path,
                                                  absl::string_view contents) const {
  absl::StatusOr<Target> resolved = Resolve(path);
  if (!resolved.ok()) return resolved.status();
  Target& target = *resolved;
  int parent = target.parent.get();
  absl::StatusOr<struct stat> existing = StatRegular(parent, target.name, target.absolute);
  if (!existing.ok()) return existing.status();
  const FileOwnership kept = FileOf(*existing).ownership;

  // A name nobody can have planted a link at in advance, created by this call only.
  std::string temp;
  Fd fd;
  for (int attempt = 0; attempt < 3 && fd.get() < 0; ++attempt) {
    temp = absl::StrCat(target.name, ".tmp-", ::getpid(), "-",
                        absl::Hex(RandomSuffix(), absl::kZeroPad16));
    fd = Fd(
        ::openat(parent, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0 && errno != EEXIST) break;
  }
  std::string temp_path = absl::StrCat(target.absolute, temp.substr(target.name.size()));
  if (fd.get() < 0) return ErrnoError(errno, "create ", temp_path);
  // From here on, every failure removes the temporary file (the status, errno included, is made
  // before unlinkat runs).
  auto fail = [&](absl::Status status) {
    ::unlinkat(parent, temp.c_str(), 0);
    return status;
  };
  // Before the chmod: a chown may clear set-id bits. Only root may give a file away; anyone may
  // set a group they belong to.
  uid_t euid = ::geteuid();
  uid_t uid = euid == 0 || kept.uid == euid ? kept.uid : static_cast<uid_t>(-1);
  if (::fchown(fd.get(), uid, kept.gid) != 0) {
    return fail(ErrnoError(errno, "keep group ", kept.gid, " on ", temp_path));
  }
  if (::fchmod(fd.get(), kept.mode) != 0) return fail(ErrnoError(errno, "chmod ", temp_path));
  if (int err = WriteAll(fd.get(), contents); err != 0) {
    return fail(ErrnoError(err, "write ", temp_path));
  }
  if (::fsync(fd.get()) != 0) return fail(ErrnoError(errno, "fsync ", temp_path));
  struct stat written {};
  if (::fstat(fd.get(), &written) != 0) return fail(ErrnoError(errno, "stat ", temp_path));
  if (int err = fd.Close(); err != 0) return fail(ErrnoError(err, "close ", temp_path));
  // The file may have been swapped for a symlink (or another file) while this one was written.
  absl::StatusOr<struct stat> now = StatRegular(parent, target.name, target.absolute);
  if (!now.ok()) {
    return fail(absl::Status(now.status().code(), absl::StrCat("changed while hawk wrote it, now ",
                                                               now.status().message())));
  }
  if (now->st_dev != existing->st_dev || now->st_ino != existing->st_ino) {
    return fail(absl::FailedPreconditionError(
        "replaced by another file while hawk wrote it; left as it is"));
  }
  if (::renameat(parent, temp.c_str(), parent, target.name.c_str()) != 0) {
    return fail(ErrnoError(errno, "rename ", temp_path, " to ", target.absolute));
  }
  // The rename is durable only once the directory entry is.
  if (::fsync(parent) != 0) return ErrnoError(errno, "fsync directory of ", target.absolute);
  return FileOf(written);
}

}  // namespace hawk::store

#include "agent/store/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "agent/base/errno_status.h"
#include "agent/base/unique_fd.h"

namespace hawk::store {
namespace {

using Fd = base::UniqueFd;
using base::ErrnoError;
using base::WriteAll;

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status WriteAtomically(const std::string& path, absl::string_view contents, mode_t mode,
                             const FileOwnership* ownership, absl::string_view what);

// A new file at `temp`, or -1 with errno set. Only a file this call creates is ever opened
// (O_EXCL): whatever already holds the name (a leftover of a crashed process that had the same
// pid, or a hard link or symlink someone planted) is unlinked, never truncated, written or
// chowned, and the name is created once more. A directory there fails with EISDIR and is left
// alone: it is not ours to remove.
int CreateExclusive(const std::string& temp, mode_t mode) {
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
  int fd = ::open(temp.c_str(), kFlags, mode);
  if (fd >= 0 || errno != EEXIST) return fd;
  if (::unlink(temp.c_str()) != 0) return -1;
  return ::open(temp.c_str(), kFlags, mode);
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents, mode_t mode,
                                 absl::string_view what) {
  return WriteAtomically(path, contents, mode, nullptr, what);
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 const FileOwnership& ownership, absl::string_view what) {
  return WriteAtomically(path, contents, ownership.mode, &ownership, what);
}

absl::StatusOr<FileOwnership> OwnershipOf(const std::string& path, absl::string_view what) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(errno, what, ": stat ", path);
  return FileOwnership{static_cast<mode_t>(st.st_mode & 07777), st.st_uid, st.st_gid};
}

namespace {

absl::Status WriteAtomically(const std::string& path, absl::string_view contents, mode_t mode,
                             const FileOwnership* ownership, absl::string_view what) {
  std::string temp = absl::StrCat(path, kTempSuffix, ::getpid());
  Fd fd(CreateExclusive(temp, mode));
  if (fd.get() < 0) return ErrnoError(errno, what, ": create ", temp);
  // From here on, every failure removes the temporary file; `err` is read before unlink runs.
  auto fail = [&](int err, absl::string_view operation, absl::string_view target) {
    ::unlink(temp.c_str());
    return ErrnoError(err, what, ": ", operation, " ", target);
  };
  if (ownership != nullptr) {
    // Before the chmod: a chown may clear set-id bits. Only root may give a file away; anyone
    // may set a group they belong to.
    uid_t euid = ::geteuid();
    uid_t uid = euid == 0 || ownership->uid == euid ? ownership->uid : static_cast<uid_t>(-1);
    if (::fchown(fd.get(), uid, ownership->gid) != 0) {
      return fail(errno, absl::StrCat("keep group ", ownership->gid, " of ", path, " on"), temp);
    }
  }
  // open() applies the umask; the caller's mode is what the file must have.
  if (::fchmod(fd.get(), mode) != 0) return fail(errno, "chmod", temp);
  if (int err = WriteAll(fd.get(), contents); err != 0) return fail(err, "write", temp);
  if (::fsync(fd.get()) != 0) return fail(errno, "fsync", temp);
  if (int err = fd.Close(); err != 0) return fail(err, "close", temp);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return fail(errno, absl::StrCat("rename ", temp, " to"), path);
  }
  // The rename is durable only once the directory entry is.
  return SyncDirectory(DirectoryOf(path), what);
}

}  // namespace

absl::Status SyncDirectory(const std::string& dir, absl::string_view what) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoError(errno, what, ": open directory ", dir);
  if (::fsync(fd.get()) != 0) return ErrnoError(errno, what, ": fsync directory ", dir);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes,
                                            absl::string_view what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer (and block the
  // loop); it has no effect on the regular files read here, and anything else is refused below.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) return ErrnoError(errno, what, ": open ", path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError(errno, what, ": stat ", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", path, " is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::DataLossError(
        absl::StrCat(what, ": ", path, " holds ", st.st_size, " bytes, more than ", max_bytes));
  }
  std::string contents;
  contents.reserve(static_cast<size_t>(st.st_size));
  char buffer[64 * 1024];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, what, ": read ", path);
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
    if (contents.size() > max_bytes) {  // it grew after fstat
      return absl::DataLossError(
          absl::StrCat(what, ": ", path, " holds more than ", max_bytes, " bytes"));
    }
  }
  return contents;
}

}  // namespace hawk::store

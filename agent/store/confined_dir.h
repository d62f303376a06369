#pragma once

// ConfinedDir: where hawk may replace a file whose path came from outside (an API client's map or
// ACL name; later, certificates): only inside one directory the operator named, never inside the
// directories it must not touch (--state-dir), never through a symbolic link, never replacing one.
//
// The directory is opened once (O_PATH), by the path the operator gave: symlinks in that path are
// the operator's own. A file's path is then resolved beneath that descriptor, never from its text
// alone: with openat2(2) (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
// Linux 5.6+), or, where the kernel or a seccomp profile refuses openat2, one component at a time
// with O_NOFOLLOW. Paths holding `.`, `..` or empty components are refused before any lookup.
//
// A replacement is atomic and durable, and keeps the file's mode, owner and group: a temporary
// file `<name>.tmp-<pid>-<random>` is created O_EXCL | O_NOFOLLOW in the same directory
// descriptor, fsynced, renamed over the file, and the directory fsynced. Only an existing regular
// file is replaced: hawk never creates one here.
//
// Synchronous, like store/atomic_file.h: each call blocks for its I/O. Not tied to a loop; one
// thread at a time (it remembers whether openat2 works).
//
// Error messages give the reason without repeating the path the caller passed (the caller names
// the object: "map /etc/haproxy/hosts.map: <reason>"); a component they blame is named in full.
// Codes: InvalidArgument for a malformed path, PermissionDenied for a path hawk must not write
// (outside the directory, inside an excluded one, through a symbolic link), NotFound when there is
// no such file, FailedPrecondition when it is not a regular file (a symlink, a directory, …),
// other errno codes as they come.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/base/unique_fd.h"
#include "agent/store/atomic_file.h"

namespace hawk::store {

struct ConfinedDirOptions {
  // How messages name the directory, e.g. "--table-files-dir".
  std::string name = "the directory";
  // A directory nothing is written inside (by its inode, whatever path leads there, and by its
  // path), with how messages name it, e.g. {"--state-dir", "/var/lib/hawk"}. One that does not
  // exist yet is excluded by its path only.
  struct Excluded {
    std::string name;
    std::string path;
  };
  std::vector<Excluded> excluded;
  // false: always resolve one component at a time (as without openat2), for tests.
  bool use_openat2 = true;
};

// A regular file inside the directory, as stat(2) saw it.
struct ConfinedFile {
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  FileOwnership ownership;
};

class ConfinedDir {
 public:
  // Opens `dir`, an existing directory (relative: to the working directory). InvalidArgument for
  // an empty path or one with a `..` component; PermissionDenied when the directory is (inside) an
  // excluded one; the errno code when it cannot be opened. Messages name options.name and `dir`.
  static absl::StatusOr<std::unique_ptr<ConfinedDir>> Create(const std::string& dir,
                                                             ConfinedDirOptions options = {});
  ~ConfinedDir();
  ConfinedDir(const ConfinedDir&) = delete;
  ConfinedDir& operator=(const ConfinedDir&) = delete;

  // The directory as an absolute path without `.` or empty components.
  const std::string& path() const { return path_; }

  // The regular file at `path` (absolute and inside path(), or relative to path()), after the
  // checks Replace makes, without writing anything.
  absl::StatusOr<ConfinedFile> Lookup(absl::string_view path) const;

  // Replaces the regular file at `path` with `contents`, keeping its mode, owner and group (its
  // owner when this process may give it: root, or its own; its group or the write fails). Returns
  // the new file. On an error nothing is left behind and the file is untouched, except that an
  // error from the final directory fsync means the new file is in place but may not survive a
  // crash.
  absl::StatusOr<ConfinedFile> Replace(absl::string_view path, absl::string_view contents) const;

 private:
  struct Target;  // a resolved file: its parent directory's descriptor and its name
  struct ExcludedDir {
    std::string name;
    std::string path;  // absolute, normalized
    bool exists = false;
    uint64_t device = 0;
    uint64_t inode = 0;
  };

  ConfinedDir(base::UniqueFd fd, std::string path, ConfinedDirOptions options);
  absl::StatusOr<Target> Resolve(absl::string_view path) const;
  // The parent directory of `components`' last one, opened for reading (fsync needs that).
  absl::StatusOr<int> OpenParent(const std::vector<std::string>& components) const;
  absl::StatusOr<int> WalkToParent(const std::vector<std::string>& components) const;
  // PermissionDenied when the directory `fd` (`depth` levels below path()) is an excluded one or
  // inside one, or is not below path() after all (moved meanwhile).
  absl::Status CheckNotExcluded(int fd, size_t depth) const;

  base::UniqueFd fd_;  // O_PATH | O_DIRECTORY
  uint64_t device_;    // of the directory
  uint64_t inode_;
  std::string path_;
  ConfinedDirOptions options_;
  std::vector<ExcludedDir> excluded_;
  mutable bool openat2_ = true;  // false once the kernel answered ENOSYS (or a filter EPERM)
};

}  // namespace hawk::store

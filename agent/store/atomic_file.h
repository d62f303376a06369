#pragma once

// Durable whole-file writes and bounded reads, for the files hawk owns or replaces at paths the
// operator gave: the desired state, HAProxy's configuration (POST /v1/reload) and its
// server-state file. Map and ACL files, whose paths come from the API, go through
// store/confined_dir.h instead.
//
// Synchronous: each call blocks the loop for its I/O, fsyncs included. The files are small and
// written only when a controller asks for a change, and a reply must not claim a file is in
// place before it is durable.

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::store {

// Temporary files are `<path>.tmp-<pid>`: the Journal removes those of a process that is gone.
inline constexpr absl::string_view kTempSuffix = ".tmp-";

// Replaces `path` with `contents` atomically and durably: writes `<path>.tmp-<pid>` with `mode`,
// fsyncs it, renames it over `path` and fsyncs the directory. The temporary file is always one
// this call creates (O_EXCL, O_NOFOLLOW): anything already at its name is unlinked, never
// opened, so a hard link planted there cannot make hawk truncate, write or chown the file it
// leads to. On an error before the rename the temporary file is removed and `path` is
// untouched. An error from the final directory fsync means the new file is in place but may not
// survive a crash. Errors name `what` (e.g. "save desired state"), the operation and the path,
// with the code errno maps to.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents, mode_t mode,
                                 absl::string_view what);

// Makes a directory's entries durable: needed after creating or renaming a file in it, and
// before deleting what a just-renamed file covers. Errors name `what` and the directory.
absl::Status SyncDirectory(const std::string& dir, absl::string_view what);

// What a file that hawk replaces must keep: its permission bits, owner and group.
struct FileOwnership {
  mode_t mode = 0;  // permission bits (07777)
  uid_t uid = 0;
  gid_t gid = 0;
};

// The ownership of the file at `path` (following links, as HAProxy does when it reads it).
// NotFound when there is none. Errors name `what` and the path.
absl::StatusOr<FileOwnership> OwnershipOf(const std::string& path, absl::string_view what);

// As above, and the new file gets `ownership`: its group (or the write fails, naming the group:
// a 0640 file must not become readable by another group), its owner when this process may give
// it (root, or its own), and then its mode.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 const FileOwnership& ownership, absl::string_view what);

// The whole regular file at `path`. NotFound when it does not exist; FailedPrecondition when it
// is not a regular file; DataLoss when it holds more than `max_bytes`; other errno codes as they
// come. Errors name `what` and the path.
absl::StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes,
                                            absl::string_view what);

}  // namespace hawk::store

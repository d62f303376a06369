#pragma once

// The one errno → absl::Status mapping hawk uses: `<context>: <strerror>`, with the code
// absl::ErrnoToStatus gives the errno (ENOENT → NotFound, EACCES → PermissionDenied, ENOSPC →
// ResourceExhausted, …), so that an operator reads which operation on which path failed and a
// caller can still branch on the code. Header-only, like unique_fd.h.

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hawk::base {

// `err` with its context, the parts concatenated: ErrnoError(errno, "save state: fsync ", path).
template <typename... Parts>
absl::Status ErrnoError(int err, const Parts&... context) {
  return absl::ErrnoToStatus(err, absl::StrCat(context...));
}

}  // namespace hawk::base

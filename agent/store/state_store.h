#pragma once

// The persisted desired state: one file, `<dir>/desired-state.json`, holding the canonical JSON of
// the last accepted DesiredState (model::DesiredStateToJson), so that hawk restores it at start.
//
// Ownership and threading: a StateStore owns only two paths; it holds no file descriptor between
// calls. Not thread-safe: hawk calls it from its one event-loop thread. Every call is synchronous
// and blocks the loop for its I/O, fsyncs included. That is deliberate: PUT /v1/state must not be
// acknowledged before the state is durable, the file is small (bounded by the 32 MiB body limit,
// usually a few KiB), and saves happen only when a controller pushes a new state.
//
// One hawk per directory: two processes saving into the same directory would race on the final
// rename (each write is still atomic: the file is always one complete state).

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/model/desired.h"
#include "agent/store/atomic_file.h"

namespace hawk::store {

inline constexpr absl::string_view kStateFileName = "desired-state.json";
// Load refuses bigger files: a valid state is at most the 32 MiB request body plus a few bytes.
inline constexpr size_t kMaxStateFileBytes = 64 * 1024 * 1024;

class StateStore {
 public:
  // Creates `dir` (and missing parents, mode 0700; an existing directory keeps its mode), checks
  // that hawk can create files in it, and removes temporary files left by a process that is gone.
  // FailedPrecondition when `dir` cannot be created, is not a directory or is not writable.
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(std::string dir);

  // The saved state; nullopt when none was ever saved. DataLoss (naming the file and the parse
  // error) when the file does not parse or validate: the file is left in place for the caller
  // (and the operator) to decide. Other errors (unreadable file) keep their errno code.
  absl::StatusOr<absl::optional<model::DesiredState>> Load();

  // Replaces the saved state durably: writes the temporary file, fsyncs it, renames it over the
  // state file and fsyncs the directory. On an error before the rename the temporary file is
  // removed and the previous state file is untouched. An error from the final directory fsync
  // means the new file is in place but may not survive a crash: do not acknowledge it either.
  absl::Status Save(const model::DesiredState& state);

  // The state file: `<dir>/desired-state.json`.
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

 private:
  explicit StateStore(std::string dir);

  std::string dir_;
  std::string path_;
};

}  // namespace hawk::store

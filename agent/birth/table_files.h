#pragma once

// TableFiles: the map and ACL files a reload writes so that the new worker is born holding the
// desired tables (step 5 of a reload round, reload/reloader.h), and what a worker born after the
// write holds: which files HAProxy loaded, which of them hawk may write, the rendering and the
// atomic write, each file's identity as hawk last wrote it, and every change to the desired state
// since (plan::WrittenTables). A file nobody touched whose table did not change is not written
// again; a worker that appears after the write is seeded with only the changes since
// (born_with(), read by the reconciler).
//
// Ownership and threading: owns the file identities and the written tables; the app owns it, the
// reload round writes through it, the state service tells it every change (Changed,
// ReplacedWhole) before the reconciler hears of it, and the reconciler reads born_with(). Loop
// thread only. Synchronous file I/O (store/confined_dir.h), no loop and no clock: unit-tested on
// a temporary directory.
//
// A table is written only to the very file HAProxy lists it from (`show map` / `show acl` of the
// current worker, as the same kind), by an absolute path inside the confined directory, reached
// without a symlink; every other one is named with the reason and reaches the new worker over the
// CLI instead.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/plan/written_tables.h"
#include "agent/store/confined_dir.h"

namespace hawk::birth {

// The files the current worker loaded its maps and ACLs from.
struct LoadedTables {
  int pid = 0;
  absl::flat_hash_set<std::string> maps;
  absl::flat_hash_set<std::string> acls;
  std::string error;  // why they are unknown (then nothing is written)
};

// LoadedTables from worker `pid`'s replies to `show map` and `show acl` (or why they failed).
LoadedTables ParseLoadedTables(int pid, const absl::StatusOr<std::string>& show_map,
                               const absl::StatusOr<std::string>& show_acl);

// What one Write did.
struct TablesWriteReport {
  // How many tables the new worker reads from a file hawk wrote (or left as it wrote it).
  size_t maps = 0;
  size_t acls = 0;
  size_t files_written = 0;
  size_t entries_written = 0;
  size_t unchanged = 0;  // files left as hawk wrote them
  // "<kind> <name>: <why>" for each table not written.
  std::vector<std::string> skipped;
};

class TableFiles {
 public:
  // `dir` null: nothing is ever written, and `no_dir` says why. `max_changes_since`: once the
  // changes since a write grow past it, the files are too far behind to seed from (below).
  TableFiles(std::shared_ptr<const store::ConfinedDir> dir, std::string no_dir,
             size_t max_changes_since = 200000);
  TableFiles(const TableFiles&) = delete;
  TableFiles& operator=(const TableFiles&) = delete;

  bool has_dir() const { return dir_ != nullptr; }
  const std::string& no_dir() const { return no_dir_; }

  // Writes every managed map and ACL of `desired` that `loaded` lists; from then on born_with()
  // holds what the files hold. A file still as hawk wrote it (same device, inode, size and mtime:
  // a rename over it or an edit changes one of them) whose table did not change since is left
  // alone.
  TablesWriteReport Write(const model::DesiredState& desired, const LoadedTables& loaded);

  // The desired state changed as `summary` says (`desired` holds it). O(summary).
  void Changed(const model::ChangeSummary& summary, const model::DesiredState& desired);
  // The desired state was replaced in a way no summary describes: the changes since the write are
  // unknown, so no worker is seeded from the files until the next Write.
  void ReplacedWhole() { born_with_.reset(); }

  // What a worker that appears now read from the files at its start, if it started after the last
  // Write: per table, the entries written, and the changes since (null: no Write yet, or forgotten
  // as above). Valid until the next call of a non-const method.
  const plan::WrittenTables* born_with() const {
    return born_with_.has_value() ? &*born_with_ : nullptr;
  }

 private:
  struct FileIdentity {
    uint64_t device = 0;
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
  };
  static FileIdentity IdentityOf(const store::ConfinedFile& file);

  // Whether the last Write left this table in its file and nothing changed it since.
  bool UnchangedSinceWrite(bool acl, const std::string& name) const;

  std::shared_ptr<const store::ConfinedDir> dir_;
  std::string no_dir_;
  size_t max_changes_since_;
  absl::flat_hash_map<std::string, FileIdentity> written_;  // by "map:<name>" / "acl:<name>"
  absl::optional<plan::WrittenTables> born_with_;
};

}  // namespace hawk::birth

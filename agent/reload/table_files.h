#pragma once

// The map and ACL files a reload writes so that the new worker is born holding the desired tables
// (step 5 of a reload round, reloader.h): which files HAProxy loaded, which of them hawk may
// write, the rendering and the atomic write, and each file's identity as hawk last wrote it, so
// that a file nobody touched whose table did not change is not written again.
//
// Synchronous file I/O (store/confined_dir.h), no loop and no clock: unit-tested on a temporary
// directory.
//
// A table is written only to the very file HAProxy lists it from (`show map` / `show acl` of the
// current worker, as the same kind), by an absolute path inside the confined directory, reached
// without a symlink; every other one is named with the reason and reaches the new worker over the
// CLI instead.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "agent/model/desired.h"
#include "agent/store/confined_dir.h"

namespace hawk::reload {

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
struct WrittenTables {
  // Every table the new worker reads from a file hawk wrote (or left as it wrote it): name →
  // entries. What the reconciler's seed of the new worker may skip (Reconciler::TablesWritten).
  absl::flat_hash_map<std::string, int64_t> maps;
  absl::flat_hash_map<std::string, int64_t> acls;
  size_t files_written = 0;
  size_t entries_written = 0;
  size_t unchanged = 0;  // files left as hawk wrote them
  // "<kind> <name>: <why>" for each table not written.
  std::vector<std::string> skipped;
};

class TableFiles {
 public:
  // `dir` null: nothing is ever written, and `no_dir` says why.
  TableFiles(std::shared_ptr<const store::ConfinedDir> dir, std::string no_dir);

  bool has_dir() const { return dir_ != nullptr; }
  const std::string& no_dir() const { return no_dir_; }

  // Writes every managed map and ACL of `desired` that `loaded` lists. `table_unchanged(acl,
  // name)`: whether the table is as it was at the last Write (the reconciler tracks changes
  // since); a file still as hawk wrote it (same device, inode, size and mtime: a rename over it or
  // an edit changes one of them) is then left alone.
  WrittenTables Write(
      const model::DesiredState& desired, const LoadedTables& loaded,
      const std::function<bool(bool acl, const std::string& name)>& table_unchanged);

 private:
  struct FileIdentity {
    uint64_t device = 0;
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
  };
  static FileIdentity IdentityOf(const store::ConfinedFile& file);

  std::shared_ptr<const store::ConfinedDir> dir_;
  std::string no_dir_;
  absl::flat_hash_map<std::string, FileIdentity> written_;  // by "map:<name>" / "acl:<name>"
};

}  // namespace hawk::reload

#pragma once

// ConfigFile: the HAProxy configuration file a reload replaces — the candidate `haproxy -c`
// checks under another name, the previous version kept in `<path>.previous` (and in memory), and
// its restore after a reload that failed. Synchronous file I/O (store/atomic_file.h); no loop.
//
// Every file written here (the configuration, its `.previous`, the candidate, a restore) gets the
// mode, owner and group the configuration has now: a 0640 haproxy.cfg that holds userlist
// passwords or stats credentials must not become world-readable, nor change group. A
// configuration that does not exist yet is created with kNewConfigMode.

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::reload {

// A configuration file hawk reads back (to keep or restore it) is at most this big.
inline constexpr size_t kMaxConfigBytes = 64 * 1024 * 1024;
// A configuration file that does not exist yet is created with this mode.
inline constexpr mode_t kNewConfigMode = 0644;

// What Replace() replaced, for Restore().
struct PreviousConfig {
  absl::optional<std::string> contents;  // nullopt: there was no file
};

// The candidate configuration under `haproxy -c`, removed when this is destroyed. Move-only.
class CandidateFile {
 public:
  CandidateFile(CandidateFile&& other) noexcept;
  CandidateFile& operator=(CandidateFile&& other) noexcept;
  CandidateFile(const CandidateFile&) = delete;
  CandidateFile& operator=(const CandidateFile&) = delete;
  ~CandidateFile();

  const std::string& path() const { return path_; }

 private:
  friend class ConfigFile;
  explicit CandidateFile(std::string path) : path_(std::move(path)) {}
  void Remove();

  std::string path_;  // "" once moved from
};

class ConfigFile {
 public:
  explicit ConfigFile(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }

  // The configuration as it is now. NotFound when there is none; errors name `what`.
  absl::StatusOr<std::string> Read(absl::string_view what) const;

  // Whether the configuration's path is a symbolic link (a mounted ConfigMap's, say): Replace
  // would replace the link, not the file it points to.
  bool IsSymlink() const;

  // Writes `config` as `<path>.hawk-candidate`, so that a configuration `haproxy -c` rejects never
  // replaces the file.
  absl::StatusOr<CandidateFile> WriteCandidate(absl::string_view config) const;

  // Replaces the configuration with `config`. What it held is first kept in `<path>.previous`, and
  // returned for Restore(). On an error the configuration is untouched.
  absl::StatusOr<PreviousConfig> Replace(absl::string_view config) const;

  // Puts back what Replace() replaced: its contents, or no file when there was none.
  absl::Status Restore(const PreviousConfig& previous) const;

 private:
  // Writes `path` with the configuration's mode, owner and group (see the top of this file).
  absl::Status WriteLikeConfig(const std::string& path, absl::string_view contents,
                               absl::string_view what) const;

  std::string path_;
};

}  // namespace hawk::reload

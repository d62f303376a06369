#include "agent/reload/config_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/base/errno_status.h"
#include "agent/store/atomic_file.h"

namespace hawk::reload {

CandidateFile::CandidateFile(CandidateFile&& other) noexcept
    : path_(std::exchange(other.path_, std::string())) {}

CandidateFile& CandidateFile::operator=(CandidateFile&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, std::string());
  }
  return *this;
}

CandidateFile::~CandidateFile() { Remove(); }

void CandidateFile::Remove() {
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

absl::Status ConfigFile::WriteLikeConfig(const std::string& path, absl::string_view contents,
                                         absl::string_view what) const {
  absl::StatusOr<store::FileOwnership> ownership = store::OwnershipOf(path_, what);
  if (ownership.ok()) return store::WriteFileAtomically(path, contents, *ownership, what);
  if (!absl::IsNotFound(ownership.status())) return ownership.status();
  return store::WriteFileAtomically(path, contents, kNewConfigMode, what);
}

absl::StatusOr<std::string> ConfigFile::Read(absl::string_view what) const {
  return store::ReadFileBounded(path_, kMaxConfigBytes, what);
}

bool ConfigFile::IsSymlink() const {
  struct stat st;
  return ::lstat(path_.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

absl::StatusOr<CandidateFile> ConfigFile::WriteCandidate(absl::string_view config) const {
  // Owned from the start: a failed write leaves nothing under that name either.
  CandidateFile candidate(absl::StrCat(path_, ".hawk-candidate"));
  absl::Status written = WriteLikeConfig(candidate.path(), config, "write the configuration");
  if (!written.ok()) return written;
  return candidate;
}

absl::StatusOr<PreviousConfig> ConfigFile::Replace(absl::string_view config) const {
  PreviousConfig previous;
  absl::StatusOr<std::string> held = Read("read the previous configuration");
  if (held.ok()) {
    absl::Status kept =
        WriteLikeConfig(absl::StrCat(path_, ".previous"), *held, "keep the previous configuration");
    if (!kept.ok()) return kept;
    previous.contents = *std::move(held);
  } else if (!absl::IsNotFound(held.status())) {
    return held.status();
  }
  absl::Status written = WriteLikeConfig(path_, config, "write the configuration");
  if (!written.ok()) return written;
  return previous;
}

absl::Status ConfigFile::Restore(const PreviousConfig& previous) const {
  if (previous.contents.has_value()) {
    return WriteLikeConfig(path_, *previous.contents, "restore the previous configuration");
  }
  if (::unlink(path_.c_str()) == 0) return absl::OkStatus();
  return base::ErrnoError(errno, "remove ", path_);
}

}  // namespace hawk::reload

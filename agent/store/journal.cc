#include "agent/store/journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/base/errno_status.h"
#include "agent/base/status_macros.h"
#include "agent/base/unique_fd.h"
#include "agent/store/atomic_file.h"
#include "agent/store/journal_format.h"
#include "agent/store/journal_internal.h"
#include "agent/uv/handle.h"

namespace hawk::store {
namespace {

using base::ErrnoError;
using base::WriteAll;

// mkdir -p, mode 0700 for the directories it creates.
absl::Status MakeDirectories(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string prefix = dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoError(errno, "open journal directory ", dir, ": mkdir ", prefix);
    }
    if (slash == std::string::npos) return absl::OkStatus();
  }
}

// Removes `snapshot-<seq>.json.tmp-<pid>` files whose process no longer exists (a crash, or a
// kill, during a compaction). Best effort: a leftover file costs only disk space.
void RemoveStaleTempFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (struct dirent* entry = ::readdir(d)) {
    absl::string_view name(entry->d_name);
    size_t at = name.rfind(kTempSuffix);
    if (at == absl::string_view::npos || !ParseSnapshotFileName(name.substr(0, at))) continue;
    int pid = 0;
    if (!absl::SimpleAtoi(name.substr(at + kTempSuffix.size()), &pid) || pid <= 0) continue;
    if (pid != ::getpid() && (::kill(pid, 0) == 0 || errno != ESRCH)) continue;
    ::unlink(absl::StrCat(dir, "/", entry->d_name).c_str());
  }
  ::closedir(d);
}

}  // namespace

Journal::Journal(uv_loop_t* loop, JournalOptions options)
    : loop_(loop), options_(std::move(options)), check_(new uv_check_t), idle_(new uv_idle_t) {
  uv_check_init(loop_, check_);
  check_->data = this;
  uv_idle_init(loop_, idle_);
  idle_->data = this;
}

Journal::~Journal() {
  // A compaction in flight frees its request without touching us: its token expires with
  // lifetime_.
  uv::CloseAndFree(check_);
  uv::CloseAndFree(idle_);
}

absl::StatusOr<std::unique_ptr<Journal>> Journal::Open(uv_loop_t* loop, JournalOptions options) {
  if (loop == nullptr) return absl::InvalidArgumentError("open journal: no loop");
  std::string& dir = options.dir;
  if (dir.empty()) return absl::InvalidArgumentError("the journal directory path is empty");
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (options.max_record_bytes == 0 ||
      options.max_record_bytes > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("open journal directory ", dir,
                                                   ": max_record_bytes ", options.max_record_bytes,
                                                   " is not in [1, 2^32 - 1]"));
  }
  RETURN_IF_ERROR(MakeDirectories(dir));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return ErrnoError(errno, "open journal directory ", dir, ": stat");
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("open journal directory ", dir, ": it exists and is not a directory"));
  }
  // access(W_OK) would be wrong for root and for read-only mounts: try what appending does.
  std::string probe = absl::StrCat(dir, "/.hawk-write-probe-", ::getpid());
  base::UniqueFd fd(
      ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return ErrnoError(errno, "open journal directory ", dir, ": create ", probe);
  fd.Reset();
  ::unlink(probe.c_str());
  RemoveStaleTempFiles(dir);
  return std::unique_ptr<Journal>(new Journal(loop, std::move(options)));
}

std::string Journal::PathOf(const std::string& name) const {
  return absl::StrCat(options_.dir, "/", name);
}

absl::StatusOr<LoadedJournal> Journal::Load() {
  if (state_ != State::kOpened) {
    return absl::FailedPreconditionError(
        absl::StrCat("load journal in ", options_.dir, ": already loaded"));
  }
  const std::string& dir = options_.dir;
  std::map<uint64_t, std::string> journals;   // first seq → path
  std::map<uint64_t, std::string> snapshots;  // seq → path
  {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return ErrnoError(errno, "load journal: list ", dir);
    while (struct dirent* entry = ::readdir(d)) {
      absl::string_view name(entry->d_name);
      absl::optional<uint64_t> journal_seq = ParseJournalFileName(name);
      absl::optional<uint64_t> snapshot_seq = ParseSnapshotFileName(name);
      if (journal_seq && *journal_seq > 0) {  // seqs start at 1
        journals[*journal_seq] = PathOf(entry->d_name);
      } else if (snapshot_seq) {
        snapshots[*snapshot_seq] = PathOf(entry->d_name);
      }
    }
    ::closedir(d);
  }
  // A crash right after a snapshot's rename may leave it not yet durable: make it so before
  // deleting what it covers.
  RETURN_IF_ERROR(SyncDirectory(dir, "load journal"));

  LoadedJournal loaded;
  std::vector<std::string> obsolete;
  uint64_t snapshot_seq = 0;
  std::string snapshot_path;
  if (!snapshots.empty()) {
    snapshot_seq = snapshots.rbegin()->first;
    snapshot_path = snapshots.rbegin()->second;
    ASSIGN_OR_RETURN(loaded.snapshot, ReadFileBounded(snapshot_path, options_.max_snapshot_bytes,
                                                      "load journal snapshot"));
    for (const auto& [seq, path] : snapshots) {
      if (seq != snapshot_seq) obsolete.push_back(path);
    }
  }
  loaded.snapshot_seq = snapshot_seq;

  // The first file that matters is the last one starting at or before snapshot_seq + 1: those
  // before it hold only records the snapshot covers.
  std::vector<File> files;
  if (!journals.empty()) {
    auto first = journals.upper_bound(snapshot_seq + 1);
    if (first == journals.begin()) {
      return absl::DataLossError(
          absl::StrCat("load journal in ", dir, ": records ", snapshot_seq + 1, "..",
                       first->first - 1, " are missing: the snapshot ends at seq ", snapshot_seq,
                       " and ", first->second, " starts at seq ", first->first));
    }
    --first;
    for (auto it = journals.begin(); it != first; ++it) obsolete.push_back(it->second);
    for (auto it = first; it != journals.end(); ++it) {
      const auto& [first_seq, path] = *it;
      bool last = std::next(it) == journals.end();
      if (!files.empty() && files.back().next_seq != first_seq) {
        return absl::DataLossError(
            absl::StrCat("load journal in ", dir, ": ", path, " starts at seq ", first_seq, " but ",
                         files.back().path, " ends before seq ", files.back().next_seq));
      }
      ASSIGN_OR_RETURN(std::string data,
                       ReadFileBounded(path, std::numeric_limits<size_t>::max(), "load journal"));
      JournalScan scan = ScanJournal(data, first_seq, options_.max_record_bytes);
      if (scan.outcome == JournalScan::Outcome::kDamaged ||
          (scan.outcome == JournalScan::Outcome::kTornTail && !last)) {
        return absl::DataLossError(
            absl::StrCat("load journal: ", path, " is damaged: ", scan.problem));
      }
      if (scan.outcome == JournalScan::Outcome::kTornTail) {
        loaded.repaired =
            absl::StrCat("dropped ", data.size() - scan.valid_bytes, " bytes at the end of ", path,
                         " from offset ", scan.valid_bytes, " (", scan.problem, ")");
        base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
        std::string what = absl::StrCat("load journal: truncate the torn tail of ", path, " to ",
                                        scan.valid_bytes, " bytes");
        if (fd.get() < 0) return ErrnoError(errno, what);
        if (::ftruncate(fd.get(), static_cast<off_t>(scan.valid_bytes)) != 0 ||
            ::fdatasync(fd.get()) != 0) {
          return ErrnoError(errno, what);
        }
      }
      for (const ScannedRecord& record : scan.records) {
        if (record.seq > snapshot_seq) {
          loaded.records.push_back(JournalRecord{record.seq, std::string(record.payload)});
        }
      }
      files.push_back(File{first_seq, first_seq + scan.records.size(), scan.valid_bytes, path});
    }
  }
  loaded.last_seq = loaded.records.empty() ? snapshot_seq : loaded.records.back().seq;

  // Append to the last file if the next seq continues it; else (it ends inside what the
  // snapshot covers) start a new one. Only files[0] can be covered by the snapshot entirely.
  bool create = files.empty() || files.back().next_seq != loaded.last_seq + 1;
  if (!files.empty() && files[0].next_seq <= snapshot_seq + 1 && (create || files.size() > 1)) {
    obsolete.push_back(files[0].path);
    files.erase(files.begin());
  }
  if (create) {
    files.push_back(File{loaded.last_seq + 1, loaded.last_seq + 1, 0,
                         PathOf(JournalFileName(loaded.last_seq + 1))});
  }
  files_ = std::move(files);
  RETURN_IF_ERROR(OpenActive(create));
  // Best effort: what is left is deleted by the next Load or compaction.
  for (const std::string& path : obsolete) ::unlink(path.c_str());

  last_seq_ = written_seq_ = loaded.last_seq;
  snapshot_seq_ = snapshot_seq;
  snapshot_path_ = snapshot_path;
  state_ = State::kReady;
  return loaded;
}

absl::Status Journal::OpenActive(bool create) {
  const std::string& path = files_.back().path;
  int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
  // O_EXCL: a new file never reuses a name, so existing records are never overwritten.
  if (create) flags |= O_CREAT | O_EXCL;
  base::UniqueFd fd(::open(path.c_str(), flags, 0600));
  if (!fd.valid()) {
    return ErrnoError(errno, create ? "create journal file " : "open journal file ", path);
  }
  if (create) {
    if (absl::Status status =
            SyncDirectory(options_.dir, absl::StrCat("create journal file ", path));
        !status.ok()) {
      fd.Reset();
      ::unlink(path.c_str());
      return status;
    }
  }
  fd_ = std::move(fd);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Journal::Append(std::string payload,
                                         std::function<void(absl::Status)> done) {
  if (state_ == State::kOpened) Fatal("Append called before a successful Load");
  if (state_ == State::kBroken) return broken_;
  if (payload.size() > options_.max_record_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("append journal record to ", files_.back().path, ": ", payload.size(),
                     " bytes, more than the limit of ", options_.max_record_bytes, " bytes"));
  }
  uint64_t seq = ++last_seq_;
  pending_.push_back(Pending{seq, std::move(payload), std::move(done)});
  Wake();
  return seq;
}

void Journal::Wake() {
  // Node's setImmediate does the same: the check handle runs after poll, and an active idle
  // handle makes that poll return at once, so an Append from a timer or a done is written in
  // this iteration or the next instead of waiting for unrelated I/O.
  uv_check_start(check_, &Journal::OnCheck);
  uv_idle_start(idle_, &Journal::OnIdle);
}

void Journal::OnIdle(uv_idle_t*) {}

void Journal::OnCheck(uv_check_t* handle) {
  auto* self = static_cast<Journal*>(handle->data);
  if (self != nullptr) self->Flush();
}

void Journal::Flush() {
  std::vector<std::function<void()>> callbacks;
  if (!pending_.empty()) {
    std::vector<Pending> batch = std::move(pending_);
    pending_.clear();
    // Each done is bound to its record: the batch continues the journal without a gap.
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].seq != written_seq_ + 1 + i) {
        Fatal(absl::StrCat("record ", batch[i].seq, " is at position ", i,
                           " of a batch after the durable seq ", written_seq_));
      }
    }
    absl::Status status = WriteBatch(batch);
    if (status.ok()) {
      written_seq_ = batch.back().seq;
    } else {
      last_seq_ = written_seq_;  // the failed seqs are handed out again: no gaps
    }
    for (Pending& record : batch) {
      if (record.done) {
        callbacks.push_back([done = std::move(record.done), status] { done(status); });
      }
    }
    if (compaction_ != nullptr && !compaction_->started) {
      if (compaction_->seq <= written_seq_) {
        StartCompactionWork();
      } else if (!status.ok()) {
        // The snapshot would claim records that are not in the journal.
        absl::Status failed = Prefixed(status, absl::StrCat("compact journal in ", options_.dir,
                                                            " at seq ", compaction_->seq));
        if (compaction_->done) {
          callbacks.push_back([done = std::move(compaction_->done), failed] { done(failed); });
        }
        compaction_.reset();
      }
    }
  }
  for (std::function<void()>& callback : deferred_) callbacks.push_back(std::move(callback));
  deferred_.clear();
  // Callbacks may Append (queued for the next iteration) or Compact; they may not destroy the
  // Journal, but if one does, stop touching it.
  base::AliveToken self = lifetime_.token();
  for (std::function<void()>& callback : callbacks) {
    callback();
    if (!self.alive()) return;
  }
  if (pending_.empty() && deferred_.empty()) {
    // Inactive handles keep neither the loop alive nor poll from blocking.
    uv_check_stop(check_);
    uv_idle_stop(idle_);
  }
}

absl::Status Journal::WriteBatch(const std::vector<Pending>& batch) {
  File& file = files_.back();
  std::vector<std::array<char, kRecordHeaderBytes>> headers(batch.size());
  std::vector<iovec> pieces;
  pieces.reserve(2 * batch.size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::string& payload = batch[i].payload;
    EncodeRecordHeader(batch[i].seq, payload, headers[i].data());
    pieces.push_back(iovec{headers[i].data(), kRecordHeaderBytes});
    if (!payload.empty()) {
      pieces.push_back(iovec{const_cast<char*>(payload.data()), payload.size()});
    }
    bytes += kRecordHeaderBytes + payload.size();
  }
  uint64_t first = batch.front().seq;
  uint64_t last = batch.back().seq;
  std::string what =
      first == last ? absl::StrCat("append journal record ", first, " to ", file.path)
                    : absl::StrCat("append journal records ", first, "..", last, " to ", file.path);
  int err = WriteAll(fd_.get(), pieces.data(), pieces.size());
  if (err == 0) {
    ++stats_.fdatasyncs;
    // fdatasync suffices: with O_APPEND the size is the only metadata a read-back needs, and
    // fdatasync flushes it.
    if (::fdatasync(fd_.get()) != 0) {
      err = errno;
      what = absl::StrCat(what, " (fdatasync)");
    }
  }
  if (err == 0) {
    file.bytes += bytes;
    file.next_seq = last + 1;
    stats_.bytes_written += bytes;
    stats_.records += batch.size();
    ++stats_.batches;
    return absl::OkStatus();
  }
  ++stats_.failed_batches;
  absl::Status status = ErrnoError(err, what);
  // Cut the partial or unsynced batch off, so that the next batch never lands after garbage
  // (which Load would report as damage, not as a torn tail).
  if (::ftruncate(fd_.get(), static_cast<off_t>(file.bytes)) != 0 || ::fdatasync(fd_.get()) != 0) {
    int truncate_err = errno;
    state_ = State::kBroken;
    broken_ = absl::UnavailableError(absl::StrCat(
        "journal in ", options_.dir, " refuses appends until it is reopened: ", status.message(),
        ", and truncating ", file.path, " back to ", file.bytes,
        " bytes failed: ", std::strerror(truncate_err)));
  }
  return status;
}

absl::Status Journal::Rotate() {
  File& active = files_.back();
  if (active.bytes == 0) return absl::OkStatus();  // already fresh: its first seq is the next
  File fresh{written_seq_ + 1, written_seq_ + 1, 0, PathOf(JournalFileName(written_seq_ + 1))};
  files_.push_back(fresh);
  if (absl::Status status = OpenActive(true); !status.ok()) {
    files_.pop_back();
    return status;
  }
  return absl::OkStatus();
}

uint64_t Journal::live_journal_bytes() const {
  uint64_t bytes = 0;
  for (const File& file : files_) bytes += file.bytes;
  return bytes;
}

}  // namespace hawk::store

#pragma once

// Journal: durable storage whose cost is proportional to the change. The caller appends opaque
// records (one per change) and, now and then, hands over a snapshot of its whole state, which
// replaces the records it covers (compaction). It stores bytes and knows nothing of hawk's model.
//
// Ownership and threading: a Journal owns one uv_check_t and one uv_idle_t (see uv/handle.h for
// the rules), the descriptor of the journal file it appends to, and at most one uv_work_t of a
// compaction in flight. Everything runs on the loop thread except the compaction's threadpool
// function, which touches only its own request (the snapshot bytes and file names it was given).
// Appends are written and fdatasynced synchronously from the check callback, once per loop
// iteration for every record appended during it: the loop blocks for one write and one fdatasync
// per batch, never for the whole state (hawk once rewrote the whole state file on every push).
// Destroying the Journal drops records not yet written (their dones never run) and may happen
// while a compaction runs on the threadpool: the snapshot is still written, the request is freed
// from the loop, and the compaction's done never runs. A done may not destroy the Journal.
//
// Files in `dir` (one Journal per directory: two processes would interleave records):
//   journal-<first seq>.log    records, appended; <first seq> is the seq of the first record
//                              written to it. Records continue across files without a gap.
//   snapshot-<seq>.json        the caller's snapshot bytes as of <seq>, stored as given (no
//                              framing: hawk's snapshot is JSON an operator can read). Complete by
//                              construction: written as a temporary, fsynced, renamed, dir fsynced.
//   snapshot-<seq>.json.tmp-<pid>  a snapshot being written; Open removes those whose pid is gone.
// Record framing: see journal_format.h ([u32 length][u32 crc32c(seq, payload)][u64 seq][payload],
// little-endian). New journal files and renames are followed by an fsync of the directory.
//
// Errors name the operation and the path ("append journal record 7 to /x/journal-1.log: No space
// left on device"); errno codes map as absl::ErrnoToStatus does everywhere in hawk, so that
//   ENOSPC, EDQUOT       → ResourceExhausted (the disk or quota is full)
//   EROFS, EACCES, EPERM → PermissionDenied  (the storage refuses writes)
//   EFBIG                → OutOfRange        (a file-size limit)
// and the journal adds: Unavailable (broken: a failed append could not be undone), DataLoss
// (damaged files at Load), InvalidArgument (bad arguments), FailedPrecondition (wrong call order).
//
// Durability: a record's done(OK) runs after the fdatasync of its batch; a compaction's done(OK)
// after the snapshot and its rename are durable. An error means "not known to be durable": after
// a crash such a record may or may not be there (it never is once the journal has truncated it
// and later appends succeeded).

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/base/lifetime.h"
#include "agent/base/unique_fd.h"

namespace hawk::store {

// The whole-state file of hawks before the journal (loaded as snapshot 0).

struct JournalOptions {
  std::string dir;  // created with missing parents (mode 0700 for new directories)
  // WantsCompaction() once the journal files not yet covered by a snapshot exceed this.
  size_t compact_after_bytes = 64 << 20;
  size_t max_record_bytes = 64 << 20;  // Append refuses bigger payloads; at most 4 GiB - 1
  // Load refuses bigger snapshots as DataLoss, so Compact refuses to write one.
  size_t max_snapshot_bytes = size_t{1} << 30;
};

struct JournalRecord {
  uint64_t seq = 0;
  std::string payload;
};

struct LoadedJournal {
  absl::optional<std::string> snapshot;  // the newest snapshot's bytes
  uint64_t snapshot_seq = 0;             // every record with seq <= this is in the snapshot
  std::vector<JournalRecord> records;    // seq > snapshot_seq, in order, no gaps
  uint64_t last_seq = 0;                 // max(snapshot_seq, last record's seq)
  // Non-empty when Load dropped a torn tail: what and where, for one log line.
  std::string repaired;
};

struct JournalStats {
  uint64_t bytes_written = 0;           // journal bytes (headers and payloads) made durable
  uint64_t fdatasyncs = 0;              // of journal files: one per batch
  uint64_t records = 0;                 // records made durable
  uint64_t batches = 0;                 // batches made durable
  uint64_t failed_batches = 0;          // batches whose write or fdatasync failed
  uint64_t compactions = 0;             // compactions completed
  uint64_t snapshot_bytes_written = 0;  // by completed compactions
};

class Journal {
 public:
  // Creates `options.dir` if needed, checks that files can be created in it and removes
  // temporary snapshots left by a process that is gone. Reads nothing else: call Load next.
  // InvalidArgument for a null loop, an empty dir or bad limits; FailedPrecondition when dir is
  // not a directory; errno codes as above when it cannot be created or written.
  static absl::StatusOr<std::unique_ptr<Journal>> Open(uv_loop_t* loop, JournalOptions options);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Once, before any Append or Compact (FailedPrecondition after it succeeded once). Reads the
  // newest snapshot and the journal files after it. A torn tail (the last record of the last file
  // incomplete or failing its CRC, nothing valid after it) is truncated away and described in
  // `repaired`; any other damage, or a gap in the seqs, is DataLoss naming the file and offset.
  // Deletes journal files and snapshots that the newest snapshot covers (what a crash during a
  // compaction leaves). Synchronous: it blocks the loop for reading everything once.
  absl::StatusOr<LoadedJournal> Load();

  // Queues `payload` as record last_seq() + 1 and returns that seq. `done(status)` is bound to
  // that record alone: it runs from the loop once the record is durable, or with the error of
  // its batch; never inside Append. Group commit: every record appended during one loop iteration
  // goes out in one write and one fdatasync; a batch fails or succeeds as a whole, and the dones
  // run in seq order, before anything else the iteration runs. After a failed batch the file is
  // truncated back to its last durable byte and the batch's seqs are handed out again, so that
  // the journal never has a gap; if the truncation fails, the journal is broken: every later
  // Append fails with Unavailable until it is reopened (Load repairs the tail).
  // A record the journal refuses is refused here, at once, and its `done` never runs:
  // InvalidArgument for a payload over max_record_bytes, Unavailable when broken. (A refusal
  // from the loop would come after the dones of records appended after it, and a caller pairing
  // dones with records by their order would answer the wrong one.)
  // Crashes (programmer error) if Load has not succeeded.
  absl::StatusOr<uint64_t> Append(std::string payload, std::function<void(absl::Status)> done);

  // True when the journal files not covered by a snapshot exceed compact_after_bytes and no
  // compaction is running.
  bool WantsCompaction() const;

  // `snapshot` holds the caller's state as of `seq` (snapshot seq <= seq <= last_seq()). Appends
  // from now on go to a fresh journal file; once the records up to `seq` are durable, the
  // snapshot is written on the libuv threadpool (temporary, fsync, rename, fsync directory), then
  // the journal files and snapshots it covers are deleted there too. `done` runs from the loop,
  // never inside Compact. FailedPrecondition while another compaction runs; InvalidArgument for a
  // seq out of range or a snapshot over max_snapshot_bytes (Load would refuse it: the records
  // stay, which Load accepts); the batch's error if a record up to `seq` fails to become durable.
  // Crashes (programmer error) if Load has not succeeded.
  void Compact(std::string snapshot, uint64_t seq, std::function<void(absl::Status)> done);

  uint64_t last_seq() const { return last_seq_; }        // the seq the last Append returned
  uint64_t durable_seq() const { return written_seq_; }  // every record up to it is durable
  uint64_t snapshot_seq() const { return snapshot_seq_; }
  bool compacting() const { return compaction_ != nullptr; }
  uint64_t live_journal_bytes() const;  // journal files not yet covered by a snapshot
  const JournalStats& stats() const { return stats_; }
  const std::string& dir() const { return options_.dir; }
  size_t max_record_bytes() const { return options_.max_record_bytes; }
  size_t max_snapshot_bytes() const { return options_.max_snapshot_bytes; }

 private:
  enum class State {
    kOpened,  // Load not called (or failed): Append and Compact are programmer errors
    kReady,   // loaded; appending
    kBroken,  // a failed append could not be truncated away: Appends fail until reopened
  };
  struct File {
    uint64_t first_seq = 0;  // from the name
    uint64_t next_seq = 0;   // the seq of the record that would come next in this file
    uint64_t bytes = 0;      // durable size
    std::string path;
  };
  struct Pending {
    uint64_t seq = 0;
    std::string payload;
    std::function<void(absl::Status)> done;
  };
  struct Compaction;
  struct CompactionRequest;

  Journal(uv_loop_t* loop, JournalOptions options);

  // Keeps the loop from blocking in poll while something waits for the check callback.
  void Wake();
  void Flush();
  absl::Status WriteBatch(const std::vector<Pending>& batch);
  absl::Status OpenActive(bool create);
  absl::Status Rotate();
  void StartCompactionWork();
  void OnCompactionDone(CompactionRequest* request, int uv_status);
  std::string PathOf(const std::string& name) const;

  static void OnCheck(uv_check_t* handle);
  static void OnIdle(uv_idle_t* handle);
  static void CompactionWork(uv_work_t* req);
  static void AfterCompactionWork(uv_work_t* req, int status);

  uv_loop_t* loop_;
  JournalOptions options_;
  uv_check_t* check_;  // flushes pending records and runs deferred callbacks; active while any
  uv_idle_t* idle_;    // active with check_: an active idle handle makes poll not block
  State state_ = State::kOpened;
  absl::Status broken_;  // why, in kBroken

  std::vector<File> files_;  // live journal files by first_seq; back() is the one appended to
  base::UniqueFd fd_;        // files_.back(), O_APPEND
  uint64_t last_seq_ = 0;
  uint64_t written_seq_ = 0;
  uint64_t snapshot_seq_ = 0;
  std::string snapshot_path_;  // the current snapshot-<seq>.json; "" when none

  std::vector<Pending> pending_;                 // appended, not yet written; seqs ascending
  std::vector<std::function<void()>> deferred_;  // compaction refusals, run after record dones
  std::unique_ptr<Compaction> compaction_;       // the compaction in flight, if any
  JournalStats stats_;
  // Expires with the Journal: a compaction request on the threadpool, and Flush after a callback
  // that destroyed the Journal, find it gone. Last: expired before any other member goes.
  base::Lifetime lifetime_;
};

}  // namespace hawk::store

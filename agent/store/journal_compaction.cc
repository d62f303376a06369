// Journal compaction: a snapshot of the whole state replaces the records it covers. The snapshot
// is written and fsynced on libuv's threadpool (its bytes never block the loop), then the files
// it covers are deleted; the loop learns the outcome in OnCompactionDone.

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/store/atomic_file.h"
#include "agent/store/journal.h"
#include "agent/store/journal_format.h"
#include "agent/store/journal_internal.h"

namespace hawk::store {

void Journal::Compact(std::string snapshot, uint64_t seq, std::function<void(absl::Status)> done) {
  if (state_ == State::kOpened) Fatal("Compact called before a successful Load");
  std::string what = absl::StrCat("compact journal in ", options_.dir, " at seq ", seq);
  absl::Status refusal;
  if (compaction_ != nullptr) {
    refusal = absl::FailedPreconditionError(
        absl::StrCat(what, ": the compaction at seq ", compaction_->seq, " is still running"));
  } else if (seq < snapshot_seq_ || seq > last_seq_) {
    refusal = absl::InvalidArgumentError(
        absl::StrCat(what, ": seq is outside [", snapshot_seq_, ", ", last_seq_, "]"));
  } else if (snapshot.size() > options_.max_snapshot_bytes) {
    // Written, it would keep the next Load (and hawk's start) from succeeding.
    refusal = absl::InvalidArgumentError(absl::StrCat(
        what, ": the snapshot holds ", snapshot.size(), " bytes, more than the ",
        options_.max_snapshot_bytes, " bytes Load accepts; the journal keeps the records"));
  } else if (state_ == State::kBroken) {
    // A fresh file now would leave the garbage in the middle of the journal.
    refusal = Prefixed(broken_, what);
  } else if (absl::Status status = Rotate(); !status.ok()) {
    refusal = Prefixed(status, what);
  }
  if (!refusal.ok()) {
    if (done) deferred_.push_back([done = std::move(done), refusal] { done(refusal); });
    Wake();
    return;
  }
  compaction_ = std::make_unique<Compaction>();
  compaction_->snapshot = std::move(snapshot);
  compaction_->seq = seq;
  compaction_->done = std::move(done);
  // Else Flush starts it once the records up to seq are durable.
  if (seq <= written_seq_) StartCompactionWork();
}

void Journal::StartCompactionWork() {
  auto request = std::make_unique<CompactionRequest>();
  request->req.data = request.get();
  request->owner = lifetime_.token();
  request->journal = this;
  request->seq = compaction_->seq;
  request->what = absl::StrCat("compact journal at seq ", compaction_->seq);
  request->path = PathOf(SnapshotFileName(compaction_->seq));
  request->snapshot = std::move(compaction_->snapshot);
  request->snapshot_bytes = request->snapshot.size();
  // Every closed file whose records the snapshot covers; never the one appended to.
  for (size_t i = 0; i + 1 < files_.size(); ++i) {
    if (files_[i].next_seq <= compaction_->seq + 1) request->obsolete.push_back(files_[i].path);
  }
  if (!snapshot_path_.empty() && snapshot_path_ != request->path) {
    request->obsolete.push_back(snapshot_path_);
  }
  compaction_->started = true;
  int rc =
      uv_queue_work(loop_, &request->req, &Journal::CompactionWork, &Journal::AfterCompactionWork);
  if (rc != 0) {
    absl::Status failed = absl::InternalError(
        absl::StrCat(request->what, " in ", options_.dir, ": uv_queue_work: ", uv_strerror(rc)));
    if (compaction_->done) {
      deferred_.push_back([done = std::move(compaction_->done), failed] { done(failed); });
    }
    compaction_.reset();
    Wake();
    return;
  }
  request.release();  // AfterCompactionWork frees it
}

void Journal::CompactionWork(uv_work_t* req) {
  // On a threadpool thread: only the request's own fields.
  auto* request = static_cast<CompactionRequest*>(req->data);
  request->status = WriteFileAtomically(request->path, request->snapshot, 0600, request->what);
  request->snapshot = std::string();  // free it here rather than on the loop
  if (!request->status.ok()) return;
  // The snapshot and its name are durable: what it covers can go. Failures leave files that
  // the next Load or compaction deletes.
  for (const std::string& path : request->obsolete) ::unlink(path.c_str());
}

void Journal::AfterCompactionWork(uv_work_t* req, int status) {
  std::unique_ptr<CompactionRequest> request(static_cast<CompactionRequest*>(req->data));
  if (!request->owner.alive()) return;
  request->journal->OnCompactionDone(request.get(), status);
}

void Journal::OnCompactionDone(CompactionRequest* request, int uv_status) {
  absl::Status status =
      uv_status == 0
          ? request->status
          : absl::CancelledError(absl::StrCat(request->what, ": ", uv_strerror(uv_status)));
  if (status.ok()) {
    const std::vector<std::string>& gone = request->obsolete;
    files_.erase(std::remove_if(files_.begin(), files_.end(),
                                [&](const File& file) {
                                  return std::find(gone.begin(), gone.end(), file.path) !=
                                         gone.end();
                                }),
                 files_.end());
    snapshot_seq_ = request->seq;
    snapshot_path_ = request->path;
    ++stats_.compactions;
    stats_.snapshot_bytes_written += request->snapshot_bytes;
  }
  std::function<void(absl::Status)> done = std::move(compaction_->done);
  compaction_.reset();
  if (done) done(status);  // last: it may start the next compaction
}

bool Journal::WantsCompaction() const {
  return state_ != State::kOpened && compaction_ == nullptr &&
         live_journal_bytes() > options_.compact_after_bytes;
}

}  // namespace hawk::store

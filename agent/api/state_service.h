#pragma once

// StateService: the desired state hawk holds, and every way it changes.
//
// Ownership and threading: owns a JSON parser and its release timer; changes the DesiredState it
// is given (the app owns it, the reconciler reads it); uses (does not own) the Journal (null
// without --state-dir) and the Reconciler; loop thread only.
//
// A change (a whole-state PUT, diffed against the state held; a PATCH, merged into it) is
// validated in full, ordered by `generation`, applied to the state held, written to the journal
// as one record of what changed — group commit: one write and one fdatasync for every change
// accepted in the same loop iteration — and only once durable published to the reconciler. If
// the journal fails, the changes of that batch are undone, newest first, and refused: nothing
// acknowledged is ever lost, and nothing refused stays applied. Every cost is proportional to the
// change, except what a whole-state PUT cannot avoid: parsing and diffing the document.
// Compaction (a snapshot of the whole state, written on the threadpool) runs when the journal
// asks for it, between pushes.
//
// What the journal cannot take is refused before anything is applied, sent or written
// (ResourceExhausted, naming the size and the limit; the API answers 413): a change whose record
// would exceed max_record_bytes (StateServiceOptions, at most the journal's), and a change that
// grows the state past what a snapshot may hold (max_snapshot_bytes: loading refuses a bigger one,
// so such a state would keep hawk from starting again). The snapshot's size is counted as changes
// are applied (model::SnapshotSize), never by encoding the state on a push.
//
// Ordering (both verbs): a `generation` lower than the one held → Aborted naming the one held;
// equal with other content or version → Aborted; equal with the same → accepted, nothing
// changes (idempotent retries). PATCH's `baseGeneration`, when given, must equal the generation
// held, else Aborted naming it.

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "agent/base/lifetime.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/json_input.h"
#include "agent/model/snapshot_size.h"
#include "agent/reconcile/preview.h"
#include "agent/reconcile/reconciler.h"
#include "agent/store/journal.h"
#include "agent/uv/timer.h"

namespace hawk::api {

struct StateServiceStats {
  uint64_t puts = 0;
  uint64_t patches = 0;
  uint64_t unchanged = 0;  // accepted, nothing to do
  uint64_t refused = 0;    // invalid, out of order, too large for the journal
  uint64_t persist_failures = 0;
  uint64_t objects_changed = 0;  // servers, entries and patterns, over every accepted change
  uint64_t dry_runs = 0;
};

struct StateServiceOptions {
  // A change whose journal record would be larger is refused (413). Only ever lower than the
  // journal's own max_record_bytes (which also bounds what Load reads back, so it stays fixed);
  // 0: the journal's.
  size_t max_record_bytes = 0;
};

class StateService {
 public:
  // Called once the change is durable (with the push's reconciler sequence number, for
  // Reconciler::WaitForPush, and its labels) or with the error of its failed journal batch. A
  // change that only touches objects managed before it is sent to the workers while the journal
  // syncs; if the journal then refuses it, the refusal comes once the workers were put back (or
  // that wait timed out, which the status says).
  struct Accepted {
    uint64_t seq = 0;  // the push's reconciler sequence number
    // The state's labels once this change was applied: the push's own, even when later pushes
    // changed them before this one became durable.
    std::string version;
    absl::optional<int64_t> generation;
  };
  using Done = std::function<void(absl::StatusOr<Accepted> accepted)>;

  StateService(uv_loop_t* loop, store::Journal* journal, reconcile::Reconciler* reconciler,
               model::DesiredState* state, StateServiceOptions options = {});
  ~StateService();
  StateService(const StateService&) = delete;
  StateService& operator=(const StateService&) = delete;

  // Loads what the journal holds (snapshot, then records) into the state and publishes it.
  // DataLoss when a record or the snapshot does not parse. A no-op without a journal.
  absl::Status Load();

  // Validation and ordering errors come back at once (InvalidArgument naming the field, Aborted
  // for the generation), and so do the journal's refusals (ResourceExhausted for a change too
  // large, see above; Unavailable when the journal is broken); `done` then never runs. Otherwise
  // `done` runs exactly once, once the change is durable (or the journal failed it) — inside the
  // call when nothing changed or there is no journal, else from the loop.
  // `body` is parsed in place when it has json::kReadPadding bytes of spare capacity (as the
  // HTTP layer's request bodies do), else copied.
  absl::Status Put(const std::string& body, Done done);
  absl::Status Patch(const std::string& body, Done done);

  // A dry run of Put (`patch` false) or Patch: the same validation and the same refusals
  // (InvalidArgument, Aborted, ResourceExhausted), then what the push would send to each worker
  // (Reconciler::Preview). Nothing is persisted, published or kept: the change is applied to the
  // state held, previewed and undone within the call. O(change), plus parsing a PUT's document.
  struct DryRun {
    std::string version;  // the state's labels the push would set
    absl::optional<int64_t> generation;
    bool changes = false;  // false: the push would change nothing (workers is empty)
    std::vector<reconcile::WorkerPreview> workers;
  };
  absl::StatusOr<DryRun> Preview(const std::string& body, bool patch);

  // nullptr until a state was pushed or loaded.
  const model::DesiredState* current() const { return has_state_ ? state_ : nullptr; }
  const StateServiceStats& stats() const { return stats_; }

 private:
  struct Uncommitted;

  // The change in `body`, validated and ordered against the state held (Put's and Patch's rules).
  absl::StatusOr<model::Delta> ReadPut(const std::string& body);
  absl::StatusOr<model::Delta> ReadPatch(const std::string& body);
  // The journal record of `delta`, already applied to the state and counted in snapshot_size_
  // (which counted `snapshot_before` without it); ResourceExhausted when the journal cannot take
  // it (see above).
  absl::StatusOr<std::string> JournalRecord(const model::Delta& delta,
                                            uint64_t snapshot_before) const;
  absl::optional<int64_t> HeldGeneration() const;
  absl::Status CheckGeneration(absl::optional<int64_t> generation, bool same_content,
                               absl::string_view version) const;
  // Applies, journals and publishes what ReadPut/ReadPatch read; a read that failed is refused.
  absl::Status Commit(absl::StatusOr<model::Delta> read, Done done);
  size_t max_record_bytes() const;
  void OnDurable(uint64_t journal_seq, absl::Status status);
  void MaybeCompact();
  model::json::JsonInput Input(const std::string& body);
  // Keeps the parser's buffers while large documents keep coming; frees them once they stop.
  void AfterParse();

  store::Journal* journal_;
  StateServiceOptions options_;
  model::json::DocumentParser parser_;
  uv::Timer release_parser_;
  reconcile::Reconciler* reconciler_;
  model::DesiredState* state_;
  bool has_state_ = false;
  // The size of *state_'s snapshot, with every uncommitted change counted (journal only).
  model::SnapshotSize snapshot_size_;
  // The count at which a snapshot was too large for the journal: no compaction is tried again
  // until the state is counted smaller.
  uint64_t compaction_too_large_at_ = std::numeric_limits<uint64_t>::max();
  std::deque<std::unique_ptr<Uncommitted>> uncommitted_;  // in journal order
  uint64_t next_uncommitted_id_ = 1;
  StateServiceStats stats_;
  // Guards the journal's dones (records appended, not yet durable), which may outlive the
  // service. Last: disarmed before any other member goes.
  base::Lifetime lifetime_;
};

}  // namespace hawk::api

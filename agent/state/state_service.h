#pragma once

// StateService: the owner of the desired state hawk holds, of every way it changes, and of the
// wait for the workers a push is answered after.
//
// Ownership and threading: owns the DesiredState (others get a const view: desired(), current()),
// the ChangeReader and the changes waiting for the journal; uses (does not own) the Journal (null
// without --state-dir) and the Reconciler it publishes to (bound by Start); loop thread only.
//
// A push (a whole-state PUT, diffed against the state held; a PATCH, merged into it) is read,
// validated in full and ordered by `generation` (change_reader.h), applied to the state held,
// written to the journal as one record of what changed — group commit: one write and one
// fdatasync for every change accepted in the same loop iteration — published to the reconciler,
// and answered once every target worker finished with it or its timeout passed. It is published
// before it is durable only when a failed write can be taken back from the workers
// (RevertibleOnWorkers), else once durable; either way it is answered only once durable. If the
// journal fails, the changes of that batch are undone, newest first, and refused (once the workers
// that had them were put back): nothing acknowledged is ever lost, and nothing refused stays
// applied. Every cost is proportional to the change, except what a whole-state PUT cannot avoid:
// parsing and diffing the document. Compaction (a snapshot of the whole state, written on the
// threadpool) runs when the journal asks for it, between pushes.
//
// What the journal cannot take is refused before anything is applied, sent or written
// (ResourceExhausted, naming the size and the limit; the API answers 413): a change whose record
// would exceed max_record_bytes (StateServiceOptions, at most the journal's), and a change that
// grows the state past what a snapshot may hold (max_snapshot_bytes: loading refuses a bigger one,
// so such a state would keep hawk from starting again). The snapshot's size is counted as changes
// are applied (model::SnapshotSize), never by encoding the state on a push.

#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/base/callback_list.h"
#include "agent/base/lifetime.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/snapshot_size.h"
#include "agent/reconcile/preview.h"
#include "agent/reconcile/push_outcome.h"
#include "agent/reconcile/reconciler.h"
#include "agent/state/change_reader.h"
#include "agent/store/journal.h"

namespace hawk::state {

// How a pushed document changes the state held.
enum class Verb {
  kPut,    // a whole state: what it leaves out is removed
  kPatch,  // upserts and removals merged into the state held
};

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
  // Large work ended (a journal replayed, a large document's parser released): the app's
  // MemoryTrimmer gives the freed pages back. Unset: nothing is trimmed.
  std::function<void()> release_memory;
};

class StateService {
 public:
  // A push that was made durable and published, and how far it got on the workers.
  struct Pushed {
    uint64_t seq = 0;  // the push's reconciler sequence number
    // Per target worker, when all finished or the timeout passed. `version` and `generation`:
    // the state's labels once this push was applied, even when later pushes changed them before
    // it became durable.
    reconcile::PushOutcome outcome;
  };
  using PushDone = std::function<void(absl::StatusOr<Pushed> pushed)>;

  StateService(uv_loop_t* loop, store::Journal* journal, StateServiceOptions options = {});
  ~StateService();
  StateService(const StateService&) = delete;
  StateService& operator=(const StateService&) = delete;

  // The state as held, for the reconciler (constructed with it before Start): empty before the
  // first push or load. Changes only inside this class's calls.
  const model::DesiredState& desired() const { return desired_; }
  // nullptr until a state was pushed or loaded.
  const model::DesiredState* current() const { return has_state_ ? &desired_ : nullptr; }
  const StateServiceStats& stats() const { return stats_; }

  // Binds the reconciler the state is published to, loads what the journal holds (snapshot, then
  // records) and publishes it. DataLoss when a record or the snapshot does not parse; loading is
  // a no-op without a journal. Once, before any Push or Preview.
  absl::Status Start(reconcile::Reconciler* reconciler);

  // Validation and ordering errors come back at once (InvalidArgument naming the field, Aborted
  // for the generation), and so do the journal's refusals (ResourceExhausted for a change too
  // large, see above; Unavailable when the journal is broken); `done` then never runs. Otherwise
  // `done` runs exactly once, never inside the call: once the change is durable and every target
  // worker finished with it or `timeout` passed (a change that changes nothing waits for the
  // latest push), or with the error of its failed journal batch (once the workers that had it were
  // put back, or that wait timed out, which the status says).
  // `body` is parsed in place when it has json::kReadPadding bytes of spare capacity (as the
  // HTTP layer's request bodies do), else copied.
  absl::Status Push(Verb verb, const std::string& body, absl::Duration timeout, PushDone done);

  // A dry run of Push: the same validation and the same refusals (InvalidArgument, Aborted,
  // ResourceExhausted), then what the push would send to each worker (Reconciler::Preview).
  // Nothing is persisted, published or kept: the change is applied to the state held, previewed
  // and undone within the call. O(change), plus parsing a PUT's document.
  struct DryRun {
    std::string version;  // the state's labels the push would set
    absl::optional<int64_t> generation;
    bool changes = false;  // false: the push would change nothing (workers is empty)
    std::vector<reconcile::WorkerPreview> workers;
  };
  absl::StatusOr<DryRun> Preview(Verb verb, const std::string& body);

  // Runs `listener` with each change as it is published, before the reconciler hears of it: its
  // summary (the state held already has it), or null when the state was replaced in a way no
  // summary describes (loaded at start, rolled back after a failed journal write). A dry run
  // publishes nothing.
  base::Subscription AddChangeListener(
      std::function<void(const model::ChangeSummary* summary)> listener) {
    return change_listeners_.Add(std::move(listener));
  }

 private:
  struct Uncommitted;

  absl::StatusOr<model::Delta> Read(Verb verb, const std::string& body);
  // `delta` applied to the state held, with what undoing it takes.
  struct Applied {
    model::AppliedDelta delta;  // what changed, and its undo
    bool had_state = false;     // has_state_ before
    // false: nothing to persist or send (a retry, upserts of what is held).
    bool changes = false;
  };
  Applied Apply(const model::Delta& delta);
  void Undo(Applied applied);
  // The journal record of `delta`, already applied to the state and counted in snapshot_size_
  // (which counted `snapshot_before` without it); ResourceExhausted when the journal cannot take
  // it (see above).
  absl::StatusOr<std::string> JournalRecord(const model::Delta& delta,
                                            uint64_t snapshot_before) const;
  // Applies, journals and publishes what Read read; a read that failed is refused.
  absl::Status Commit(absl::StatusOr<model::Delta> read, absl::Duration timeout, PushDone done);
  // Answers `done` once push `seq` reached every target worker or `timeout` passed, with the
  // push's own labels.
  void AnswerAfter(uint64_t seq, std::string version, absl::optional<int64_t> generation,
                   absl::Duration timeout, PushDone done);
  size_t max_record_bytes() const;
  void OnDurable(uint64_t journal_seq, absl::Status status);
  // The journal failed the batch of every change waiting for it: each is undone and refused.
  void RollBack(absl::Status status);
  void MaybeCompact();
  // To the change listeners, then to the reconciler; the push's sequence number.
  uint64_t Publish(const model::ChangeSummary& summary);
  uint64_t PublishWhole();
  reconcile::Reconciler& reconciler();

  store::Journal* journal_;
  StateServiceOptions options_;
  ChangeReader reader_;
  reconcile::Reconciler* reconciler_ = nullptr;  // bound by Start
  model::DesiredState desired_;
  bool has_state_ = false;
  // The size of desired_'s snapshot, with every uncommitted change counted (journal only).
  model::SnapshotSize snapshot_size_;
  // The count at which a snapshot was too large for the journal: no compaction is tried again
  // until the state is counted smaller.
  uint64_t compaction_too_large_at_ = std::numeric_limits<uint64_t>::max();
  std::deque<std::unique_ptr<Uncommitted>> uncommitted_;  // in journal order
  uint64_t next_uncommitted_id_ = 1;
  StateServiceStats stats_;
  base::CallbackList<const model::ChangeSummary*> change_listeners_;
  // Guards the journal's dones (records appended, not yet durable), which may outlive the
  // service. Last: disarmed before any other member goes.
  base::Lifetime lifetime_;
};

}  // namespace hawk::state

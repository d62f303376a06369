#include "agent/state/state_service.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/base/log.h"
#include "agent/model/delta_json.h"
#include "agent/model/desired_json.h"
#include "agent/model/patch.h"

namespace hawk::state {
namespace {

// How long a refused push's answer waits for the workers that took it to be put back.
constexpr absl::Duration kRollbackTimeout = absl::Seconds(10);

// Programmer errors only: the journal broke its promise about the order of its dones, or this
// file its bookkeeping. Answering on would acknowledge the wrong push.
[[noreturn]] void Fatal(absl::string_view message) {
  std::fprintf(stderr, "hawk::state::StateService: %.*s\n", static_cast<int>(message.size()),
               message.data());
  std::abort();
}

// True when undoing the change and reconciling puts every worker back where it was: the change
// only touches objects hawk managed before it. A server, backend or table that becomes managed
// has no known value before (the worker holds whatever its configuration or file said), and a
// table replaced in full is large; those wait for the journal before anything is sent.
bool RevertibleOnWorkers(const model::ChangeSummary& summary) {
  if (!summary.backends_created.empty()) return false;
  for (const model::ServerChange& change : summary.servers) {
    if (!change.before.has_value()) return false;
  }
  for (const auto* tables : {&summary.maps, &summary.acls}) {
    for (const model::TableChange& change : *tables) {
      if (change.replace) return false;
    }
  }
  return true;
}

}  // namespace

// A change applied to the state and handed to the journal, not yet durable.
struct StateService::Uncommitted {
  uint64_t id = 0;           // the binding of its journal done: never reused
  uint64_t journal_seq = 0;  // its record's (a failed batch's seqs are handed out again)
  bool had_state = false;
  model::Undo undo;
  model::SnapshotSize::Undo counted;  // what it added to snapshot_size_
  // Published before it was durable (seq valid, summary empty), or published once it is.
  bool published = false;
  uint64_t seq = 0;
  model::ChangeSummary summary;
  std::string version;  // the state's labels once it was applied
  absl::optional<int64_t> generation;
  absl::Duration timeout;  // of the wait for the workers, once durable
  PushDone done;
};

StateService::StateService(uv_loop_t* loop, store::Journal* journal, StateServiceOptions options)
    : journal_(journal), options_(options), reader_(loop, options_.release_memory) {}

StateService::~StateService() = default;

uint64_t StateService::Publish(const model::ChangeSummary& summary) {
  change_listeners_.Notify(&summary);
  return reconciler().Publish(summary);
}

uint64_t StateService::PublishWhole() {
  change_listeners_.Notify(nullptr);
  return reconciler().PublishWhole();
}

reconcile::Reconciler& StateService::reconciler() {
  if (reconciler_ == nullptr) Fatal("a push before Start");
  return *reconciler_;
}

size_t StateService::max_record_bytes() const {
  size_t journal_limit = journal_->max_record_bytes();
  return options_.max_record_bytes == 0 ? journal_limit
                                        : std::min(options_.max_record_bytes, journal_limit);
}

absl::Status StateService::Start(reconcile::Reconciler* reconciler) {
  reconciler_ = reconciler;
  if (journal_ == nullptr) return absl::OkStatus();
  absl::StatusOr<store::LoadedJournal> loaded = journal_->Load();
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrCat("load desired state: ", loaded.status().message()));
  }
  if (!loaded->repaired.empty()) {
    base::LogWarn("desired-state journal: ", loaded->repaired,
                  " (a write cut short by a crash; it was never acknowledged)");
  }
  if (loaded->snapshot) {
    absl::StatusOr<model::DesiredState> snapshot = model::ParseDesiredState(*loaded->snapshot);
    if (!snapshot.ok()) {
      return absl::DataLossError(absl::StrCat("desired-state snapshot (seq ", loaded->snapshot_seq,
                                              ") in ", journal_->dir(),
                                              " is corrupt: ", snapshot.status().message()));
    }
    desired_ = *std::move(snapshot);
    has_state_ = true;
  }
  for (const store::JournalRecord& record : loaded->records) {
    absl::StatusOr<model::Delta> delta = model::ParseDeltaJson(record.payload);
    if (!delta.ok()) {
      return absl::DataLossError(absl::StrCat("desired-state journal record ", record.seq, " in ",
                                              journal_->dir(),
                                              " is corrupt: ", delta.status().message()));
    }
    model::ApplyDelta(*delta, &desired_);
    has_state_ = true;
  }
  snapshot_size_.Reset(desired_);
  if (snapshot_size_.bytes() > journal_->max_snapshot_bytes()) {
    // Records written by a hawk that did not count: loadable, but never compacted.
    base::LogWarn("desired state: its snapshot would take about ", snapshot_size_.bytes(),
                  " bytes, more than the ", journal_->max_snapshot_bytes(),
                  " bytes hawk loads at start: pushes that grow it are refused, and the journal "
                  "keeps every record, until pushes shrink it");
  }
  if (has_state_) {
    base::LogInfo("loaded desired state \"", desired_.version, "\" (", desired_.server_count(),
                  " servers, ", desired_.map_entry_count(), " map entries, ",
                  desired_.acl_pattern_count(), " ACL patterns) from ", journal_->dir(),
                  ": snapshot seq ", loaded->snapshot_seq, " + ", loaded->records.size(),
                  " journal records");
    PublishWhole();
  }
  // The replay's parser and copies are gone: their memory goes back.
  if (options_.release_memory) options_.release_memory();
  return absl::OkStatus();
}

absl::StatusOr<model::Delta> StateService::Read(Verb verb, const std::string& body) {
  model::DesiredState* held = has_state_ ? &desired_ : nullptr;
  return verb == Verb::kPatch ? reader_.ReadPatch(body, held) : reader_.ReadPut(body, held);
}

absl::Status StateService::Push(Verb verb, const std::string& body, absl::Duration timeout,
                                PushDone done) {
  ++(verb == Verb::kPatch ? stats_.patches : stats_.puts);
  return Commit(Read(verb, body), timeout, std::move(done));
}

StateService::Applied StateService::Apply(const model::Delta& delta) {
  Applied applied;
  applied.had_state = has_state_;
  std::string version_before = desired_.version;
  absl::optional<int64_t> generation_before = desired_.generation;
  applied.delta = model::ApplyDelta(delta, &desired_);
  has_state_ = true;
  applied.changes =
      !(applied.had_state && applied.delta.summary.empty() && desired_.version == version_before &&
        desired_.generation == generation_before);
  return applied;
}

void StateService::Undo(Applied applied) {
  model::UndoDelta(std::move(applied.delta.undo), &desired_);
  has_state_ = applied.had_state;
}

absl::StatusOr<StateService::DryRun> StateService::Preview(Verb verb, const std::string& body) {
  ++stats_.dry_runs;
  absl::StatusOr<model::Delta> delta = Read(verb, body);
  if (!delta.ok()) return delta.status();
  // Applied, previewed and undone within this call: nothing else ever sees the change.
  Applied applied = Apply(*delta);
  DryRun out;
  out.version = desired_.version;
  out.generation = desired_.generation;
  out.changes = applied.changes;
  absl::Status limits = absl::OkStatus();
  if (out.changes && journal_ != nullptr) {
    uint64_t snapshot_before = snapshot_size_.bytes();
    model::SnapshotSize::Undo counted = snapshot_size_.Apply(applied.delta.summary, desired_);
    limits = JournalRecord(*delta, snapshot_before).status();
    snapshot_size_.Revert(std::move(counted));
  }
  if (limits.ok() && out.changes) out.workers = reconciler().Preview(applied.delta.summary);
  Undo(std::move(applied));
  if (!limits.ok()) return limits;
  return out;
}

absl::StatusOr<std::string> StateService::JournalRecord(const model::Delta& delta,
                                                        uint64_t snapshot_before) const {
  // Loading refuses a snapshot above the limit: a state that needs one would keep hawk from
  // starting again. A change that does not grow the state still goes (it cannot make it worse).
  uint64_t snapshot_bytes = snapshot_size_.bytes();
  if (snapshot_bytes > journal_->max_snapshot_bytes() && snapshot_bytes > snapshot_before) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the desired state would need a snapshot of ", snapshot_bytes,
                     " bytes, more than the ", journal_->max_snapshot_bytes(),
                     " bytes hawk loads at start; nothing changed (remove objects to make room)"));
  }
  std::string record = model::DeltaToJson(delta);
  if (record.size() > max_record_bytes()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the change would be a journal record of ", record.size(),
        " bytes, more than the limit of ", max_record_bytes(),
        " bytes (--state-max-record-bytes); nothing changed (split it into smaller pushes)"));
  }
  return record;
}

absl::Status StateService::Commit(absl::StatusOr<model::Delta> read, absl::Duration timeout,
                                  PushDone done) {
  if (!read.ok()) {
    ++stats_.refused;
    return read.status();
  }
  model::Delta& delta = *read;
  Applied applied = Apply(delta);
  if (!applied.changes) {
    ++stats_.unchanged;
    AnswerAfter(reconciler().latest_seq(), desired_.version, desired_.generation, timeout,
                std::move(done));
    return absl::OkStatus();
  }
  if (journal_ == nullptr) {
    stats_.objects_changed += delta.object_count();
    AnswerAfter(Publish(applied.delta.summary), desired_.version, desired_.generation, timeout,
                std::move(done));
    return absl::OkStatus();
  }
  // A change the journal cannot take is refused here, before it is sent, answered or written:
  // undone at once, nothing else saw it.
  uint64_t snapshot_before = snapshot_size_.bytes();
  model::SnapshotSize::Undo counted = snapshot_size_.Apply(applied.delta.summary, desired_);
  auto refuse = [&](absl::Status status) {
    snapshot_size_.Revert(std::move(counted));
    Undo(std::move(applied));
    ++stats_.refused;
    return status;
  };
  absl::StatusOr<std::string> record = JournalRecord(delta, snapshot_before);
  if (!record.ok()) return refuse(record.status());
  uint64_t id = next_uncommitted_id_++;
  absl::StatusOr<uint64_t> journal_seq = journal_->Append(
      *std::move(record),
      lifetime_.Guard([this, id](absl::Status status) { OnDurable(id, std::move(status)); }));
  if (!journal_seq.ok()) {  // the journal is broken
    ++stats_.persist_failures;
    base::LogError("desired state: not made durable, so not applied: ",
                   journal_seq.status().message());
    return refuse(absl::Status(journal_seq.status().code(),
                               absl::StrCat("could not persist the state, so nothing was applied: ",
                                            journal_seq.status().message())));
  }
  stats_.objects_changed += delta.object_count();
  auto entry = std::make_unique<Uncommitted>();
  entry->id = id;
  entry->journal_seq = *journal_seq;
  entry->had_state = applied.had_state;
  entry->undo = std::move(applied.delta.undo);
  entry->counted = std::move(counted);
  entry->version = desired_.version;
  entry->generation = desired_.generation;
  entry->timeout = timeout;
  entry->done = std::move(done);
  // "Managed before" must mean managed in the durable state: behind a change still waiting for
  // the journal with objects of its own, this one waits too.
  bool after_durable = std::all_of(uncommitted_.begin(), uncommitted_.end(),
                                   [](const auto& earlier) { return earlier->published; });
  if (after_durable && RevertibleOnWorkers(applied.delta.summary)) {
    // Sent while the journal writes and syncs: the push is answered once both are done, so
    // nothing is acknowledged that is not durable, and a failed sync puts the workers back
    // (OnDurable) before its answer. Saves the sync's time on every push.
    entry->published = true;
    entry->seq = Publish(applied.delta.summary);
  } else {
    entry->summary = std::move(applied.delta.summary);
  }
  uncommitted_.push_back(std::move(entry));
  return absl::OkStatus();
}

void StateService::OnDurable(uint64_t id, absl::Status status) {
  // Each journal done is bound to its own change by `id`. A change below the oldest one waiting
  // was undone and refused with the first record of its failed batch.
  if (uncommitted_.empty() || id < uncommitted_.front()->id) {
    if (status.ok()) {
      Fatal(absl::StrCat("the journal made the record of change ", id,
                         " durable after the change was undone as failed"));
    }
    return;
  }
  Uncommitted& oldest = *uncommitted_.front();
  // The journal makes records durable, or fails them, in seq order: the order of the changes.
  if (oldest.id != id) {
    Fatal(absl::StrCat("the journal reports on the record of change ", id,
                       " while the oldest change waiting for it is ", oldest.id));
  }
  if (status.ok()) {
    if (journal_->durable_seq() < oldest.journal_seq) {
      Fatal(absl::StrCat("change ", id, " was reported durable, but its record ",
                         oldest.journal_seq, " is past the durable seq ", journal_->durable_seq()));
    }
    std::unique_ptr<Uncommitted> entry = std::move(uncommitted_.front());
    uncommitted_.pop_front();
    uint64_t seq = entry->published ? entry->seq : Publish(entry->summary);
    AnswerAfter(seq, std::move(entry->version), entry->generation, entry->timeout,
                std::move(entry->done));
    MaybeCompact();
    return;
  }
  RollBack(std::move(status));
}

void StateService::AnswerAfter(uint64_t seq, std::string version,
                               absl::optional<int64_t> generation, absl::Duration timeout,
                               PushDone done) {
  reconciler().WaitForPush(seq, timeout,
                           [seq, version = std::move(version), generation,
                            done = std::move(done)](reconcile::PushOutcome outcome) mutable {
                             // The push's own labels: later pushes may have changed the state's.
                             outcome.version = std::move(version);
                             outcome.generation = generation;
                             done(Pushed{seq, std::move(outcome)});
                           });
}

void StateService::RollBack(absl::Status status) {
  // The batch failed as a whole: undo every change not yet durable, newest first, and refuse them.
  ++stats_.persist_failures;
  base::LogError("desired state: not made durable, so not applied: ", status.message());
  std::deque<std::unique_ptr<Uncommitted>> failed = std::move(uncommitted_);
  uncommitted_.clear();
  bool sent = false;
  for (auto it = failed.rbegin(); it != failed.rend(); ++it) {
    model::UndoDelta(std::move((*it)->undo), &desired_);
    snapshot_size_.Revert(std::move((*it)->counted));
    has_state_ = (*it)->had_state;
    sent = sent || (*it)->published;
  }
  if (!sent) {
    for (auto& entry : failed) entry->done(status);
    return;
  }
  // Some of it went out already: every worker re-reads what it holds and is reconciled to the
  // state as it was (only objects managed before were touched, RevertibleOnWorkers), and the
  // refusals are answered once that is done, or the wait ends.
  uint64_t rollback = PublishWhole();
  auto dones = std::make_shared<std::deque<std::unique_ptr<Uncommitted>>>(std::move(failed));
  reconciler().WaitForPush(
      rollback, kRollbackTimeout, [dones, status](reconcile::PushOutcome outcome) {
        size_t behind = 0;
        for (const reconcile::WorkerOutcome& w : outcome.workers) {
          if (w.result != reconcile::PushResult::kApplied) ++behind;
        }
        std::string after =
            behind == 0 ? "; the workers that had taken it were put back"
                        : absl::StrCat("; ", behind, " of ", outcome.workers.size(),
                                       " worker(s) not put back yet (the next reconcile does)");
        if (behind != 0) base::LogWarn("desired state: rollback of a refused push", after);
        absl::Status refused(status.code(), absl::StrCat(status.message(), after));
        for (auto& entry : *dones) entry->done(refused);
      });
}

void StateService::MaybeCompact() {
  if (!uncommitted_.empty() || !journal_->WantsCompaction()) return;
  // A state too large to compact stays so until pushes shrink it: encoding it again on every
  // push in between would only be refused again.
  if (snapshot_size_.bytes() >= compaction_too_large_at_) return;
  // The state now is exactly the state as of the last durable record.
  std::string snapshot = model::DesiredStateToJson(desired_);
  snapshot.push_back('\n');
  if (snapshot.size() > snapshot_size_.bytes()) {
    // Pushes were measured against a count that is short: a bug, which the journal's own check
    // keeps from writing a snapshot that loading refuses.
    base::LogError("desired state: the snapshot holds ", snapshot.size(), " bytes, more than the ",
                   snapshot_size_.bytes(), " counted for it");
  }
  if (snapshot.size() > journal_->max_snapshot_bytes()) {
    compaction_too_large_at_ = snapshot_size_.bytes();
  } else {
    compaction_too_large_at_ = std::numeric_limits<uint64_t>::max();
  }
  uint64_t seq = journal_->durable_seq();
  journal_->Compact(std::move(snapshot), seq, [seq](absl::Status status) {
    if (!status.ok()) {
      base::LogWarn("desired-state journal: compaction at seq ", seq,
                    " failed (the journal keeps "
                    "every record; it is retried later): ",
                    status.message());
    } else {
      base::LogDebug("desired-state journal: compacted at seq ", seq);
    }
  });
}

}  // namespace hawk::state

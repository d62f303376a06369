#pragma once

// Changes to the desired state, pure.
//
// A Delta is one change, fully resolved: what a PATCH asks for once merged with the state held
// (a server upsert becomes the server's whole spec), what a whole-state PUT amounts to once
// diffed against the state held, and what the journal stores. Applying a Delta is idempotent and
// last-writer-wins per object, so replaying journal records over a snapshot that already holds
// some of them converges to the same state.
//
// ApplyDelta changes the state in O(size of the delta) and returns
//   - an Undo, which puts the state back (when the change cannot be made durable), and
//   - a ChangeSummary, what the reconciler plans from: for each object that changed, what it was
//     before (a worker that held the state before the change holds exactly that).
//
// Map and ACL contents travel in StringTables, so a delta of 100,000 entries costs about as
// much memory as the entries' bytes.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/optional.h"
#include "agent/model/desired.h"
#include "agent/model/string_table.h"

namespace hawk::model {

struct BackendDelta {
  std::string name;
  bool create = false;  // managed from now on (PUT listed it, PATCH upserted into a new one)
  bool drop = false;    // no longer managed, with all its servers (they stay as they are)
  // name → the server's whole spec after the change; nullopt: the server is no longer managed.
  std::vector<std::pair<std::string, absl::optional<ServerSpec>>> servers;

  friend bool operator==(const BackendDelta&, const BackendDelta&) = default;
};

// A map (key → value) or an ACL (pattern → "").
struct TableDelta {
  std::string name;
  bool create = false;  // managed from now on: `set` is then all it holds
  bool drop = false;    // no longer managed (its entries stay on the workers as they are)
  StringTable set;      // key → value to hold (for an ACL: patterns to add, values "")
  StringTable erase;    // keys to delete (values "")

  friend bool operator==(const TableDelta&, const TableDelta&) = default;
};

struct Delta {
  std::string version;                 // the version label after the change
  absl::optional<int64_t> generation;  // the generation after the change
  std::vector<BackendDelta> backends;
  std::vector<TableDelta> maps;
  std::vector<TableDelta> acls;

  // No object changes (the label and generation may still change).
  bool empty() const { return backends.empty() && maps.empty() && acls.empty(); }
  // Objects touched: servers, entries and patterns (for limits, logs and metrics).
  size_t object_count() const;

  friend bool operator==(const Delta&, const Delta&) = default;
};

// What changed, as the reconciler needs it: each object with its value before the change.
struct ServerChange {
  std::string backend, server;
  absl::optional<ServerSpec> before;  // nullopt: it was not managed
  bool managed_after = true;          // false: no longer managed (nothing to send)
};

struct TableChange {
  std::string name;
  // The whole content must be replaced on every worker: the table is newly managed (what each
  // worker holds is whatever its file said), or so much of it changed that one transaction costs
  // less than per-entry commands (kReplaceAboveFraction).
  bool replace = false;
  bool dropped = false;    // no longer managed: nothing to send, forget what was stale
  StringTable existed;     // changed keys that existed before (values: the value before)
  StringTable was_absent;  // changed keys that did not exist before (values "")

  size_t changed_keys() const { return existed.size() + was_absent.size(); }
};

struct ChangeSummary {
  std::string version;  // after the change
  absl::optional<int64_t> generation;
  std::vector<ServerChange> servers;
  std::vector<std::string> backends_created;
  std::vector<std::string> backends_dropped;
  std::vector<TableChange> maps;
  std::vector<TableChange> acls;

  bool empty() const {
    return servers.empty() && backends_created.empty() && backends_dropped.empty() &&
           maps.empty() && acls.empty();
  }
};

// A table change of more than this fraction of the table's size (and at least kReplaceMinKeys
// keys) is planned as one replace transaction instead of per-entry commands. A transaction sends
// the whole table (about 400 entries per 12 KiB `add map @ver` chunk) and swaps it atomically;
// per-entry commands send only what changed. Measured at 100,000 entries (bench/RESULTS.md,
// "Scale"): on 3.4 the crossover is ~7,000 entries (7 %), so 5 % stays on the per-entry side of
// it. Before 2.9 HAProxy finds the entry a `set map` or `del map|acl` names by walking the map's
// whole entry list (2.9 indexes it), so each per-entry command costs a pass over the map: on 2.6
// the crossover is ~60 entries whatever the map's size, and kReplaceMinKeys alone decides.
inline constexpr double kReplaceAboveFraction = 0.05;
inline constexpr size_t kReplaceMinKeys = 64;

// How the worker's HAProxy finds the entry a per-entry command names (the rule above).
enum class EntryLookup {
  kIndexed,     // 2.9+
  kWalksTable,  // before 2.9
};

// Whether `changed` keys of a table of `table_size` entries go as one replace transaction (the
// rule above); the planner, the pending changes and the deltas all decide by it. The pending
// changes and the deltas bound their memory with kIndexed; the planner knows the version.
inline bool ReplaceIsCheaper(size_t changed, size_t table_size,
                             EntryLookup lookup = EntryLookup::kIndexed) {
  double limit = lookup == EntryLookup::kWalksTable
                     ? 0.0
                     : kReplaceAboveFraction * static_cast<double>(table_size);
  if (limit < static_cast<double>(kReplaceMinKeys)) limit = static_cast<double>(kReplaceMinKeys);
  return static_cast<double>(changed) > limit;
}

// Restores the state an ApplyDelta changed. Opaque: only UndoDelta reads it.
struct Undo {
  std::string version;
  absl::optional<int64_t> generation;
  struct Step;
  std::vector<Step> steps;  // applied in reverse

  Undo();
  ~Undo();
  Undo(Undo&&) noexcept;
  Undo& operator=(Undo&&) noexcept;
};

struct AppliedDelta {
  Undo undo;
  ChangeSummary summary;
};

// Applies `delta` to `state`. Never fails: the delta was validated against this state (a server
// spec is complete, names are valid). Changes that change nothing (the same value set again,
// a delete of an absent key) are left out of the summary.
AppliedDelta ApplyDelta(const Delta& delta, DesiredState* state);
void UndoDelta(Undo undo, DesiredState* state);

}  // namespace hawk::model

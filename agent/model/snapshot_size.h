#pragma once

// SnapshotSize: how large the snapshot of the desired state is (DesiredStateToJson and a
// newline, what the journal compacts into), kept up to date in O(change) as changes are applied.
// The journal refuses at start a snapshot above its limit, so a push whose state would need a
// larger one is refused before it is applied; counting this way costs no encoding of the whole
// state on every push.
//
// The count is an upper bound, exact but for one byte per non-empty list: a comma is counted
// after every element, where a list of n elements has n - 1. It exceeds the real size by at most
// 3 + backends + maps + ACLs bytes.
//
// Pure. It mirrors DesiredStateToJson (desired_json.cc): a change to that format changes this
// too, and the tests compare the two.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/optional.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"

namespace hawk::model {

class SnapshotSize {
 public:
  // What Apply changed, for Revert.
  struct Undo {
    uint64_t root = 0;
    uint64_t lists = 0;
    struct Table {
      bool acl = false;
      std::string name;
      absl::optional<uint64_t> bytes;  // nullopt: it was not counted
    };
    std::vector<Table> tables;  // in the order Apply changed them
  };

  // An empty state's (no version, no generation, no objects).
  SnapshotSize();

  // Counts `state` in full: O(state), at start.
  void Reset(const DesiredState& state);

  // The snapshot's size (an upper bound, see above).
  uint64_t bytes() const { return root_ + lists_; }

  // Accounts for the change ApplyDelta just made: `summary` is what it returned, `after` the
  // state it left. O(summary), except for a table whose change is planned as a whole-table
  // replace (new, or changed in a large part): that table is counted again, O(table).
  Undo Apply(const ChangeSummary& summary, const DesiredState& after);
  // Puts back what Apply counted; several in the reverse order of their Applies.
  void Revert(Undo undo);

  // The bytes one element of each list takes (with its comma), for tests.
  static uint64_t ServerBytes(const std::string& name, const ServerSpec& spec);
  static uint64_t TableBytes(const std::string& name, const StringTable& table, bool acl);

 private:
  uint64_t root_ = 0;   // the object, version, generation, the lists' brackets, the newline
  uint64_t lists_ = 0;  // every element of the lists, at any depth
  // The bytes of each map's and each ACL's element (name, brackets and entries).
  absl::flat_hash_map<std::string, uint64_t> maps_;
  absl::flat_hash_map<std::string, uint64_t> acls_;
};

}  // namespace hawk::model

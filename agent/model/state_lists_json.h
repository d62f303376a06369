#pragma once

// Reading the three lists of a desired-state document — `backends` (with their servers), `maps`
// (with their entries) and `acls` (with their patterns) — into a DesiredState, validated. Shared
// by the whole-state document (desired_json.h) and the upsert part of a PATCH (patch_json.h),
// which has the same shape. Internal to the model's JSON codecs.

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/json_read.h"

namespace hawk::model {

struct StateListsOptions {
  // PATCH upserts: a server may list only the fields it changes; its address is then left empty
  // (an empty address is invalid in a document, so it can only mean "not given").
  bool partial_servers = false;
};

// Whether `key` is one of "backends", "maps", "acls".
bool IsStateListKey(absl::string_view key);

// Reads member `key` (one of the three) with value `value` at `path` into `out`.
absl::Status ParseStateList(json::Reader& reader, absl::string_view key, json::value& value,
                            const json::Path& path, const StateListsOptions& options,
                            DesiredState* out);

// A whole-state document's lists read straight into the change from the state held: the Delta
// DiffStates(held, <the document's state>) returns, without building that state. A listed
// object held with the same value costs a lookup and no copy, so a document of 100,000 entries
// with one change costs its parse and 100,000 lookups. Validation and errors are
// ParseStateList's. Read each list member the document has, then Finish.
class StateListsDiff {
 public:
  // `reader` (the document's) and `held` must outlive this.
  StateListsDiff(json::Reader& reader, const DesiredState& held);

  // Member `key` (one of the three) with value `value` at `path`.
  absl::Status Read(absl::string_view key, json::value& value, const json::Path& path);
  // Fills `out`'s backends, maps and ACLs as DiffStates orders them: what the document no longer
  // lists (dropped) first, sorted by name, then what it changes, sorted by name.
  void Finish(Delta* out);

 private:
  absl::Status ReadBackends(json::value& value, const json::Path& path);
  absl::Status ReadTables(json::value& value, const json::Path& path, bool acl);

  json::Reader& reader_;
  const DesiredState& held_;
  // Names the document listed (views into the document or the reader's arena: Finish runs while
  // the reader does).
  json::SeenNames backend_names_, map_names_, acl_names_;
  std::vector<BackendDelta> backends_;  // listed and changed (or new)
  std::vector<TableDelta> maps_, acls_;
};

}  // namespace hawk::model

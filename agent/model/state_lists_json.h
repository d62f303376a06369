#pragma once

// Reading the three lists of a desired-state document — `backends` (with their servers), `maps`
// (with their entries) and `acls` (with their patterns) — into a DesiredState, validated. Shared
// by the whole-state document (desired_json.h) and the upsert part of a PATCH (patch_json.h),
// which has the same shape. Internal to the model's JSON codecs.

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
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
absl::Status ParseStateList(absl::string_view key, json::element value, const json::Path& path,
                            const StateListsOptions& options, DesiredState* out);

}  // namespace hawk::model

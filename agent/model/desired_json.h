#pragma once

// The JSON codec of the whole desired state (PUT/GET /v1/state, and the snapshot the journal
// compacts into), following the proto3 JSON mapping, and its validation. ParseDesiredState is the
// only way a client document becomes a DesiredState: everything it returns passes the checks of
// cli_safety.h, so it can go into master-CLI lines without a byte that could end a command or
// start another one.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/model/cli_safety.h"
#include "agent/model/delta.h"
#include "agent/model/desired.h"
#include "agent/model/json_input.h"

namespace hawk::model {

// Limits enforced on every state hawk accepts (PUT, and the result of a PATCH).
inline constexpr size_t kMaxBackends = 10000;
inline constexpr size_t kMaxServersPerBackend = 10000;
inline constexpr size_t kMaxMaps = 1000;
inline constexpr size_t kMaxAcls = 1000;
// Per map / per ACL: ten times the 100,000 entries of a large ingress. A document is also
// bounded by the body limit; a PATCH may grow a map past what one document could carry.
inline constexpr size_t kMaxMapEntries = 1000000;
inline constexpr size_t kMaxAclPatterns = 1000000;
// The body limit the caller (HTTP layer) should enforce; the parser itself does not.
inline constexpr size_t kMaxDesiredStateJsonBytes = 32 * 1024 * 1024;

// Parses and validates a hawk.v1.DesiredState document.
//
// Every error is InvalidArgument. Errors about one field carry its JSON path as the payload
// base::FieldOf reads (`backends[0].servers[1].port`) and read `<path>: <why>`; errors about the
// whole document (not JSON, invalid UTF-8, not an object) carry no field. The first error in
// document order wins.
//
// Mapping rules: lowerCamelCase names; unknown fields and duplicate keys are errors; `null` means
// absent; `generation` (int64) is a JSON integer or a decimal string, ≥ 0; `port` and `weight`
// (int32) are JSON integers or decimal strings, never a fraction or exponent (`1e3`, `80.0`);
// `state` is an enum name (READY, DRAIN, MAINT); `version: ""` is the proto3 default (absent).
absl::StatusOr<DesiredState> ParseDesiredState(const json::JsonInput& input);

// The same document read as the change from `held`: DiffStates(held, *ParseDesiredState(input))
// with the same validation and errors, without building the document's state (a listed object
// held unchanged costs a lookup, no copy). The whole-state PUT's path.
absl::StatusOr<Delta> ParseDesiredStateAsDelta(const json::JsonInput& input,
                                               const DesiredState& held);

// Canonical proto3 JSON: fields in proto order, every list sorted by name, key or pattern,
// `generation` as a decimal string, enums by name, absent optionals (generation, port, weight,
// state) omitted, `version` and every list always written. ParseDesiredState(DesiredStateToJson(s))
// == s for every state ParseDesiredState returns.
std::string DesiredStateToJson(const DesiredState& state);

}  // namespace hawk::model

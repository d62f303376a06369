#pragma once

// The JSON codec of the desired state (PUT/GET /v1/state), following the proto3 JSON mapping, and
// its validation. ParseDesiredState is the only way client bytes become a DesiredState: everything
// it returns can go into master-CLI lines without a byte that could end a command or start
// another one (LF, CR, NUL anywhere; ';', spaces, '#' in identifiers and file names, '@' in
// identifiers; a file name starts with '/', so it never starts with '@'). Keys,
// values and patterns may still hold spaces, tabs, ';' and backslashes: the command builder
// escapes them (cli::EscapeWord).

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/model/desired.h"

namespace hawk::model {

// Limits enforced by ParseDesiredState.
inline constexpr size_t kMaxVersionBytes = 128;
inline constexpr size_t kMaxIdentifierBytes = 127;  // backend and server names
inline constexpr size_t kMaxHostnameBytes = 253;
inline constexpr size_t kMaxFilePathBytes = 1024;  // map and ACL names
inline constexpr size_t kMaxEntryBytes = 4096;     // a map key, a map value, an ACL pattern
inline constexpr size_t kMaxBackends = 10000;
inline constexpr size_t kMaxServersPerBackend = 10000;
inline constexpr size_t kMaxMaps = 1000;
inline constexpr size_t kMaxAcls = 1000;
inline constexpr size_t kMaxMapEntries = 100000;
inline constexpr size_t kMaxAclPatterns = 100000;
// The body limit the caller (HTTP layer) should enforce; the parser itself does not.
inline constexpr size_t kMaxDesiredStateJsonBytes = 32 * 1024 * 1024;

// Parses and validates a hawk.v1.DesiredState document, then normalises it (every list sorted by
// name, key or value) so that equal content compares equal.
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
absl::StatusOr<DesiredState> ParseDesiredState(absl::string_view json);

// Canonical proto3 JSON: fields in proto order, `generation` as a decimal string, enums by name,
// absent optionals (generation, port, weight, state) omitted, `version` and every list always
// written. Deterministic for a normalised state; ParseDesiredState(DesiredStateToJson(s)) == s for
// every state ParseDesiredState returns.
std::string DesiredStateToJson(const DesiredState& state);

// An IPv4 (dotted quad) or IPv6 literal (no brackets, no zone id): `set server … addr`. Any other
// valid address is a hostname (`set server … fqdn`).
bool IsIpLiteral(absl::string_view address);

}  // namespace hawk::model

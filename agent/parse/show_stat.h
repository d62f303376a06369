#pragma once

// Parser of `show stat -1 1 -1` (frontends only): one CSV line per frontend after a `# pxname,…`
// header. Columns are found by header name (HAProxy adds columns between versions; 2.6 and 3.4
// both have pxname, svname, scur, stot and conn_tot, at different positions from the 80th on).
// The CLI's own frontend and the master's relay are not listed, so polling this does not move
// what it reads, unlike `show info`'s CumConns.

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::parse {

struct FrontendTotals {
  int frontends = 0;
  // Connections accepted by all frontends (conn_tot; stot, sessions, where conn_tot is empty).
  int64_t accepted = 0;
  int64_t current = 0;  // sessions open now (scur)
};

// InvalidArgument when the header lacks a needed column or a FRONTEND row's number is malformed.
absl::StatusOr<FrontendTotals> ParseFrontendTotals(absl::string_view reply);

}  // namespace hawk::parse

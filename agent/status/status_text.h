#pragma once

// Pure: `hawk status`'s screen, rendered from the per-worker report as GET /v1/workers (or a
// /v1/watch line's "report") sends it: the master, a table of workers, then each worker's stale
// objects and refused commands, as `show proc` would show them if it knew. No I/O, no clock.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::status {

struct RenderOptions {
  bool color = false;  // ANSI colours (a terminal)
};

// InvalidArgument when `report_json` is not a report.
absl::StatusOr<std::string> RenderReport(absl::string_view report_json,
                                         const RenderOptions& options);

}  // namespace hawk::status

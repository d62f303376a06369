#pragma once

// Pure: `hawk apply`'s screen, rendered from the answer to PUT or PATCH /v1/state: the version
// and delivery, then per worker its result (APPLIED, PARTIAL, PENDING) and reason, its stale
// objects and its refused commands. A dry run's answer (`?dryRun=true`): per worker, the commands
// the push would send, the tables it would replace, and what would stay stale or be refused. No
// I/O, no clock.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/status/status_text.h"

namespace hawk::status {

struct ApplyView {
  std::string text;
  // Every worker the push targeted reports APPLIED, and there was at least one. A dry run: no
  // worker would keep anything stale or refuse anything.
  bool all_applied = false;
};

// InvalidArgument when `answer_json` is not a push answer (no "workers" array).
absl::StatusOr<ApplyView> RenderPushAnswer(absl::string_view answer_json,
                                           const RenderOptions& options);

}  // namespace hawk::status

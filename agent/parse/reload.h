#pragma once

// Parser of the master's reply to `reload` / `hard-reload`:
//
//   2.6:   nothing; the master closes the connection at once (poll `show proc` instead)
//   2.7+:  Success=1            3.1+, while another reload runs:   Success=0
//          --                                                      --
//          <startup logs>                                          Another reload is still in
//          progress.
//
// Only the first line decides. The logs need USE_SHM_OPEN and on 3.0 carry stale lines from the
// previous cycle, so they are kept for display, never interpreted (beyond the one retryable
// case).

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::parse {

enum class ReloadStatus {
  kNoStatus,  // empty reply: 2.6, or a connection cut before the answer
  kSuccess,   // Success=1
  kFailure,   // Success=0
};

struct ReloadReply {
  ReloadStatus status = ReloadStatus::kNoStatus;
  std::string log;  // the lines after "--", trailing newlines dropped
  // Success=0 because a reload was already running (3.1+): retry later, the config is not bad.
  bool another_in_progress = false;
};

// InvalidArgument when the reply is not empty and does not start with `Success=0|1` (an
// "Unknown command" text from 2.6 for `hard-reload`, say), or the second line is not "--".
absl::StatusOr<ReloadReply> ParseReloadReply(absl::string_view reply);

}  // namespace hawk::parse

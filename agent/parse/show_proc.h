#pragma once

// Parser of the master's `show proc`:
//
//   #<PID>          <type>          <reloads>       <uptime>        <version>
//   9565            master          10 [failed: 0]  0d00h01m52s     2.6.12-1+deb12u4
//   # workers
//   12242           worker          0               0d00h00m00s     2.6.12-1+deb12u4
//   # old workers
//   12155           worker          1               0d00h00m02s     2.6.12-1+deb12u4
//   # programs
//
// Columns are padded to 15 characters but a longer field is followed by one space only, so rows
// are split on whitespace. Extra trailing columns (`show proc debug`'s ipc fds, 3.1+) are ignored.
// Sections: `# workers` (always), `# old workers` (when there are any), `# programs` /
// `# old programs` (≤3.0 always, 3.1–3.2 when programs exist, never on 3.3+). Unknown `# …`
// sections are skipped with their rows, so a future section does not blind the agent.
//
// This reports where each row was listed, nothing more. Which worker is current is decided from
// each worker's `show info` (Stopping:), never from the section: after a failed reload 3.4 lists
// the still-serving worker under `# old workers` and leaves `# workers` empty.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::parse {

struct ProcessEntry {
  int pid = 0;
  std::string type;  // "master", "worker", or the program's name
  // The row was under `# old workers` / `# old programs`. Not a role (see the file comment).
  bool listed_as_old = false;
  // Reloads this process has lived through (the master: every reload attempt, failed included).
  int reloads = 0;
  int failed_reloads = 0;  // master only: `[failed: N]`, failures since the last success
  int64_t uptime_seconds = 0;
  std::string version;  // empty for programs (HAProxy prints "-")
};

struct ShowProc {
  ProcessEntry master;
  std::vector<ProcessEntry> workers;   // `# workers` rows, then `# old workers` rows, as listed
  std::vector<ProcessEntry> programs;  // `# programs` and `# old programs` rows (≤3.2)
};

// InvalidArgument on a missing or wrong header, a missing or repeated master row, a malformed row
// (pid, reloads, uptime), a duplicate pid, or text that is not `show proc` output at all.
absl::StatusOr<ShowProc> ParseShowProc(absl::string_view reply);

}  // namespace hawk::parse

#pragma once

// Parser of a worker's `show info`: one `Key: value` line per field (keys may hold spaces:
// `Unstoppable Jobs`, `Build info`). The fields hawk relies on are typed; every line is also kept
// in `fields`. `Stopping: 0|1` is what tells the current worker from leaving ones on every
// version (a worker in its `grace` period already says 1).

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::parse {

// More fields than any HAProxy prints (3.4 has 79); a reply with more is not `show info`.
inline constexpr size_t kMaxShowInfoFields = 4096;

struct ShowInfo {
  int pid = 0;                 // Pid
  bool stopping = false;       // Stopping: 1 while soft-stopping, grace period included
  int64_t curr_conns = 0;      // CurrConns
  int64_t uptime_seconds = 0;  // Uptime_sec
  std::string version;         // Version
  std::string node;            // node ("" when absent)
  int64_t listeners = -1;      // Listeners (-1 when absent); 1 on a worker that finished stopping
  absl::flat_hash_map<std::string, std::string> fields;  // every `Key: value` line, first wins
};

// InvalidArgument when a line is not `Key: value`, or Pid, Stopping, CurrConns, Uptime_sec or
// Version is missing or malformed (all present on 2.6, 3.0 and 3.4).
absl::StatusOr<ShowInfo> ParseShowInfo(absl::string_view reply);

}  // namespace hawk::parse

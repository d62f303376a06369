#pragma once

// The per-worker report: what hawk knows about the master and every worker process.
// Plain data; the JSON form follows the proto3 JSON mapping of hawk.v1.WorkersReport
// (proto/hawk/v1/hawk.proto).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hawk::model {

enum class WorkerRole {
  kCurrent,   // serving new connections: `show info` says Stopping: 0
  kLeaving,   // soft-stopping after a reload (Stopping: 1), still holding connections
  kStarting,  // listed by `show proc` but not answering yet (3.1+ while it parses its config)
  kUnknown,   // listed, but `show info` failed for another reason (see WorkerReport::error)
};

// "CURRENT", "LEAVING", "STARTING", "UNKNOWN": the proto enum value names.
absl::string_view WorkerRoleName(WorkerRole role);

struct WorkerReport {
  int pid = 0;
  WorkerRole role = WorkerRole::kUnknown;
  bool stopping = false;
  int reloads = 0;  // reloads this worker has lived through (failed ones included)
  int64_t uptime_seconds = 0;
  std::string version;
  int64_t connections = 0;  // CurrConns: live client connections
  // Which `show proc` section listed it; informative only (3.4 lists the serving worker under
  // "old workers" after a failed reload).
  bool listed_as_old = false;
  std::string error;  // why `show info` failed, when role is kUnknown
};

struct MasterReport {
  int pid = 0;
  int reloads = 0;         // every reload attempt, failed ones included
  int failed_reloads = 0;  // failures since the last successful reload
  std::string version;
  int64_t uptime_seconds = 0;
};

struct WorkersReport {
  bool master_reachable = false;
  std::string master_error;  // why the master CLI is unreachable, or the last poll failed
  MasterReport master;
  std::vector<WorkerReport> workers;              // sorted: CURRENT first, then by pid descending
  absl::Time observed_at = absl::InfinitePast();  // when the last successful poll finished

  const WorkerReport* Find(int pid) const;
  const WorkerReport* Current() const;  // the newest CURRENT worker, or null
};

// Orders workers for display and for deterministic JSON: CURRENT, STARTING, LEAVING, UNKNOWN;
// newer (higher pid is not reliable, so fewer reloads) first.
void SortWorkers(std::vector<WorkerReport>* workers);

}  // namespace hawk::model

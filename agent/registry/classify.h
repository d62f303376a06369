#pragma once

// Pure: turns `show proc` plus each worker's `show info` into the per-worker report.
//
// Role comes from the worker's own state, never from the `show proc` section: 3.4 lists the
// still-serving worker under "# old workers" after a failed reload (so does any 3.1+), and a
// worker's reload counter counts failed reloads too. `Stopping: 0` is CURRENT, `Stopping: 1` is
// LEAVING (grace period included).

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "agent/model/workers.h"
#include "agent/parse/show_info.h"
#include "agent/parse/show_proc.h"

namespace hawk::registry {

// `infos` holds the `@!<pid> show info` outcome per listed pid (a missing pid was not asked).
// `previous` is the last report, used for a worker whose `show info` failed transiently.
std::vector<model::WorkerReport> ClassifyWorkers(
    const parse::ShowProc& proc,
    const absl::flat_hash_map<int, absl::StatusOr<parse::ShowInfo>>& infos,
    const model::WorkersReport& previous);

model::MasterReport MasterFromShowProc(const parse::ShowProc& proc);

// Whether the worker `before` (last listed under master `master_before`) can be the process now
// listed with its pid under master `master_now`, with `reloads` and `uptime_seconds`. A worker's
// reload count and uptime never go down and a new master starts new workers: when one of them
// does, the old process exited and a new one got its pid (pids wrap, soonest in a container's
// pid namespace). Uptime has whole seconds and comes from `show info` or `show proc`: 2 s of
// slack. A master pid of 0 is unknown.
bool SameProcess(int master_before, const model::WorkerReport& before, int master_now, int reloads,
                 int64_t uptime_seconds);

}  // namespace hawk::registry

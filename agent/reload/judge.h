#pragma once

// Pure: did a reload succeed, fail, or is it still under way? Decided from what the master
// reports before and after, because 2.6 answers `reload` with nothing at all:
//
//   - the master's reload counter (every attempt, failed ones included) must have moved past the
//     baseline, or the reload has not happened yet;
//   - `[failed: N]` counts failures since the last success and goes back to 0 on success: N > 0
//     after the reload means it failed, whatever the section layout (3.4 leaves `# workers`
//     empty after a failure);
//   - success needs a CURRENT worker that was not there before (on 3.1+ the new worker is listed
//     while it still parses its configuration and is STARTING until it answers: still pending).
//
// On 2.7+ the reply's `Success=0|1` line decides first; the report then only names the new pid,
// and, for Success=0, must show the attempt (the counter moved) before the verdict is given, so
// that the answer never disagrees with the worker report read right after it.

#include <string>

#include "absl/container/flat_hash_set.h"
#include "agent/model/workers.h"
#include "agent/parse/reload.h"

namespace hawk::reload {

// What the master said just before `reload` was sent.
struct ReloadBaseline {
  int master_pid = 0;
  int master_reloads = 0;
  absl::flat_hash_set<int> worker_pids;  // every listed worker, current or leaving
};

enum class Verdict {
  kPending,    // not decided yet: look again at the next report
  kSucceeded,  // a new worker serves
  kFailed,     // HAProxy kept the previous worker (the configuration did not load)
};

struct ReloadJudgement {
  Verdict verdict = Verdict::kPending;
  int new_worker_pid = 0;  // kSucceeded
  std::string reason;      // kFailed: why, for the operator
};

inline constexpr char kSuccessZeroReason[] =
    "HAProxy answered Success=0: the new configuration did not load; the previous worker keeps "
    "serving";

// `reply` is the parsed answer to `reload` (kNoStatus on 2.6). `report` is a worker report
// polled after the reply.
ReloadJudgement JudgeReload(const ReloadBaseline& baseline, const parse::ReloadReply& reply,
                            const model::WorkersReport& report);

}  // namespace hawk::reload

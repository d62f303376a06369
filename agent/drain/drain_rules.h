#pragma once

// Pure rules of GET /v1/drain (agent/drain/drain_hub.h serves it): its parameters, and when a
// wait is over. No I/O, no clock: time comes in as parameters.
//
// "A worker accepted a new connection" is read from each worker's frontends (`show stat`'s
// conn_tot, summed; parse/show_stat.h), not from `show info`'s CumConns or CumReq: those count
// the connection the master opens to relay each `@!<pid>` command (one per `show info`, on
// HAProxy 2.6 as on 3.4), so the very poll that watches them would keep them moving.

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"

namespace hawk::drain {

// Both bounds are capped: a preStop hook that waits longer than this holds a pod's deletion for
// no connection a load balancer still sends.
inline constexpr int64_t kMaxDrainMs = 5 * 60 * 1000;
inline constexpr int64_t kDefaultQuietMs = 2000;
inline constexpr int64_t kDefaultBoundMs = 30000;

struct DrainParams {
  absl::Duration quiet = absl::Milliseconds(kDefaultQuietMs);
  absl::Duration bound = absl::Milliseconds(kDefaultBoundMs);
};

// quietMs and boundMs as the query gave them (nullopt: absent, the default). InvalidArgument
// naming the parameter: not an integer in 0..kMaxDrainMs, or quietMs above boundMs (the wait
// would always end at the bound).
absl::StatusOr<DrainParams> ParseDrainParams(const absl::optional<std::string>& quiet_ms,
                                             const absl::optional<std::string>& bound_ms);

// Why a wait ended.
enum class DrainReason {
  kQuiet,        // no worker accepted a connection for `quiet`
  kBound,        // `bound` passed first
  kUnavailable,  // the master CLI cannot be asked: nothing can be told
};
absl::string_view DrainReasonName(DrainReason reason);  // "quiet", "bound", "unavailable"

// Per worker, connections its frontends have accepted so far (a counter that only grows while
// the process lives).
using ConnectionTotals = absl::flat_hash_map<int, int64_t>;

// When a worker last accepted a connection, from successive samples of every worker's totals.
// A sample is asked at `asked` and answered at `answered`; the counters were read in between. A
// counter that moved (or a worker not in the previous sample that has accepted any) is activity,
// dated `answered` (the latest it can have happened). A sample shows quiet up to `asked`.
class ActivityTracker {
 public:
  void Observe(absl::Time asked, absl::Time answered, const ConnectionTotals& totals);
  bool has_sample() const { return has_sample_; }
  // Since when no activity is known: the first sample's answer or the last activity.
  absl::Time quiet_since() const { return quiet_since_; }
  // Up to when samples show quiet (the last sample's `asked`).
  absl::Time quiet_until() const { return quiet_until_; }
  // Forgets everything: the next sample is a new baseline.
  void Reset() { *this = ActivityTracker(); }

 private:
  bool has_sample_ = false;
  ConnectionTotals last_;
  absl::Time quiet_since_ = absl::InfinitePast();
  absl::Time quiet_until_ = absl::InfinitePast();
};

// Whether a wait that began at `started` is over at `now`: quiet once the samples show no
// activity from `started` (or later) over `quiet`; bound once `bound` has passed.
absl::optional<DrainReason> Decide(const DrainParams& params, absl::Time started,
                                   const ActivityTracker& activity, absl::Time now);

}  // namespace hawk::drain

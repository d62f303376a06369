#pragma once

// ExternalReloads: notices reloads hawk did not start (SIGUSR2, another tool on the master CLI)
// and decides each one's outcome. Pure: fed the worker reports in order, with the time as
// parameters; no I/O, no clock.
//
// A reload moves the master's reload counter (every attempt, failed ones included). A counter
// beyond what hawk has accounted for — its own reloads included (AccountOwnReload) — is an
// external reload; the reports that follow decide it as they decide hawk's own (judge.h), against
// the report seen just before it. A first sight of a master (hawk started, or HAProxy was
// restarted) records nothing.

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/model/workers.h"
#include "agent/reload/judge.h"

namespace hawk::reload {

// An external reload whose new worker does not show up within this long is decided as pending
// (recorded as timed out).
inline constexpr absl::Duration kExternalVerdict = absl::Seconds(60);

// An external reload, decided.
struct ExternalReload {
  // kSucceeded, kFailed, or kPending: no verdict within kExternalVerdict, or superseded by
  // another reload before its new worker was seen (`reason` says which when it knows).
  ReloadJudgement judgement;
  absl::Time noticed_at;    // when hawk noticed it: hawk does not know when it was triggered
  absl::Duration duration;  // from then to the verdict
};

class ExternalReloads {
 public:
  // hawk's own `reload` went out with the master's counter at `reloads_before`: the attempt is
  // hawk's, not an external reload.
  void AccountOwnReload(int reloads_before);

  // The next worker report, polled at `now`.
  // `own_reload_under_way`: hawk has sent `reload` and awaits its verdict (3.1+ answers only once
  // the new worker is ready, and the registry polls meanwhile, so the counter may move before
  // hawk accounts for it). Returns the external reloads this report decided, oldest first.
  std::vector<ExternalReload> Observe(const model::WorkersReport& report, bool own_reload_under_way,
                                      absl::Time now);

 private:
  ExternalReload Decided(ReloadJudgement judgement, absl::Time now) const;

  ReloadBaseline last_seen_;  // the master as of the last report; master_pid 0: none seen yet
  // The master's reload count that hawk has accounted for (its own reloads included).
  int accounted_reloads_ = 0;
  // The external reload under way: the master as it was just before it, and when it was noticed.
  absl::optional<ReloadBaseline> under_way_;
  absl::Time noticed_at_ = absl::InfinitePast();
};

}  // namespace hawk::reload

#include "agent/reload/master_gate.h"

namespace hawk::reload {

MasterVerdict JudgeMaster(const MasterView& master, absl::Duration grace) {
  if (master.reachable) return MasterVerdict::kGo;
  // Never reached, and a connect already failed: nothing listens there (yet).
  if (!master.ever_reached && master.connect_failures > 0) return MasterVerdict::kFail;
  // Longer than a reload keeps the master away, or a connect that is never answered.
  if (master.unreachable_for >= grace) return MasterVerdict::kFail;
  return MasterVerdict::kWait;
}

}  // namespace hawk::reload

#include "agent/reload/external_reload.h"

#include <algorithm>
#include <utility>

#include "agent/parse/reload.h"

namespace hawk::reload {
namespace {

ReloadBaseline BaselineFrom(const model::WorkersReport& report) {
  ReloadBaseline baseline;
  baseline.master_pid = report.master.pid;
  baseline.master_reloads = report.master.reloads;
  for (const model::WorkerReport& w : report.workers) baseline.worker_pids.insert(w.pid);
  return baseline;
}

}  // namespace

void ExternalReloads::AccountOwnReload(int reloads_before) {
  accounted_reloads_ = std::max(accounted_reloads_, reloads_before + 1);
}

ExternalReload ExternalReloads::Decided(ReloadJudgement judgement, absl::Time now) const {
  return ExternalReload{std::move(judgement), noticed_at_,
                        std::max(now - noticed_at_, absl::ZeroDuration())};
}

std::vector<ExternalReload> ExternalReloads::Observe(const model::WorkersReport& report,
                                                     bool own_reload_under_way, absl::Time now) {
  std::vector<ExternalReload> decided;
  if (report.master.pid == 0) return decided;  // the master was not reached
  if (report.master.pid != last_seen_.master_pid) {
    // First sight of this master (hawk started, or HAProxy was restarted): nothing to record.
    accounted_reloads_ = report.master.reloads;
    under_way_.reset();
    last_seen_ = BaselineFrom(report);
    return decided;
  }
  if (report.master.reloads > accounted_reloads_ && !own_reload_under_way) {
    if (under_way_.has_value()) {
      // A second reload before the first one's verdict: the first is decided as it stands.
      decided.push_back(Decided(ReloadJudgement{Verdict::kPending, 0,
                                                "superseded by another reload before its new "
                                                "worker was seen"},
                                now));
    }
    under_way_ = last_seen_;
    noticed_at_ = now;
    accounted_reloads_ = report.master.reloads;
  }
  if (under_way_.has_value()) {
    ReloadJudgement judgement = JudgeReload(*under_way_, parse::ReloadReply{}, report);
    if (judgement.verdict != Verdict::kPending || now - noticed_at_ >= kExternalVerdict) {
      decided.push_back(Decided(std::move(judgement), now));
      under_way_.reset();
    }
  }
  last_seen_ = BaselineFrom(report);
  return decided;
}

}  // namespace hawk::reload

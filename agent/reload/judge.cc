#include "agent/reload/judge.h"

#include "absl/strings/str_cat.h"

namespace hawk::reload {
namespace {

// The CURRENT worker that was not listed before the reload, or 0.
int NewCurrentWorker(const ReloadBaseline& baseline, const model::WorkersReport& report) {
  for (const model::WorkerReport& w : report.workers) {
    if (w.role == model::WorkerRole::kCurrent && !baseline.worker_pids.contains(w.pid)) {
      return w.pid;
    }
  }
  return 0;
}

}  // namespace

ReloadJudgement JudgeReload(const ReloadBaseline& baseline, const parse::ReloadReply& reply,
                            const model::WorkersReport& report) {
  ReloadJudgement judgement;
  const model::MasterReport& master = report.master;
  if (reply.status == parse::ReloadStatus::kFailure) {
    // Decided, but given once the report shows the attempt, so that the answer and
    // GET /v1/workers (failedReloads, the worker still serving) agree.
    bool same_master =
        master.pid == 0 || baseline.master_pid == 0 || master.pid == baseline.master_pid;
    if (same_master && master.reloads <= baseline.master_reloads) return judgement;
    judgement.verdict = Verdict::kFailed;
    judgement.reason = kSuccessZeroReason;
    return judgement;
  }
  if (master.pid != 0 && baseline.master_pid != 0 && master.pid != baseline.master_pid) {
    judgement.verdict = Verdict::kFailed;
    judgement.reason = absl::StrCat("the HAProxy master changed (pid ", baseline.master_pid, " -> ",
                                    master.pid, "): HAProxy was restarted, not reloaded");
    return judgement;
  }
  bool reloaded =
      reply.status == parse::ReloadStatus::kSuccess || master.reloads > baseline.master_reloads;
  if (!reloaded) return judgement;
  if (reply.status == parse::ReloadStatus::kNoStatus && master.failed_reloads > 0) {
    judgement.verdict = Verdict::kFailed;
    judgement.reason = absl::StrCat(
        "the master's failed-reload count is ", master.failed_reloads,
        " after the reload: the new configuration did not load; the previous worker keeps "
        "serving (HAProxy ",
        master.version.empty() ? "2.6" : master.version,
        " gives no reason; set --haproxy-binary to have hawk run `haproxy -c` first)");
    return judgement;
  }
  if (int pid = NewCurrentWorker(baseline, report); pid != 0) {
    judgement.verdict = Verdict::kSucceeded;
    judgement.new_worker_pid = pid;
  }
  return judgement;
}

}  // namespace hawk::reload

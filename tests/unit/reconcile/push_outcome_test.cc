// A push's outcome on one worker (reconcile/push_outcome.h).

#include "agent/reconcile/push_outcome.h"

#include "agent/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::reconcile {
namespace {

TEST(OutcomeOnWorkerTest, AppliedPartialOrWhyNotYet) {
  model::WorkerSync sync;
  sync.in_sync = true;
  StaleSet stale;
  WorkerOutcome applied =
      OutcomeOnWorker(4242, model::WorkerRole::kCurrent, /*reached=*/true, false, sync, stale);
  EXPECT_EQ(applied.pid, 4242);
  EXPECT_EQ(applied.role, model::WorkerRole::kCurrent);
  EXPECT_EQ(applied.result, PushResult::kApplied);
  EXPECT_STREQ(PushResultName(applied.result), "APPLIED");
  EXPECT_TRUE(applied.reason.empty());

  sync.in_sync = false;
  sync.refused.push_back(
      model::Refusal{"backend/be/server/s", "set server be/s state ready", "Proxy is disabled."});
  stale.Add({"backend/be/server/s", "state", "ready", "maint", "refused"});
  WorkerOutcome partial =
      OutcomeOnWorker(7, model::WorkerRole::kLeaving, /*reached=*/true, false, sync, stale);
  EXPECT_EQ(partial.result, PushResult::kPartial);
  EXPECT_STREQ(PushResultName(partial.result), "PARTIAL");
  EXPECT_EQ(partial.refused.size(), 1u);
  EXPECT_EQ(partial.stale.size(), 1u);

  model::WorkerSync fresh;
  WorkerOutcome waiting =
      OutcomeOnWorker(7, model::WorkerRole::kCurrent, /*reached=*/false, false, fresh, stale);
  EXPECT_EQ(waiting.result, PushResult::kPending);
  EXPECT_STREQ(PushResultName(waiting.result), "PENDING");
  EXPECT_EQ(waiting.reason, "not started");
  EXPECT_TRUE(waiting.stale.empty());  // only a finished reconcile reports what stayed stale
  EXPECT_EQ(
      OutcomeOnWorker(7, model::WorkerRole::kCurrent, false, /*busy=*/true, fresh, stale).reason,
      "still applying");
  fresh.error = "connection closed";
  EXPECT_EQ(OutcomeOnWorker(7, model::WorkerRole::kCurrent, false, true, fresh, stale).reason,
            "retrying: connection closed");
}

}  // namespace
}  // namespace hawk::reconcile

// The PUT/PATCH answer (hawk.v1.PushResponse) as JSON: a controller can tell from the answer alone
// whether the durable state reached every worker, some, or none.

#include "agent/api/state_api.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::api {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

reconcile::WorkerOutcome Worker(int pid, reconcile::PushResult result) {
  reconcile::WorkerOutcome outcome;
  outcome.pid = pid;
  outcome.role = model::WorkerRole::kCurrent;
  outcome.result = result;
  if (result == reconcile::PushResult::kPending) outcome.reason = "busy";
  return outcome;
}

reconcile::PushOutcome Outcome(std::vector<reconcile::WorkerOutcome> workers) {
  reconcile::PushOutcome outcome;
  outcome.version = "v1";
  outcome.generation = 7;
  outcome.workers = std::move(workers);
  return outcome;
}

// Issue 24, defect 7: a push while no worker is reachable was answered like a success,
// `"workers":[]` and nothing else.
TEST(PushOutcomeToJsonTest, NoWorkerReachableSaysTheStateIsDurableButReachedNone) {
  std::string json = PushOutcomeToJson(Outcome({}));
  EXPECT_THAT(json,
              AllOf(HasSubstr(R"("workers":[])"), HasSubstr(R"("delivery":"NO_WORKER")"),
                    HasSubstr(R"("warning":"the state is durable, but no worker is reachable)")))
      << json;
}

TEST(PushOutcomeToJsonTest, NoWorkerFinishedInTimeIsNoWorkerToo) {
  std::string json = PushOutcomeToJson(Outcome({Worker(10, reconcile::PushResult::kPending)}));
  EXPECT_THAT(json, AllOf(HasSubstr(R"("delivery":"NO_WORKER")"),
                          HasSubstr(R"("warning":"the state is durable, but no worker finished)")))
      << json;
}

TEST(PushOutcomeToJsonTest, SomeAndAllWorkers) {
  std::string some = PushOutcomeToJson(Outcome(
      {Worker(10, reconcile::PushResult::kApplied), Worker(11, reconcile::PushResult::kPending)}));
  EXPECT_THAT(some, AllOf(HasSubstr(R"("delivery":"SOME_WORKERS")"),
                          HasSubstr(R"("warning":"the state is durable, but 1 of 2 workers)")))
      << some;
  std::string all = PushOutcomeToJson(Outcome(
      {Worker(10, reconcile::PushResult::kApplied), Worker(11, reconcile::PushResult::kPartial)}));
  EXPECT_THAT(all, AllOf(HasSubstr(R"("delivery":"ALL_WORKERS")"), Not(HasSubstr("warning"))))
      << all;
  EXPECT_EQ(all, R"({"version":"v1","generation":"7","delivery":"ALL_WORKERS","workers":[)"
                 R"({"pid":10,"role":"CURRENT","result":"APPLIED","refused":[],"stale":[]},)"
                 R"({"pid":11,"role":"CURRENT","result":"PARTIAL","refused":[],"stale":[]}]})");
}

}  // namespace
}  // namespace hawk::api

// PushWaiters on a real loop, with the reconciler's two answers (is a wait over, what is a push's
// outcome) played by the test.

#include "agent/reconcile/push_waiters.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/uv/loop.h"
#include "agent/uv/timer.h"
#include "gtest/gtest.h"
#include "tests/support/run_loop_until.h"

namespace hawk::reconcile {
namespace {

class PushWaitersTest : public ::testing::Test {
 protected:
  PushWaitersTest()
      : waiters_(std::make_unique<PushWaiters>(
            loop_.get(),
            [this](uint64_t seq, int only_pid) {
              return (only_pid != 0 ? only_pid_reached_ : reached_) >= seq;
            },
            [this](uint64_t seq) {
              PushOutcome outcome;
              outcome.version = "v" + std::to_string(seq);
              WorkerOutcome worker;
              worker.pid = 42;
              worker.result = reached_ >= seq ? PushResult::kApplied : PushResult::kPending;
              outcome.workers.push_back(worker);
              return outcome;
            })) {}
  ~PushWaitersTest() override {
    waiters_.reset();
    EXPECT_TRUE(loop_.RunDryAndClose().ok());
  }
  void RunUntil(const std::function<bool()>& done) {
    ASSERT_TRUE(hawk::testing::RunLoopUntil(loop_.get(), done))
        << "condition not reached within 5 s";
  }
  // Runs the loop for `ms` milliseconds.
  void RunFor(uint64_t ms) {
    bool over = false;
    uv::Timer window(loop_.get());
    window.Start(absl::Milliseconds(ms), [&] { over = true; });
    RunUntil([&] { return over; });
  }

  uv::Loop loop_;
  uint64_t reached_ = 0;           // the push every target worker reached
  uint64_t only_pid_reached_ = 0;  // the push the one worker waited for reached
  std::unique_ptr<PushWaiters> waiters_;
};

TEST_F(PushWaitersTest, AnsweredOnTheNextLoopTurnWhenAlreadyComplete) {
  reached_ = 3;
  std::vector<std::string> answered;
  waiters_->Add(2, 0, absl::Seconds(5), [&](PushOutcome o) { answered.push_back(o.version); });
  EXPECT_TRUE(answered.empty());  // never from inside Add
  RunUntil([&] { return !answered.empty(); });
  EXPECT_EQ(answered, std::vector<std::string>{"v2"});
  EXPECT_EQ(waiters_->size(), 0u);
}

TEST_F(PushWaitersTest, CheckAnswersTheCompleteOnesInOrder) {
  std::vector<std::string> answered;
  auto record = [&](PushOutcome o) {
    answered.push_back(o.version + (o.workers[0].result == PushResult::kApplied ? "+" : "-"));
  };
  waiters_->Add(2, 0, absl::Seconds(5), record);
  waiters_->Add(1, 0, absl::Seconds(5), record);
  waiters_->Add(3, 0, absl::Seconds(5), record);
  waiters_->Add(1, /*only_pid=*/42, absl::Seconds(5), record);
  RunFor(20);  // the first checks found nothing complete
  EXPECT_TRUE(answered.empty());
  reached_ = 2;
  waiters_->Check();
  EXPECT_EQ(answered, (std::vector<std::string>{"v2+", "v1+"}));
  only_pid_reached_ = 1;
  waiters_->Check();
  EXPECT_EQ(answered.back(), "v1+");
  EXPECT_EQ(waiters_->size(), 1u);  // push 3 still waits
}

TEST_F(PushWaitersTest, TheDeadlineAnswersWithTheOutcomeAsItIs) {
  std::vector<std::string> answered;
  waiters_->Add(5, 0, absl::Milliseconds(30), [&](PushOutcome o) {
    answered.push_back(o.version + (o.workers[0].result == PushResult::kPending ? " pending" : ""));
  });
  RunUntil([&] { return !answered.empty(); });
  EXPECT_EQ(answered, std::vector<std::string>{"v5 pending"});
  EXPECT_EQ(waiters_->size(), 0u);
  waiters_->Check();  // nothing left to answer twice
  EXPECT_EQ(answered.size(), 1u);
}

TEST_F(PushWaitersTest, ADoneMayAddAWaiter) {
  reached_ = 1;
  int answered = 0;
  waiters_->Add(1, 0, absl::Seconds(5), [&](PushOutcome) {
    ++answered;
    waiters_->Add(1, 0, absl::Seconds(5), [&](PushOutcome) { ++answered; });
  });
  RunUntil([&] { return answered == 2; });
  EXPECT_EQ(waiters_->size(), 0u);
}

TEST_F(PushWaitersTest, DestroyingThemDropsTheWaitersUnanswered) {
  int answered = 0;
  waiters_->Add(1, 0, absl::Milliseconds(10), [&](PushOutcome) { ++answered; });
  waiters_.reset();
  RunFor(30);
  EXPECT_EQ(answered, 0);
}

}  // namespace
}  // namespace hawk::reconcile

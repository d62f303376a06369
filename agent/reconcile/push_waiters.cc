#include "agent/reconcile/push_waiters.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "agent/uv/timer.h"

namespace hawk::reconcile {
namespace {}  // namespace

struct PushWaiters::Waiter {
  explicit Waiter(uv_loop_t* loop) : deadline(loop), first_check(loop) {}
  uint64_t seq = 0;
  int only_pid = 0;  // wait for this worker only (0: every target worker)
  Done done;
  uv::Timer deadline;
  uv::Timer first_check;
};

PushWaiters::PushWaiters(uv_loop_t* loop, Complete complete, OutcomeOf outcome_of)
    : loop_(loop), complete_(std::move(complete)), outcome_of_(std::move(outcome_of)) {}

PushWaiters::~PushWaiters() = default;

void PushWaiters::Add(uint64_t seq, int only_pid, absl::Duration timeout, Done done) {
  auto waiter = std::make_unique<Waiter>(loop_);
  waiter->seq = seq;
  waiter->only_pid = only_pid;
  waiter->done = std::move(done);
  Waiter* raw = waiter.get();
  // Both timers belong to the waiter, which this object owns: no guard needed.
  waiter->deadline.Start(timeout, [this, raw] { OnDeadline(raw); });
  waiter->first_check.Start(absl::ZeroDuration(), [this] { Check(); });
  waiters_.push_back(std::move(waiter));
}

void PushWaiters::OnDeadline(Waiter* waiter) {
  auto it = std::find_if(waiters_.begin(), waiters_.end(),
                         [waiter](const auto& w) { return w.get() == waiter; });
  if (it == waiters_.end()) return;
  std::unique_ptr<Waiter> owned = std::move(*it);
  waiters_.erase(it);
  owned->done(outcome_of_(owned->seq));
}

void PushWaiters::Check() {
  for (size_t i = 0; i < waiters_.size();) {
    uint64_t seq = waiters_[i]->seq;
    if (!complete_(seq, waiters_[i]->only_pid)) {
      ++i;
      continue;
    }
    std::unique_ptr<Waiter> owned = std::move(waiters_[i]);
    waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
    owned->done(outcome_of_(seq));
  }
}

}  // namespace hawk::reconcile

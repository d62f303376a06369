#pragma once

// PushWaiters: the calls waiting for a push to be applied — a PUT or PATCH answered with every
// target worker's outcome (Reconciler::WaitForPush), a reload's pre-sync waiting for the current
// worker (Reconciler::WaitForWorker).
//
// Ownership and threading: owns each waiter and its two timers (its deadline, and a first check on
// the next loop turn, so that `done` never runs inside the call that added it); loop thread only.
// The reconciler owns it, calls Check() whenever a worker finished a reconcile or the worker set
// changed, and answers the two questions it asks: is a wait over, and what is a push's outcome.
// Destroying it drops the waiters without calling them.

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "agent/reconcile/push_outcome.h"

namespace hawk::reconcile {

class PushWaiters {
 public:
  // Whether every target worker (only worker `only_pid`, when it is not 0) has finished a
  // reconcile of push `seq` or of a later one.
  using Complete = std::function<bool(uint64_t seq, int only_pid)>;
  // The per-worker outcome of push `seq`, as of now.
  using OutcomeOf = std::function<PushOutcome(uint64_t seq)>;
  using Done = std::function<void(PushOutcome)>;

  PushWaiters(uv_loop_t* loop, Complete complete, OutcomeOf outcome_of);
  ~PushWaiters();
  PushWaiters(const PushWaiters&) = delete;
  PushWaiters& operator=(const PushWaiters&) = delete;

  // Calls `done` with the outcome of push `seq` once the wait is complete, or when `timeout`
  // passes first. Never from inside this call.
  void Add(uint64_t seq, int only_pid, absl::Duration timeout, Done done);

  // Answers, in the order they were added, every waiter whose wait is complete. A `done` may add
  // waiters.
  void Check();

  size_t size() const { return waiters_.size(); }

 private:
  struct Waiter;

  void OnDeadline(Waiter* waiter);

  uv_loop_t* loop_;
  Complete complete_;
  OutcomeOf outcome_of_;
  std::vector<std::unique_ptr<Waiter>> waiters_;
};

}  // namespace hawk::reconcile

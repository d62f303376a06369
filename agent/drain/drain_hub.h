#pragma once

// GET /v1/drain?quietMs=2000&boundMs=30000: holds the request until no worker (current or
// leaving) has accepted a connection for quietMs, or until boundMs, then answers
// `{"reason":"quiet"|"bound","waitedMs":…,"workers":[{"pid":…,"role":…,"connections":…}]}`
// (connections: sessions open on its frontends at the last look). With the master CLI
// unreachable the answer is 503, reason "unavailable", at once: nothing can be told. Meant for
// a pod's preStop hook (README, "Stopping a pod"): load balancers keep sending new connections
// for a while after the pod leaves their endpoints.
//
// While any caller waits, every worker the master may be sent commands for (the registry's
// relay windows) is asked `show stat -1 1 -1` every poll interval (a quarter of the shortest
// quietMs, within 50..250 ms), and once more the moment a waiter's quiet period would end; the
// hub stops polling when the last caller has its answer or
// has gone. All callers share the samples; a caller that disconnects is dropped at the next tick.
//
// Ownership and threading: owns the callers' Responders and the poll timer; uses (does not
// own) the registry and the master client, which outlive it; loop thread only.

#include <uv.h>

#include <functional>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "agent/base/lifetime.h"
#include "agent/cli/client.h"
#include "agent/drain/drain_rules.h"
#include "agent/http/request.h"
#include "agent/http/server.h"
#include "agent/registry/registry.h"
#include "agent/uv/timer.h"

namespace hawk::drain {

class DrainHub {
 public:
  DrainHub(uv_loop_t* loop, cli::MasterClient* client, const registry::WorkerRegistry* registry,
           std::function<absl::Time()> clock);
  ~DrainHub();
  DrainHub(const DrainHub&) = delete;
  DrainHub& operator=(const DrainHub&) = delete;

  void Handle(const http::Request& request, http::Responder responder);
  size_t waiting() const { return waiters_.size(); }
  uint64_t polls() const { return polls_; }

 private:
  struct Waiter {
    http::Responder responder;
    DrainParams params;
    absl::Time started;
  };
  void Tick();
  void Poll();
  void OnSample(absl::Time asked, std::vector<int> pids, std::vector<cli::CommandResult> results);
  // Answers every waiter whose wait is over (all of them with `unavailable` set), drops those
  // gone, and stops polling when none is left.
  void Settle(bool unavailable, absl::string_view why = "");
  void Answer(Waiter* waiter, DrainReason reason, absl::string_view why);
  absl::Duration PollInterval() const;
  // Arms `soon_` for the earliest moment a waiter's quiet period or bound ends before the next
  // tick: a poll asked right then answers `quiet` within quietMs and one poll of the last new
  // connection, where the next regular tick would add up to another poll.
  void ArmSoon();

  cli::MasterClient* client_;
  const registry::WorkerRegistry* registry_;
  std::function<absl::Time()> clock_;
  std::vector<std::unique_ptr<Waiter>> waiters_;
  ActivityTracker activity_;
  absl::flat_hash_map<int, int64_t> open_;  // pid → sessions open on its frontends, last sample
  bool polling_ = false;                    // a sample is under way
  uint64_t polls_ = 0;
  uv::Timer tick_;
  uv::Timer soon_;
  // Guards the batches it submits, which may outlive it in the client's queue. Last.
  base::Lifetime lifetime_;
};

}  // namespace hawk::drain

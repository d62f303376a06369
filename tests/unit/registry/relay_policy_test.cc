#include "agent/registry/relay_policy.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace hawk::registry {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

parse::ProcessEntry Entry(int pid, int reloads, int64_t uptime, bool old) {
  parse::ProcessEntry entry;
  entry.pid = pid;
  entry.type = "worker";
  entry.reloads = reloads;
  entry.uptime_seconds = uptime;
  entry.listed_as_old = old;
  entry.version = "2.6.12-1+deb12u4";
  return entry;
}

// 2.6 after two reloads: the current worker (0 reloads, up 1 s), the one it replaced (1 reload),
// and the first one (2 reloads).
parse::ShowProc TwoReloads() {
  parse::ShowProc proc;
  proc.master = Entry(100, 2, 60, false);
  proc.master.type = "master";
  proc.workers = {Entry(300, 0, 1, false), Entry(200, 1, 30, true), Entry(150, 2, 59, true)};
  return proc;
}

TEST(RelayPolicyTest, MastersBefore30LeakASlotWhenRelayingToAnExitingWorker) {
  EXPECT_TRUE(RelayToExitingWorkerLeaksSlot("2.6.12-1+deb12u4"));
  EXPECT_TRUE(RelayToExitingWorkerLeaksSlot("2.8.5"));
  EXPECT_TRUE(RelayToExitingWorkerLeaksSlot(""));  // unknown: assume it does
  EXPECT_FALSE(RelayToExitingWorkerLeaksSlot("3.0.11-1"));
  EXPECT_FALSE(RelayToExitingWorkerLeaksSlot("3.4.7"));
}

TEST(RelayPolicyTest, TheCurrentWorkerHasNoLimit) {
  parse::ShowProc proc = TwoReloads();
  RelayWindow window =
      RelayWindowFor(proc, proc.workers[0], /*leaks=*/true, absl::Seconds(2), kNow, nullptr);
  EXPECT_EQ(window.until, absl::InfiniteFuture());
}

// The worker that replaced it has been up 1 s (so at most 2 s), the master signals the old one
// at most 250 ms before it forks the new one: a 30 s grace lasts at least until now + 27.75 s.
TEST(RelayPolicyTest, ALeavingWorkerOn26IsRelayedToOnlyWhileItsGraceSurelyLasts) {
  parse::ShowProc proc = TwoReloads();
  RelayWindow window =
      RelayWindowFor(proc, proc.workers[1], true, absl::Seconds(30), kNow, nullptr);
  EXPECT_EQ(window.until, kNow + absl::Milliseconds(27750));
  EXPECT_TRUE(absl::StrContains(window.why, "grace period (30s) may be over")) << window.why;
  // A grace of 2 s, the new worker up 1 s: it may be over already.
  window = RelayWindowFor(proc, proc.workers[1], true, absl::Seconds(2), kNow, nullptr);
  EXPECT_LT(window.until, kNow);
}

// hawk saw the reload that started the new worker refuse its connect 300 ms ago: the grace began
// after that (less 50 ms for hawk noticing late), a tighter bound than the whole-second uptime.
// A grace of 1 s then lasts until now + 650 ms.
TEST(RelayPolicyTest, WhatHawkSawOfTheReloadDatesTheGraceMoreClosely) {
  parse::ShowProc proc = TwoReloads();
  absl::flat_hash_map<int, absl::Time> signalled_after = {{300, kNow - absl::Milliseconds(300)}};
  RelayWindow window =
      RelayWindowFor(proc, proc.workers[1], true, absl::Seconds(1), kNow, nullptr, signalled_after);
  EXPECT_EQ(window.until, kNow + absl::Milliseconds(650));
  // Seen for another worker: no help.
  signalled_after = {{200, kNow}};
  window =
      RelayWindowFor(proc, proc.workers[1], true, absl::Seconds(1), kNow, nullptr, signalled_after);
  EXPECT_LT(window.until, kNow);
}

TEST(RelayPolicyTest, ALeavingWorkerOn26WhoseGraceIsUnknownOrOverGetsNothing) {
  struct Case {
    const char* name;
    absl::optional<absl::Duration> grace;
    bool drop_successor;  // the worker that replaced it exited
    const char* why;
  };
  for (const Case& c : std::vector<Case>{
           {"no --haproxy-config", absl::nullopt, false, "--haproxy-config"},
           {"no grace", absl::ZeroDuration(), false, "without a grace period"},
           {"successor gone", absl::Hours(1), true, "no longer listed"},
       }) {
    SCOPED_TRACE(c.name);
    parse::ShowProc proc = TwoReloads();
    // Without its successor (1 reload), the first worker (2 reloads) is workers[1].
    if (c.drop_successor) proc.workers.erase(proc.workers.begin() + 1);
    RelayWindow window = RelayWindowFor(proc, proc.workers[1], true, c.grace, kNow, nullptr);
    EXPECT_EQ(window.until, absl::InfinitePast());
    EXPECT_TRUE(absl::StrContains(window.why, c.why)) << window.why;
    EXPECT_TRUE(absl::StrContains(window.why, "before 3.0")) << window.why;
  }
  // Seen with its listeners closed: its grace is over, whatever the configuration says.
  model::WorkerReport grace_over;
  grace_over.stopping = true;
  grace_over.listeners = 1;
  parse::ShowProc proc = TwoReloads();
  RelayWindow window =
      RelayWindowFor(proc, proc.workers[1], true, absl::Hours(1), kNow, &grace_over);
  EXPECT_EQ(window.until, absl::InfinitePast());
  EXPECT_TRUE(absl::StrContains(window.why, "grace period over")) << window.why;
}

// 3.0+ answers a relay to an exiting worker with `Can't connect to the target CLI!` and frees the
// slot: leaving workers get commands until one says its exit has begun.
TEST(RelayPolicyTest, On30AndLaterOnlyAWorkerWhoseExitHasBegunGetsNothing) {
  parse::ShowProc proc = TwoReloads();
  model::WorkerReport leaving;
  leaving.stopping = true;
  leaving.listeners = 3;  // in its grace period
  leaving.connections = 0;
  EXPECT_EQ(RelayWindowFor(proc, proc.workers[1], false, absl::nullopt, kNow, &leaving).until,
            absl::InfiniteFuture());
  leaving.listeners = 1;  // grace over
  leaving.connections = 2;
  EXPECT_EQ(RelayWindowFor(proc, proc.workers[1], false, absl::nullopt, kNow, &leaving).until,
            absl::InfiniteFuture());
  leaving.connections = 0;  // and no connection left: exiting
  RelayWindow window = RelayWindowFor(proc, proc.workers[1], false, absl::nullopt, kNow, &leaving);
  EXPECT_EQ(window.until, absl::InfinitePast());
  EXPECT_TRUE(absl::StrContains(window.why, "exiting")) << window.why;
}

}  // namespace
}  // namespace hawk::registry

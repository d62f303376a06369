#pragma once

// Which workers the master may relay commands to now, pure: the workers the master's last
// `show proc` listed, whether the master closed a connection since that listing (a reload tells
// the old workers to stop: relays wait for the next listing), and each worker's relay window
// (commands must reach it before the window closes). The MasterClient asks before it writes a
// batch; time comes in as a parameter (the client's loop time), so this reads no clock.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/cli/command.h"

namespace hawk::cli {

// Whether `commands` has one the master relays to a worker (pid != 0).
bool HasRelays(const std::vector<Command>& commands);

class RelayGate {
 public:
  // A batch is allowed only if it reaches the worker at least `lead` before its window closes,
  // plus `lead_per_command` for each of its commands.
  RelayGate(absl::Duration lead, absl::Duration lead_per_command)
      : lead_(lead), lead_per_command_(lead_per_command) {}

  // The workers the master's last `show proc` lists; until the first call every pid goes.
  // Forgets the windows of pids no longer listed, and ends a stale period.
  void SetListed(absl::flat_hash_set<int> pids);
  bool has_listing() const { return have_listing_; }
  // The master closed a connection since the last listing: relays wait for the next one.
  // Nothing before the first listing.
  void MarkStale() { stale_ = have_listing_; }
  bool stale() const { return stale_; }

  // Commands for `pid` must reach it within `remaining` of `now` (InfiniteDuration: always;
  // zero or less: never). `why` says why, in the refusals.
  void SetWindow(int pid, absl::Duration remaining, std::string why, absl::Duration now);
  // Whether a batch of `commands` commands for `pid` may be written at `now`; `*why` says why not.
  bool Allowed(int pid, absl::Duration now, std::string* why = nullptr, size_t commands = 1) const;
  // OK when every command of the batch may be written at `now`; else, for the first that may
  // not, NotFound (its worker is not listed) or Unavailable (its window is closed), "not sent: …".
  absl::Status Check(const std::vector<Command>& commands, absl::Duration now) const;

 private:
  struct Window {
    absl::Duration until;  // commands must reach the worker before it
    std::string why;
  };

  absl::Duration lead_;
  absl::Duration lead_per_command_;
  bool have_listing_ = false;
  bool stale_ = false;
  absl::flat_hash_set<int> listed_;
  absl::flat_hash_map<int, Window> windows_;  // pids without one: no limit
};

}  // namespace hawk::cli

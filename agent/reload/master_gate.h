#pragma once

// Pure: may a reload go to the master CLI now, should it wait for the master, or can it not
// happen? Decided from what the MasterClient knows, with the time as a parameter.
//
// The master closes every CLI connection when it reloads and refuses new ones while it
// re-executes (up to 3.0 also while it parses the new configuration): that unreachability is
// brief, and a reload requested meanwhile waits for the master, within `grace`. A master that
// hawk never reached, and that refuses connections (no socket, nobody listening), will not
// answer the reload either: it fails at once, with the socket error, instead of waiting for the
// reload timeout while later reloads queue behind it.

#include <cstdint>

#include "absl/time/time.h"

namespace hawk::reload {

struct MasterView {
  bool reachable = false;     // a connection is established
  bool ever_reached = false;  // one was, since hawk started
  // Connects that failed since the master was last reachable (since hawk started, if never).
  uint64_t connect_failures = 0;
  // Since the master was last reachable (since hawk started, if never).
  absl::Duration unreachable_for = absl::ZeroDuration();
};

enum class MasterVerdict {
  kGo,    // reachable: send
  kWait,  // briefly unreachable (a reload under way, a first connect in progress): look again
  kFail,  // unreachable for good: answer Unavailable now
};

MasterVerdict JudgeMaster(const MasterView& master, absl::Duration grace);

}  // namespace hawk::reload

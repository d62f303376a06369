#pragma once

// Pure: until when hawk may send a worker commands that the master relays (`@!<pid> …`).
//
// A worker that exits first closes its end of the master's socketpair, then frees its
// configuration (hundreds of milliseconds with 10,000 servers), and only then is reaped and
// unlisted by the master. A command relayed to it in between cannot reach it. HAProxy 3.0+
// answers `Can't connect to the target CLI!`; HAProxy 2.6 answers a bare prompt, closes the
// client's side and keeps the session — and its slot of the 10 the master serves — until the
// master re-executes. So on a master before 3.0 hawk relays to a leaving worker only while it
// surely cannot exit: within its `grace` period, which it learns from the configuration. A
// leaving worker exits once its grace is over and its last connection is closed, at a moment
// hawk cannot see coming; hawk relays nothing to it after its grace may have ended. On 3.0+ hawk
// stops once a worker says its exit has begun (soft-stopped, listeners closed, no connection
// left).
//
// When the grace began (the worker got SIGUSR1): during the reload that started the worker that
// replaced it. Every reload adds one to the reload count of each listed worker (failed reloads
// too) and a new worker starts at 0, so that is the worker with one reload fewer. 2.6's master
// signals the old workers just before it forks the new one, so the grace began at most
// kSoftStopLead before the new worker's start, which its uptime (whole seconds) dates to within
// a second. Closer: the reload re-executes the master, which closes every master connection,
// refuses connections until the new master has parsed its configuration and bound its socket,
// and only then signals the old workers (measured on 2.6.12: the last refused connect 0.5-7.5 ms
// before the old worker's SIGUSR1, 100 and 10,000 servers). So the grace began after the close
// hawk saw and after the last connect refused, which the registry passes per new worker
// (`signalled_after`) when one reload alone lies between its listings.

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/model/workers.h"
#include "agent/parse/show_proc.h"

namespace hawk::registry {

// How long before the new worker's start the master may have signalled the old ones.
inline constexpr absl::Duration kSoftStopLead = absl::Milliseconds(250);
// How late hawk may notice the master closing its connection or refusing one.
inline constexpr absl::Duration kSeenLate = absl::Milliseconds(50);

// Whether a master of this version keeps a CLI slot for good when it relays a command to a
// worker that is exiting: HAProxy before 3.0 (seen on 2.6.12; 3.0.11, 3.2.26 and 3.4.7 answer
// `Can't connect to the target CLI!` and free it). An unknown version counts as one that does.
bool RelayToExitingWorkerLeaksSlot(absl::string_view master_version);

struct RelayWindow {
  // Commands that reach the worker before this are safe (the client writes them early enough:
  // MasterClientOptions::relay_lead); InfiniteFuture: no limit.
  absl::Time until = absl::InfiniteFuture();
  std::string why;  // why relays stop at `until` (empty for no limit)
};

// The relay window of `worker`, one of `proc`'s workers, read at `observed_at`.
//   leaks:  RelayToExitingWorkerLeaksSlot(the master's version)
//   grace:  the `grace` of the configuration `worker` started from (nullopt: unknown)
//   last:   what the last report said of it (nullptr: nothing yet)
//   signalled_after:  pid → when hawk saw the reload that started that worker close its
//                     connection or refuse one: before that reload signalled the workers
//                     before it (see the file comment); a pid without one: not seen
RelayWindow RelayWindowFor(const parse::ShowProc& proc, const parse::ProcessEntry& worker,
                           bool leaks, absl::optional<absl::Duration> grace, absl::Time observed_at,
                           const model::WorkerReport* last,
                           const absl::flat_hash_map<int, absl::Time>& signalled_after = {});

}  // namespace hawk::registry

#pragma once

// Looking at a worker: the commands that observe what it holds in full (or list its tables, for a
// seed with written files) and what their replies say. Pure: no I/O, no clock.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "agent/cli/command.h"
#include "agent/model/desired.h"
#include "agent/plan/observed.h"
#include "agent/reconcile/command_result.h"

namespace hawk::reconcile {

// The replies to the observation of `desired` (ObservationCommands) as an ObservedWorker. A map
// or ACL is present only when the worker's listing names it, whatever its own reply says (an
// empty reply reads as an empty table). An error when a reply says nothing about its object (the
// worker is gone, the connection closed) or a listing does not parse.
absl::StatusOr<plan::ObservedWorker> ObservedFromReplies(const model::DesiredState& desired,
                                                         const std::vector<CommandResult>& results);

// The commands that observe `desired` on worker `pid` in full: `show servers state <be>` per
// backend; with maps, the listing `show map` then `show map <m>` per map; with ACLs, `show acl`
// then `show acl <a>` per ACL; each kind in sorted order (the order ObservedFromReplies reads
// them in). Names are escaped (cli::EscapeWord).
std::vector<cli::Command> ObservationCommands(const model::DesiredState& desired, int pid);

// A seed with written tables first lists the worker's maps and ACLs: `show map`, `show acl`.
std::vector<cli::Command> TableListingCommands(int pid);

// The tables of `written` (file name → entries written) that a worker read from their files: those
// its listing (the reply to `show map`, or to `show acl` when `acl`) names with the number of
// entries written. Anything else — a reply that failed, a file the configuration does not load, a
// count that differs because someone else rewrote the file — is not.
absl::flat_hash_set<std::string> TablesReadFromFiles(
    const CommandResult& listing, bool acl,
    const absl::flat_hash_map<std::string, int64_t>& written);

}  // namespace hawk::reconcile

#pragma once

// Test oracles over the desired-state model: the naive whole-state difference that hawk's
// streaming readers (a whole-state PUT read as a delta, model/state_lists_json) must equal, and
// the states a delta creates. Production code never builds a second whole state to diff it, so
// these live with the tests (and the benchmarks that compare against them).

#include "agent/model/delta.h"
#include "agent/model/desired.h"

namespace hawk::model {

// The delta that turns `from` into `to` (the whole-state PUT): backends, maps and ACLs listed in
// `to` but not in `from` are created, those only in `from` dropped; a server or entry that
// differs is set, one that is gone is removed (a server no longer listed leaves management; a
// map entry or ACL pattern no longer listed is deleted). O(size of both), no copies of what is
// equal. `to` is consumed: tables and specs that differ move into the delta.
Delta DiffStates(const DesiredState& from, DesiredState to);

// The state `delta` would create from nothing.
DesiredState StateFromDelta(const Delta& delta);
// The delta that creates `state` from nothing.
Delta DeltaFromState(const DesiredState& state);

// Same objects and values, whatever the version label and generation.
bool SameContent(const DesiredState& a, const DesiredState& b);

}  // namespace hawk::model

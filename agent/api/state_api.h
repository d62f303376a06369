#pragma once

// PUT /v1/state, PATCH /v1/state and GET /v1/state: each parses the request, pushes to (or reads
// from) state::StateService, which has the semantics, and encodes the answer.
//
// PUT and PATCH are validated in full before anything happens: an invalid document gets 400
// naming the field, an out-of-order generation 409 carrying `currentGeneration` (the one hawk
// holds), a change too large for the journal 413 (its record, or the snapshot of the state it
// would make, over the limit; the message names the size and the limit), and nothing is
// persisted or applied. An accepted change is durable before it is answered (a full or read-only
// state directory: 507 / 503, nothing applied); the answer waits until each target worker has
// finished or `?timeoutMs=` (default 2000) passes, and carries the per-worker outcome.

#include "agent/api/router.h"
#include "agent/reconcile/push_outcome.h"
#include "agent/state/state_service.h"

namespace hawk::api {

inline constexpr int64_t kDefaultPushTimeoutMs = 2000;
inline constexpr int64_t kMaxPushTimeoutMs = 60000;

void RegisterStateRoutes(Router* router, state::StateService* service);

// The PUT/PATCH answer, hawk.v1.PushResponse in the proto3 JSON mapping. Always 200: the state is
// durable and each worker gets it as hawk reaches it. `delivery` says how far it got by the
// answer: ALL_WORKERS (every target worker finished applying it, APPLIED or PARTIAL),
// SOME_WORKERS (others still PENDING) or NO_WORKER (none finished, or none is reachable:
// `workers` is empty); a `warning` in words comes with the last two.
std::string PushOutcomeToJson(const reconcile::PushOutcome& outcome);

}  // namespace hawk::api

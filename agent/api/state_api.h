#pragma once

// PUT /v1/state and GET /v1/state.
//
// PUT: the body is validated in full (agent/model/desired_json) before anything happens; an
// invalid document gets 400 naming the field, and nothing is persisted or applied. `generation`
// orders pushes: lower than the current one → 409 ABORTED; the same generation with the same
// content → 200 (idempotent); the same generation with other content → 409. An accepted state is
// persisted (when --state-dir is set) before it is acknowledged, then applied to every target
// worker; the answer waits until each has finished or `?timeoutMs=` (default 2000) passes, and
// carries the per-worker outcome.

#include "agent/api/router.h"
#include "agent/reconcile/reconciler.h"
#include "agent/store/state_store.h"

namespace hawk::api {

inline constexpr int64_t kDefaultPushTimeoutMs = 2000;
inline constexpr int64_t kMaxPushTimeoutMs = 60000;

// `store` may be null (no --state-dir: the state lives in memory only).
void RegisterStateRoutes(Router* router, reconcile::Reconciler* reconciler,
                         store::StateStore* store);

// The PUT answer, hawk.v1.PushResponse in the proto3 JSON mapping.
std::string PushOutcomeToJson(const reconcile::PushOutcome& outcome);

}  // namespace hawk::api

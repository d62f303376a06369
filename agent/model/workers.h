#pragma once

// The per-worker report: what hawk knows about the master and every worker process.
// Plain data; the JSON form follows the proto3 JSON mapping of hawk.v1.WorkersReport
// (proto/hawk/v1/hawk.proto).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"

namespace hawk::model {

enum class WorkerRole {
  kCurrent,   // serving new connections: `show info` says Stopping: 0
  kLeaving,   // soft-stopping after a reload (Stopping: 1), still holding connections
  kStarting,  // listed by `show proc` but not answering yet (3.1+ while it parses its config)
  kUnknown,   // listed, but `show info` failed for another reason (see WorkerReport::error)
};

// "CURRENT", "LEAVING", "STARTING", "UNKNOWN": the proto enum value names.
absl::string_view WorkerRoleName(WorkerRole role);

// Something a worker does not hold as desired, and why (frozen leaving worker, missing backend,
// refused command, inherited maintenance…).
struct StaleObject {
  std::string object;  // "backend/be_app/server/SRV_1", "map//etc/haproxy/hosts.map"
  std::string field;   // "address", "weight", "state", "entries", …
  std::string desired;
  std::string actual;
  std::string reason;
  friend bool operator==(const StaleObject&, const StaleObject&) = default;
};

// A command a worker refused, with its reply verbatim.
struct Refusal {
  std::string object;
  std::string command;  // without the @!<pid> prefix
  std::string reply;
  friend bool operator==(const Refusal&, const Refusal&) = default;
};

// What the reconciler knows about one worker's runtime state versus the desired state.
struct WorkerSync {
  bool managed = false;         // hawk has a desired state and this worker is one of its targets
  std::string applied_version;  // the desired version this worker last reached in full
  absl::optional<int64_t> applied_generation;  // that state's generation, when it had one
  bool in_sync = false;
  // A leaving worker that answered `Proxy is disabled.`: its servers can no longer change.
  bool frozen = false;
  absl::Time frozen_since = absl::InfinitePast();
  std::vector<StaleObject> stale;
  std::vector<Refusal> refused;  // from the last apply
  // Live streams on this worker whose server is stale here (from `show sess`).
  int64_t sessions_on_stale_servers = 0;
  std::string error;  // the last reconcile's failure (unreachable, timed out), if any
  // Servers hawk created here with `add server`, and those of them that left the desired state
  // and wait for their connections to end before `del server` can remove them:
  // "<backend>/<server>", sorted.
  std::vector<std::string> created_servers;
  std::vector<std::string> draining_servers;
  friend bool operator==(const WorkerSync&, const WorkerSync&) = default;
};

struct WorkerReport {
  int pid = 0;
  WorkerRole role = WorkerRole::kUnknown;
  bool stopping = false;
  int reloads = 0;  // reloads this worker has lived through (failed ones included)
  int64_t uptime_seconds = 0;
  std::string version;
  int64_t connections = 0;  // CurrConns: live client connections
  // `Listeners` from `show info` (-1: unknown): 1 on a soft-stopped worker whose grace is over
  // (only the master's socketpair is left). Not in the API.
  int64_t listeners = -1;
  // Which `show proc` section listed it; informative only (3.4 lists the serving worker under
  // "old workers" after a failed reload).
  bool listed_as_old = false;
  std::string error;  // why `show info` failed, when role is kUnknown
  // Why hawk sends this worker nothing more through the master (registry/relay_policy.h: its
  // exit may be near, and HAProxy before 3.0 keeps a CLI slot for good when it relays a command
  // to a worker that is exiting). Empty while hawk does. It is then no target of pushes, and
  // what else the report says of it is as last seen.
  std::string not_relayed;
  WorkerSync sync;  // filled in by the reconciler
};

struct MasterReport {
  int pid = 0;
  int reloads = 0;         // every reload attempt, failed ones included
  int failed_reloads = 0;  // failures since the last successful reload
  std::string version;
  int64_t uptime_seconds = 0;
};

// A master CLI connection hawk keeps because a command the master relayed on it has not been
// answered past its batch's deadline (closing it would not give the master's slot back).
struct HeldConnectionReport {
  int pid = 0;          // the worker the unanswered command went to (0: the master)
  std::string command;  // its line as sent (a payload, if any, is not shown)
  absl::Time since = absl::InfinitePast();
};

// hawk's use of the master CLI's slots: the master serves 10 connections in all.
struct MasterCliReport {
  int connections = 0;      // open now
  int max_connections = 0;  // the most hawk opens (--max-master-connections)
  // Slots the master keeps for sessions it closed on hawk and gives back only when it
  // re-executes (a reload): HAProxy 2.6 does that when it relays a command to a worker that is
  // exiting. Each one is a connection less for hawk (never fewer than one).
  int slots_lost = 0;
  std::vector<HeldConnectionReport> held;
};

struct WorkersReport {
  bool master_reachable = false;
  std::string master_error;  // why the master CLI is unreachable, or the last poll failed
  MasterReport master;
  std::vector<WorkerReport> workers;              // sorted: CURRENT first, then by pid descending
  absl::Time observed_at = absl::InfinitePast();  // when the last successful poll finished
  std::vector<std::string> warnings;  // configuration advice (see the README's recommended config)
  MasterCliReport master_cli;

  const WorkerReport* Find(int pid) const;
  const WorkerReport* Current() const;  // the newest CURRENT worker, or null
};

// Orders workers for display and for deterministic JSON: CURRENT, STARTING, LEAVING, UNKNOWN;
// newer (higher pid is not reliable, so fewer reloads) first.
void SortWorkers(std::vector<WorkerReport>* workers);

}  // namespace hawk::model

#pragma once

// Reloader: the sequence of a reload round and its verdict. hawk owns HAProxy's reloads, one at a
// time, so that no update is lost in the reload window and every reload's outcome is known.
//
// Ownership and threading: owns its timers, the round in progress, the stages that write files
// before the reload (config_stage.h, worker_files.h) and the reload history (history.h); uses
// (does not own) the MasterClient, the WorkerRegistry and the Reconciler; loop thread only.
//
// A reload round, for every request queued since the last round (coalesced: the latest
// configuration given wins, and every request is answered with this round's outcome):
//   0. master  the master CLI must be reachable: while it is briefly not (it re-executes during a
//              reload) the round waits for it, within unreachable_grace; a master never reached
//              that refuses connections, or one away for longer, ends the round at once with
//              Unavailable and the socket error (master_gate.h). Checked again before step 6.
//   1. servers with --write-servers: the desired servers are written into the configuration
//              (the one given, else the file's), so the new worker is born holding them
//              (plan/server_lines.h); when only that changed the file, a configuration
//              `haproxy -c` rejects or a file hawk cannot replace is noted and the file is
//              reloaded as it is.
//      check   with --haproxy-binary: `haproxy -c -f` on the new configuration (or the current
//              file when none was given); a rejected configuration ends the round, nothing
//              written, HAProxy untouched.
//   2. write   the new configuration atomically to --haproxy-config, the previous one kept in
//              `<path>.previous` (and in memory, to restore it): config_file.h. Steps 1 and 2
//              are config_stage.h's.
//   3. presync the current worker finishes reconciling the latest desired state, so the worker
//              about to leave holds it (bounded wait).
//   4. state   with --server-state-file: the current worker's `show servers state` with the
//              desired fields written in (plan/server_state_file.h), atomically.
//   5. tables  with --write-map-files: the current worker's `show map` / `show acl` list the files
//              it loaded; every managed map and ACL whose name is such a file (listed so, as a
//              map or as an ACL), inside --table-files-dir and outside --state-dir
//              (store/confined_dir.h: no `..`, no symlink on the way, never a symlink replaced),
//              gets the desired content, atomically, mode, owner and group kept; the log names
//              every other one and why. The reconciler then seeds the new worker's copies with
//              only the changes since. Steps 4 and 5 are worker_files.h's.
//   6. reload  `show proc` (the baseline) and `reload` in one batch on one connection.
//   7. verdict from the reply (2.7+: Success=0|1) and the worker reports that follow
//              (reload/judge.h; 2.6 answers nothing). On failure the previous configuration
//              file is restored. The new worker is seeded by the reconciler as soon as the
//              registry lists it, whoever triggered the reload.
// Reloads hawk did not start (SIGUSR2, another tool) are noticed from the master's reload
// counter and recorded too (external_reload.h); the records: history.h.
//
// Every timestamp and duration (the records, min_interval, the pre-sync budget, how long the
// master has been unreachable) is read from the clock the reloader is given; the timers only
// schedule.

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/base/callback_list.h"
#include "agent/base/lifetime.h"
#include "agent/cli/client.h"
#include "agent/parse/reload.h"
#include "agent/reconcile/reconciler.h"
#include "agent/registry/registry.h"
#include "agent/reload/config_stage.h"
#include "agent/reload/external_reload.h"
#include "agent/reload/history.h"
#include "agent/reload/judge.h"
#include "agent/reload/master_gate.h"
#include "agent/reload/worker_files.h"
#include "agent/uv/timer.h"

namespace hawk::reload {

struct ReloaderOptions {
  std::string config_path;        // --haproxy-config; empty: requests cannot carry a config
  std::string haproxy_binary;     // --haproxy-binary; empty: no `haproxy -c` check
  std::string server_state_file;  // --server-state-file; empty: not written
  // --write-map-files: before each reload, the desired content of every managed map and ACL that
  // HAProxy loaded from a file inside --table-files-dir is written to it (birth/table_files.h), so
  // that the new worker is born holding it. Null: no table file is written.
  birth::TableFiles* table_files = nullptr;
  // Told which servers the configuration file holds in hawk's blocks (config_stage.h).
  birth::ServersInConfig* servers_in_config = nullptr;
  // --write-servers: each round writes the desired servers into the configuration it reloads
  // (plan/server_lines.h), so that the new worker is born holding them.
  bool write_servers = true;
  absl::Duration min_interval = absl::ZeroDuration();  // between the starts of two reloads
  // From `reload` sent to a verdict. Generous: a large configuration takes seconds to parse.
  absl::Duration reload_timeout = absl::Seconds(60);
  absl::Duration presync_timeout = absl::Seconds(2);
  absl::Duration check_timeout = absl::Seconds(60);
  // How long a reload waits for a master that is briefly unreachable (master_gate.h).
  absl::Duration unreachable_grace = absl::Seconds(5);
  size_t history_size = 50;
};

struct ReloadOutcome {
  // OK; FailedPrecondition: the configuration was rejected (HTTP 422); Unavailable: the master
  // CLI is unreachable; DeadlineExceeded: no verdict in time; Internal: a file could not be
  // written.
  absl::Status status;
  ReloadRecord record;
};

class Reloader {
 public:
  using Done = std::function<void(const ReloadOutcome&)>;

  // `clock`: the time (absl::Now in production).
  Reloader(uv_loop_t* loop, cli::MasterClient* client, registry::WorkerRegistry* registry,
           reconcile::Reconciler* reconciler, ReloaderOptions options,
           std::function<absl::Time()> clock);
  ~Reloader();
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;

  // Subscribes to worker reports (verdicts, external reloads).
  void Start();

  // Queues a reload, with a new configuration or of the current file. `done` runs once, never
  // from inside this call, with the outcome of the reload that covered the request.
  // InvalidArgument at once (through `done`) for a configuration without --haproxy-config.
  void Request(absl::optional<std::string> config, Done done);

  // Whether requests may carry a configuration (--haproxy-config is set).
  bool manages_config() const { return !options_.config_path.empty(); }

  // The recent reloads, newest first.
  std::vector<ReloadRecord> History() const { return history_.Recent(); }
  // Every reload since hawk started.
  const ReloadCounters& counters() const { return history_.counters(); }

  // Advice on the configuration file (parse/haproxy_config.h), refreshed at start and after
  // every configuration hawk writes. Empty without --haproxy-config.
  const std::vector<std::string>& config_warnings() const { return config_.config_warnings(); }
  // config_warnings(), and what the configuration lacks for a worker to be born holding the
  // desired servers: --write-servers off, the last write that failed, or servers changed since
  // the last reload through hawk wrote them (a reload made elsewhere starts from the file).
  std::vector<std::string> Warnings() const;

 private:
  struct Pending {
    absl::optional<std::string> config;
    Done done;
  };
  struct Round;

  void MaybeStartRound();
  void StartRound();
  // Runs `then` once the master CLI is reachable; ends the round with Unavailable when it cannot
  // be (master_gate.h).
  void AwaitMaster(std::function<void()> then);
  MasterView ViewOfMaster();
  // The configuration (config_stage.h), then Presync.
  void PrepareConfig();
  void Presync();
  // The server-state and table files (worker_files.h), then SendReload.
  void WriteWorkerFiles();
  // Waits (within the pre-sync budget) for the current worker to hold the latest desired state,
  // then SendReloadNow().
  void SendReload();
  void SendReloadNow();  // once the master is reachable (AwaitMaster): SendReloadBatch
  void SendReloadBatch();
  void OnReloadReply(std::vector<cli::CommandResult> results);
  void Judge(const model::WorkersReport& report);
  void Finish(ReloadResult result, absl::Status status, int new_worker_pid = 0);
  void OnWorkers(const model::WorkersReport& report);
  void Note(absl::string_view text);  // appends one line to the round's log
  // A callback for the stages: Note, while round `id` is the one in progress.
  std::function<void(absl::string_view)> NoteFor(uint64_t id);

  cli::MasterClient* client_;
  registry::WorkerRegistry* registry_;
  reconcile::Reconciler* reconciler_;
  ReloaderOptions options_;
  std::function<absl::Time()> clock_;
  ConfigStage config_;        // steps 1 and 2
  WorkerFiles worker_files_;  // steps 4 and 5
  std::vector<Pending> pending_;
  std::unique_ptr<Round> round_;
  uv::Timer start_timer_;  // the next round, after min_interval
  uv::Timer step_timer_;   // retries and polls within a round
  uv::Timer deadline_;     // reload_timeout of the round in progress
  absl::Time last_round_start_ = absl::InfinitePast();
  uint64_t next_id_ = 1;
  ReloadHistory history_;
  ExternalReloads external_;                 // reloads hawk did not start, from the worker reports
  base::Subscription workers_subscription_;  // to the registry's reports (Start)
  // What the gate knows of the master (ViewOfMaster), from the client's events (Start).
  base::Subscription reachable_subscription_;
  base::Subscription lost_subscription_;
  bool master_ever_reached_ = false;
  absl::optional<absl::Time> master_unreachable_since_;  // nullopt while reachable
  uint64_t master_failures_base_ = 0;  // the client's connect failures at that moment
  // Guards callbacks that may outlive the reloader: batches in the client's queue, reconciler
  // waiters. Last: disarmed before any other member goes.
  base::Lifetime lifetime_;
};

}  // namespace hawk::reload

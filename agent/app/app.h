#pragma once

// The composition root: owns the master-CLI client, the worker registry and the HTTP servers,
// and wires them together. Everything runs on the one loop the caller owns.

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/api/router.h"
#include "agent/api/watch.h"
#include "agent/app/memory_trimmer.h"
#include "agent/auth/bearer_token.h"
#include "agent/base/address.h"
#include "agent/base/callback_list.h"
#include "agent/birth/servers_in_config.h"
#include "agent/birth/table_files.h"
#include "agent/cli/client.h"
#include "agent/drain/drain_hub.h"
#include "agent/http/server.h"
#include "agent/reconcile/push_latency.h"
#include "agent/reconcile/reconciler.h"
#include "agent/reconcile/stale_sessions.h"
#include "agent/registry/registry.h"
#include "agent/reload/reloader.h"
#include "agent/state/state_service.h"
#include "agent/store/journal.h"
#include "agent/tls/server_context.h"
#include "agent/uv/loop.h"

namespace hawk::app {

struct Config {
  base::Address master_socket;
  std::vector<base::Address> listen;        // the full API
  std::vector<base::Address> probe_listen;  // /healthz and /readyz only
  absl::Duration poll_interval = absl::Seconds(1);
  int max_master_connections = 2;
  std::string state_dir;  // empty: the desired state lives in memory only
  // --state-max-record-bytes: a push whose change needs a larger journal record is refused (413).
  // 0: the journal's limit (64 MiB), which it may only lower.
  size_t state_max_record_bytes = 0;
  absl::Duration resync_interval = absl::Seconds(10);
  bool leaving_workers = true;                  // --workers=all (default) or current
  std::string haproxy_config;                   // --haproxy-config
  std::string haproxy_binary;                   // --haproxy-binary
  std::string server_state_file;                // --server-state-file
  bool write_table_files = true;                // --write-map-files
  bool write_servers = true;                    // --write-servers
  std::string table_files_dir;                  // --table-files-dir; empty: haproxy_config's
  absl::optional<base::Address> worker_socket;  // --worker-socket
  absl::Duration min_reload_interval = absl::ZeroDuration();
  absl::Duration reload_timeout = absl::Seconds(60);
  // --token-file: TCP API listeners then require `Authorization: Bearer <token>`. The unix
  // socket is guarded by its mode (0600) and the probes serve only health and metrics.
  std::string token_file;
  // --tls-cert/--tls-key/--tls-client-ca: TCP API listeners speak TLS 1.3 (with client
  // certificates when client_ca is set). Empty cert: plain TCP.
  tls::ServerFiles tls;
  // --tls-client-allow (tls::ParseClientAllow): the client identities mTLS lets in.
  std::vector<std::string> tls_client_allow;
  // --allowed-origin, --allowed-host (api::ParseAllowedOrigin, api::ParseAllowedHost).
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;
};

class App {
 public:
  static absl::StatusOr<std::unique_ptr<App>> Create(uv::Loop* loop, Config config);
  ~App();

  // Closes every listener and connection; the loop then runs dry. Idempotent.
  void Stop();

 private:
  App(uv::Loop* loop, Config config);
  absl::Status Init();
  model::WorkersReport Snapshot() const;
  // The table files in --table-files-dir (or its default), or without a directory and why.
  absl::StatusOr<std::unique_ptr<birth::TableFiles>> OpenTableFiles(size_t max_changes_since) const;
  // --worker-socket: keeps its connection on the current worker.
  void FollowCurrentWorker(const model::WorkersReport& report);

  uv::Loop* loop_;
  Config config_;
  std::unique_ptr<cli::MasterClient> client_;
  std::unique_ptr<cli::MasterClient> worker_client_;  // --worker-socket
  bool warned_worker_socket_ = false;
  std::unique_ptr<registry::WorkerRegistry> registry_;
  std::unique_ptr<store::Journal> journal_;
  // The desired state's owner: the reconciler reads it (state_->desired()), state_ publishes to
  // the reconciler.
  std::unique_ptr<state::StateService> state_;
  // --write-map-files: written by the reloader, told of each change by state_, read by the
  // reconciler (what a new worker is born with). Outlives both.
  std::unique_ptr<birth::TableFiles> table_files_;
  // The servers hawk wrote into --haproxy-config: told by the reloader, read by the reconciler.
  birth::ServersInConfig servers_in_config_;
  std::unique_ptr<reconcile::Reconciler> reconciler_;
  // The reconciler's subscribers: push and seed latency, sessions on stale servers, memory.
  std::unique_ptr<reconcile::PushLatency> push_latency_;
  std::unique_ptr<reconcile::StaleSessions> stale_sessions_;
  std::unique_ptr<MemoryTrimmer> trimmer_;
  std::unique_ptr<reload::Reloader> reloader_;
  std::unique_ptr<api::WatchHub> watch_;
  std::unique_ptr<drain::DrainHub> drain_;  // GET /v1/drain, on the API and probe listeners
  // The app's listeners on the registry (whole lines, --worker-socket, watch) and the reconciler.
  base::Subscription registry_subscription_;
  base::Subscription reconciler_subscription_;
  base::Subscription stale_sessions_subscription_;
  base::Subscription trim_subscription_;
  base::Subscription table_files_subscription_;  // to state_'s changes
  api::Router api_router_;
  api::Router probe_router_;
  std::unique_ptr<auth::TokenFile> token_;  // --token-file
  std::vector<std::unique_ptr<http::Server>> servers_;
};

}  // namespace hawk::app

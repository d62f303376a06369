#include "agent/app/app.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/api/authentication.h"
#include "agent/api/handlers.h"
#include "agent/api/metrics_api.h"
#include "agent/api/reload_api.h"
#include "agent/api/state_api.h"
#include "agent/base/log.h"
#include "agent/cli/wire.h"
#include "agent/parse/haproxy_config.h"

namespace hawk::app {
namespace {
constexpr size_t kMaxApiBodyBytes = 32 * 1024 * 1024;
// The probe listener serves GETs to kubelet and Prometheus, and anybody else who reaches it:
// few connections, short timeouts, small heads and no bodies, so that clients holding its
// connections cannot keep a probe out (http::ServerOptions, "Proven and unproven").
constexpr size_t kProbeConnections = 64;
constexpr absl::Duration kProbeHeaderTimeout = absl::Seconds(2);
constexpr absl::Duration kProbeIdleTimeout = absl::Seconds(5);
constexpr size_t kProbeMaxHeaderBytes = 8 * 1024;
}  // namespace

App::App(uv::Loop* loop, Config config) : loop_(loop), config_(std::move(config)) {}

App::~App() { Stop(); }

absl::StatusOr<std::unique_ptr<App>> App::Create(uv::Loop* loop, Config config) {
  std::unique_ptr<App> app(new App(loop, std::move(config)));
  absl::Status status = app->Init();
  if (!status.ok()) {
    app->Stop();
    return status;
  }
  return app;
}

absl::Status App::Init() {
  cli::MasterClientOptions client_options;
  client_options.address = config_.master_socket;
  client_options.max_connections = config_.max_master_connections;
  client_ = std::make_unique<cli::MasterClient>(loop_->get(), client_options);

  if (config_.worker_socket) {
    cli::MasterClientOptions worker_options;
    worker_options.address = *config_.worker_socket;
    worker_options.dialect = cli::Dialect::kWorkerSocket;
    worker_options.max_connections = 1;  // one worker, one connection: its pid is the client's
    worker_client_ = std::make_unique<cli::MasterClient>(loop_->get(), worker_options);
  }

  registry::RegistryOptions registry_options;
  registry_options.poll_interval = config_.poll_interval;
  registry_ = std::make_unique<registry::WorkerRegistry>(
      loop_->get(), client_.get(), registry_options, [] { return absl::Now(); });
  // The `grace` a new worker starts with, from the configuration file it starts from: on HAProxy
  // before 3.0 hawk relays to a leaving worker only while its grace surely lasts.
  if (!config_.haproxy_config.empty()) {
    registry_->SetGraceSource([path = config_.haproxy_config]() -> absl::optional<absl::Duration> {
      std::ifstream file(path);
      if (!file) {
        base::LogWarn("--haproxy-config ", path, ": cannot read it for `grace`");
        return absl::nullopt;
      }
      std::ostringstream text;
      text << file.rdbuf();
      return parse::GraceFromConfig(text.str());
    });
  }
  if (worker_client_) registry_->SetWorkerSocket(worker_client_.get());

  if (!config_.state_dir.empty()) {
    store::JournalOptions journal_options;
    journal_options.dir = config_.state_dir;
    absl::StatusOr<std::unique_ptr<store::Journal>> journal =
        store::Journal::Open(loop_->get(), journal_options);
    if (!journal.ok()) {
      return absl::Status(journal.status().code(),
                          absl::StrCat("--state-dir: ", journal.status().message()));
    }
    journal_ = *std::move(journal);
  } else {
    base::LogWarn(
        "no --state-dir: the desired state is kept in memory only and is lost when "
        "hawk restarts");
  }
  state::StateServiceOptions state_options;
  state_options.max_record_bytes = config_.state_max_record_bytes;
  trimmer_ = std::make_unique<MemoryTrimmer>(loop_->get());
  state_options.release_memory = [this] { trimmer_->AfterLargeWork(); };
  state_ = std::make_unique<state::StateService>(loop_->get(), journal_.get(), state_options);
  reconcile::ReconcilerOptions reconciler_options;
  reconciler_options.resync_interval = config_.resync_interval;
  reconciler_options.leaving_workers = config_.leaving_workers;
  reconciler_ = std::make_unique<reconcile::Reconciler>(
      loop_->get(), client_.get(), registry_.get(), &state_->desired(), reconciler_options,
      [] { return absl::Now(); });
  // After the journal: --state-dir exists, and is excluded by its inode too.
  if (config_.write_table_files) {
    absl::StatusOr<std::unique_ptr<birth::TableFiles>> table_files =
        OpenTableFiles(reconciler_options.max_pending_objects);
    if (!table_files.ok()) return table_files.status();
    table_files_ = *std::move(table_files);
    // Told of every change before the reconciler, which reads what a new worker is born with.
    table_files_subscription_ =
        state_->AddChangeListener([this](const model::ChangeSummary* summary) {
          if (summary == nullptr) {
            table_files_->ReplacedWhole();
          } else {
            table_files_->Changed(*summary, state_->desired());
          }
        });
    reconciler_->SetTableFiles(table_files_.get());
  }
  reconciler_->SetServersInConfig(&servers_in_config_);
  push_latency_ =
      std::make_unique<reconcile::PushLatency>(reconciler_.get(), [] { return absl::Now(); });
  stale_sessions_ = std::make_unique<reconcile::StaleSessions>(reconciler_.get(), registry_.get(),
                                                               reconcile::StaleSessionsOptions{},
                                                               [] { return absl::Now(); });
  trim_subscription_ =
      reconciler_->AddReconcileListener([this](const reconcile::ReconcileEnd& end) {
        if (end.full) trimmer_->AfterLargeWork();
      });
  reload::ReloaderOptions reloader_options;
  reloader_options.config_path = config_.haproxy_config;
  reloader_options.haproxy_binary = config_.haproxy_binary;
  reloader_options.server_state_file = config_.server_state_file;
  reloader_options.table_files = table_files_.get();
  reloader_options.servers_in_config = &servers_in_config_;
  reloader_options.write_servers = config_.write_servers;
  reloader_options.min_interval = config_.min_reload_interval;
  reloader_options.reload_timeout = config_.reload_timeout;
  reloader_ = std::make_unique<reload::Reloader>(loop_->get(), client_.get(), registry_.get(),
                                                 reconciler_.get(), reloader_options,
                                                 [] { return absl::Now(); });
  // Refuse to start rather than serve without the state a controller was promised is kept.
  if (absl::Status loaded = state_->Start(reconciler_.get()); !loaded.ok()) {
    return absl::Status(loaded.code(), absl::StrCat("--state-dir: ", loaded.message()));
  }

  watch_ = std::make_unique<api::WatchHub>(
      loop_->get(), [this] { return Snapshot(); }, [] { return absl::Now(); });
  registry_subscription_ = registry_->AddListener(
      [this](const model::WorkersReport& report, const registry::WorkerChanges&) {
        // The master's dialect follows its version (cli::MasterDialectFor: `@@!<pid>` whole lines
        // from 3.2 on).
        if (!report.master.version.empty()) {
          cli::Dialect dialect = cli::MasterDialectFor(report.master.version);
          if (dialect != client_->dialect()) {
            base::LogInfo("master CLI: HAProxy ", report.master.version,
                          dialect == cli::Dialect::kMasterWholeLines
                              ? ": batches go as whole lines (@@!<pid>)"
                              : ": batches go one command per line (@!<pid>)");
            client_->SetDialect(dialect);
          }
        }
        if (worker_client_) FollowCurrentWorker(report);
        watch_->OnChange();
      });
  reconciler_subscription_ = reconciler_->AddListener([this] { watch_->OnChange(); });
  stale_sessions_subscription_ = stale_sessions_->AddListener([this] { watch_->OnChange(); });

  api::RegisterHealthRoutes(&api_router_, registry_.get(), /*detail=*/true);
  api::RegisterWorkerRoutes(&api_router_, [this] { return Snapshot(); });
  api::RegisterStateRoutes(&api_router_, state_.get());
  api::RegisterReloadRoutes(&api_router_, reloader_.get());
  api_router_.Add("GET", "/v1/watch",
                  [this](const http::Request& request, http::Responder r) {
                    watch_->Handle(request, std::move(r));
                  },
                  {"heartbeatMs"});
  drain_ = std::make_unique<drain::DrainHub>(loop_->get(), client_.get(), registry_.get(),
                                             [] { return absl::Now(); });
  // On the probe listener too: a pod's preStop hook (httpGet) needs no binary in HAProxy's image.
  for (api::Router* router : {&api_router_, &probe_router_}) {
    router->Add("GET", "/v1/drain",
                [this](const http::Request& request, http::Responder r) {
                  drain_->Handle(request, std::move(r));
                },
                {"quietMs", "boundMs"});
  }
  api::RegisterHealthRoutes(&probe_router_, registry_.get(), /*detail=*/false);
  api::MetricsSources metrics{[this] { return Snapshot(); },
                              reconciler_.get(),
                              push_latency_.get(),
                              reloader_.get(),
                              client_.get(),
                              [this] {
                                std::vector<std::pair<std::string, size_t>> listeners;
                                for (const auto& server : servers_) {
                                  listeners.emplace_back(server->address().ToString(),
                                                         server->connection_count());
                                }
                                return listeners;
                              }};
  api::RegisterMetricsRoutes(&api_router_, metrics);
  api::RegisterMetricsRoutes(&probe_router_, metrics);

  if (!config_.token_file.empty()) {
    absl::StatusOr<std::unique_ptr<auth::TokenFile>> token =
        auth::TokenFile::Open(config_.token_file);
    if (!token.ok()) return token.status();
    token_ = *std::move(token);
  }
  std::shared_ptr<tls::ServerContext> tls;
  if (!config_.tls.cert.empty()) {
    absl::StatusOr<std::unique_ptr<tls::ServerContext>> context =
        tls::ServerContext::Create(config_.tls, absl::Seconds(1), config_.tls_client_allow);
    if (!context.ok()) return context.status();
    tls = *std::move(context);
  }
  auto listen = [this, &tls](const base::Address& address,
                             const api::Router* router) -> absl::Status {
    http::ServerOptions options;
    bool api = router == &api_router_;
    bool tcp = address.kind == base::Address::Kind::kTcp;
    // The unix socket is guarded by its mode (0600), the probes serve only health and metrics:
    // credentials are for TCP API listeners.
    bool tcp_api = api && tcp;
    bool needs_token = tcp_api && token_;
    if (tcp_api) options.tls = tls;
    bool mtls = options.tls != nullptr && !config_.tls.client_ca.empty();
    api::TokenCheck token_check;
    if (needs_token) {
      token_check = [token = token_.get()](absl::optional<absl::string_view> authorization) {
        return token->Allows(authorization);
      };
    }
    options.admit = api::MakeAdmissionCheck(
        api::AdmissionPolicy{config_.allowed_origins, config_.allowed_hosts, /*check_host=*/tcp},
        std::move(token_check));
    if (api) {
      options.parser.max_body_bytes = kMaxApiBodyBytes;  // a desired state with large maps
      // Where a client can prove itself (a token, a client certificate), those that have not
      // yet have a small budget of their own; elsewhere (the unix socket, a loopback listener
      // without credentials) every client is as good as any other.
      options.start_unproven = needs_token || mtls;
    } else {
      options.start_unproven = true;  // nobody is proven: the unproven budget is the budget
      options.max_unproven_connections = kProbeConnections;
      options.unproven_header_timeout = kProbeHeaderTimeout;
      options.unproven_idle_timeout = kProbeIdleTimeout;
      options.parser.max_header_bytes = kProbeMaxHeaderBytes;
      options.parser.max_body_bytes = 0;
    }
    http::Handler handler = [router](const http::Request& request, http::Responder responder) {
      router->Handle(request, std::move(responder));
    };
    absl::StatusOr<std::unique_ptr<http::Server>> server =
        http::Server::Create(loop_->get(), address, options, std::move(handler));
    if (!server.ok()) return server.status();
    base::LogInfo("listening on ", address.ToString(),
                  options.tls == nullptr ? ""
                  : mtls                 ? " (TLS 1.3, client certificates)"
                                         : " (TLS 1.3)",
                  needs_token ? " (bearer token)" : "");
    if (needs_token && options.tls == nullptr && !base::IsLoopback(address)) {
      base::LogWarn("listening on ", address.ToString(),
                    ": the bearer token crosses the network in cleartext "
                    "(--allow-plaintext-token)");
    }
    servers_.push_back(*std::move(server));
    return absl::OkStatus();
  };
  for (const base::Address& address : config_.listen) {
    if (absl::Status s = listen(address, &api_router_); !s.ok()) return s;
  }
  for (const base::Address& address : config_.probe_listen) {
    if (absl::Status s = listen(address, &probe_router_); !s.ok()) return s;
  }

  client_->Start();
  registry_->Start();
  if (worker_client_) {
    reconciler_->SetWorkerSocket(worker_client_.get());
    worker_client_->Start();
  }
  reconciler_->Start();
  reloader_->Start();
  base::LogInfo("watching HAProxy master CLI at ", config_.master_socket.ToString());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<birth::TableFiles>> App::OpenTableFiles(
    size_t max_changes_since) const {
  auto without_dir = [&](std::string why) {
    return std::make_unique<birth::TableFiles>(nullptr, std::move(why), max_changes_since);
  };
  bool given = !config_.table_files_dir.empty();
  std::string dir = config_.table_files_dir;
  if (!given && !config_.haproxy_config.empty()) {
    size_t slash = config_.haproxy_config.rfind('/');
    dir = slash == std::string::npos ? "."
          : slash == 0               ? "/"
                                     : config_.haproxy_config.substr(0, slash);
  }
  if (dir.empty()) {
    base::LogInfo(
        "no --table-files-dir (nor --haproxy-config to default it to): map and ACL files are "
        "not written before reloads; new workers get their tables over the CLI");
    return without_dir(
        "neither --table-files-dir nor --haproxy-config names a directory hawk may write it in");
  }
  store::ConfinedDirOptions confined;
  confined.name = "--table-files-dir";
  if (!config_.state_dir.empty()) confined.excluded.push_back({"--state-dir", config_.state_dir});
  absl::StatusOr<std::unique_ptr<store::ConfinedDir>> opened =
      store::ConfinedDir::Create(dir, confined);
  if (opened.ok()) {
    base::LogInfo("map and ACL files HAProxy loaded from inside ", (*opened)->path(),
                  " are written before each reload (--table-files-dir", given ? "" : " by default",
                  ")");
    return std::make_unique<birth::TableFiles>(*std::move(opened), "", max_changes_since);
  }
  // Given: refuse to start. Defaulted from --haproxy-config: run, writing no table file.
  if (given) return opened.status();
  std::string why =
      absl::StrCat("--table-files-dir (by default the directory of --haproxy-config): ",
                   opened.status().message());
  base::LogWarn(why);
  return without_dir(std::move(why));
}

void App::FollowCurrentWorker(const model::WorkersReport& report) {
  const model::WorkerReport* current = report.Current();
  int reached = worker_client_->worker_pid();
  if (current == nullptr || reached == 0 || reached == current->pid) return;
  // After a reload the socket belongs to the new worker (during `grace` the old one may still
  // accept on it too): connect again until it reaches the current one. Until then the master
  // serves. A socket that never reaches a listed worker is not this HAProxy's.
  if (report.Find(reached) == nullptr && !warned_worker_socket_) {
    base::LogWarn("--worker-socket ", config_.worker_socket->ToString(), " reaches pid ", reached,
                  ", which is none of the master's workers: the current worker is reached "
                  "through the master");
    warned_worker_socket_ = true;
  }
  worker_client_->Reconnect();
}

model::WorkersReport App::Snapshot() const {
  model::WorkersReport report = registry_->Snapshot();
  reconciler_->Annotate(&report);
  stale_sessions_->Annotate(&report);
  report.warnings = reloader_->Warnings();
  return report;
}

void App::Stop() {
  // Users before what they use: servers and the watch hub read the reconciler and the
  // registry, the reconciler uses the registry and the client, the registry uses the client.
  // The state service publishes to the reconciler, which reads its state: the service goes
  // first (its journal dones are disarmed with it), and the reconciler, which reads nothing
  // while it is destroyed, right after. The app's own subscriptions (into the watch hub and the
  // clients) go first.
  registry_subscription_.Reset();
  reconciler_subscription_.Reset();
  stale_sessions_subscription_.Reset();
  trim_subscription_.Reset();
  servers_.clear();
  watch_.reset();
  drain_.reset();
  reloader_.reset();
  state_.reset();
  stale_sessions_.reset();
  push_latency_.reset();
  reconciler_.reset();
  trimmer_.reset();
  registry_.reset();
  journal_.reset();
  worker_client_.reset();
  client_.reset();
}

}  // namespace hawk::app

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
#include "agent/parse/haproxy_config.h"
#include "agent/parse/show_version.h"

namespace hawk::app {
namespace {
constexpr size_t kMaxApiBodyBytes = 32 * 1024 * 1024;
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
    worker_options.worker_socket = true;
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

  reconcile::ReconcilerOptions reconciler_options;
  reconciler_options.resync_interval = config_.resync_interval;
  reconciler_options.leaving_workers = config_.leaving_workers;
  reconciler_ = std::make_unique<reconcile::Reconciler>(
      loop_->get(), client_.get(), registry_.get(), &desired_, reconciler_options,
      [] { return absl::Now(); });

  reload::ReloaderOptions reloader_options;
  reloader_options.config_path = config_.haproxy_config;
  reloader_options.haproxy_binary = config_.haproxy_binary;
  reloader_options.server_state_file = config_.server_state_file;
  reloader_options.write_table_files = config_.write_table_files;
  reloader_options.min_interval = config_.min_reload_interval;
  reloader_options.reload_timeout = config_.reload_timeout;
  reloader_ = std::make_unique<reload::Reloader>(loop_->get(), client_.get(), registry_.get(),
                                                 reconciler_.get(), reloader_options,
                                                 [] { return absl::Now(); });

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
  state_ = std::make_unique<api::StateService>(loop_->get(), journal_.get(), reconciler_.get(),
                                               &desired_);
  // Refuse to start rather than serve without the state a controller was promised is kept.
  if (absl::Status loaded = state_->Load(); !loaded.ok()) {
    return absl::Status(loaded.code(), absl::StrCat("--state-dir: ", loaded.message()));
  }

  watch_ = std::make_unique<api::WatchHub>(
      loop_->get(), [this] { return Snapshot(); }, [] { return absl::Now(); });
  registry_subscription_ = registry_->AddListener([this](const model::WorkersReport& report,
                                                         const registry::WorkerChanges&) {
    // `@@!<pid>` whole lines exist from 3.2 on: one worker CLI session per line instead of one
    // per command (MasterClientOptions::whole_lines).
    if (!report.master.version.empty()) {
      absl::StatusOr<parse::VersionNumbers> version =
          parse::ParseVersionNumbers(report.master.version);
      bool whole = version.ok() && !parse::VersionLess(*version, parse::VersionNumbers{3, 2, 0});
      if (whole != client_->whole_lines()) {
        base::LogInfo("master CLI: HAProxy ", report.master.version,
                      whole ? ": batches go as whole lines (@@!<pid>)"
                            : ": batches go one command per line (@!<pid>)");
        client_->SetWholeLines(whole);
      }
    }
    if (worker_client_) FollowCurrentWorker(report);
    watch_->OnChange();
  });
  reconciler_subscription_ = reconciler_->AddListener([this] { watch_->OnChange(); });

  api::RegisterHealthRoutes(&api_router_, registry_.get());
  api::RegisterWorkerRoutes(&api_router_, [this] { return Snapshot(); });
  api::RegisterStateRoutes(&api_router_, state_.get(), reconciler_.get());
  api::RegisterReloadRoutes(&api_router_, reloader_.get());
  api_router_.Add("GET", "/v1/watch", [this](const http::Request& request, http::Responder r) {
    watch_->Handle(request, std::move(r));
  });
  api::RegisterHealthRoutes(&probe_router_, registry_.get());
  api::MetricsSources metrics{[this] { return Snapshot(); },
                              reconciler_.get(),
                              reloader_.get(),
                              client_.get(),
                              HAWK_VERSION,
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
        tls::ServerContext::Create(config_.tls);
    if (!context.ok()) return context.status();
    tls = *std::move(context);
  }
  auto listen = [this, &tls](const base::Address& address,
                             const api::Router* router) -> absl::Status {
    http::ServerOptions options;
    bool api = router == &api_router_;
    if (api) options.parser.max_body_bytes = kMaxApiBodyBytes;  // a desired state with large maps
    http::Handler handler = [router](const http::Request& request, http::Responder responder) {
      router->Handle(request, std::move(responder));
    };
    // The unix socket is guarded by its mode (0600), the probes serve only health and metrics:
    // credentials are for TCP API listeners.
    bool tcp_api = api && address.kind == base::Address::Kind::kTcp;
    bool needs_token = tcp_api && token_;
    if (needs_token) handler = api::RequireBearerToken(token_.get(), std::move(handler));
    if (tcp_api) options.tls = tls;
    absl::StatusOr<std::unique_ptr<http::Server>> server =
        http::Server::Create(loop_->get(), address, options, std::move(handler));
    if (!server.ok()) return server.status();
    base::LogInfo("listening on ", address.ToString(),
                  options.tls == nullptr          ? ""
                  : config_.tls.client_ca.empty() ? " (TLS 1.3)"
                                                  : " (TLS 1.3, client certificates)",
                  needs_token ? " (bearer token)" : "");
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
  report.warnings = reloader_->config_warnings();
  return report;
}

void App::Stop() {
  // Users before what they use: servers and the watch hub read the reconciler and the
  // registry, the reconciler uses the registry and the client, the registry uses the client.
  // The app's own subscriptions (into the watch hub and the clients) go first.
  registry_subscription_.Reset();
  reconciler_subscription_.Reset();
  servers_.clear();
  watch_.reset();
  reloader_.reset();
  state_.reset();
  reconciler_.reset();
  registry_.reset();
  journal_.reset();
  worker_client_.reset();
  client_.reset();
}

}  // namespace hawk::app

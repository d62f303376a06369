#include "agent/app/app.h"

#include "absl/time/clock.h"
#include "agent/api/handlers.h"
#include "agent/base/log.h"

namespace hawk::app {

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

  registry::RegistryOptions registry_options;
  registry_options.poll_interval = config_.poll_interval;
  registry_ = std::make_unique<registry::WorkerRegistry>(
      loop_->get(), client_.get(), registry_options, [] { return absl::Now(); });

  api::RegisterHealthRoutes(&api_router_, registry_.get());
  api::RegisterWorkerRoutes(&api_router_, registry_.get());
  api::RegisterHealthRoutes(&probe_router_, registry_.get());

  auto listen = [this](const base::Address& address, const api::Router* router) -> absl::Status {
    absl::StatusOr<std::unique_ptr<http::Server>> server =
        http::Server::Create(loop_->get(), address, http::ServerOptions{},
                             [router](const http::Request& request, http::Responder responder) {
                               router->Handle(request, std::move(responder));
                             });
    if (!server.ok()) return server.status();
    base::LogInfo("listening on ", address.ToString());
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
  base::LogInfo("watching HAProxy master CLI at ", config_.master_socket.ToString());
  return absl::OkStatus();
}

void App::Stop() {
  // Servers first (they read the registry), then the registry (it uses the client).
  servers_.clear();
  registry_.reset();
  client_.reset();
}

}  // namespace hawk::app

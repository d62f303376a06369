#include "agent/reload/worker_files.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/server_state_file.h"
#include "agent/reload/config_file.h"
#include "agent/store/atomic_file.h"

namespace hawk::reload {
namespace {

// The server-state file, when hawk creates it: as a new configuration file.
constexpr mode_t kServerStateFileMode = kNewConfigMode;

}  // namespace

WorkerFiles::WorkerFiles(cli::MasterClient* client, registry::WorkerRegistry* registry,
                         reconcile::Reconciler* reconciler, WorkerFilesOptions options,
                         std::function<absl::Time()> clock)
    : client_(client),
      registry_(registry),
      reconciler_(reconciler),
      options_(std::move(options)),
      clock_(std::move(clock)) {}

void WorkerFiles::Write(Note note, std::function<void()> done) {
  note_ = std::move(note);
  done_ = std::move(done);
  WriteServerState();
}

void WorkerFiles::Done() {
  note_ = nullptr;
  std::function<void()> done = std::move(done_);
  done();
}

void WorkerFiles::WriteServerState() {
  const model::WorkerReport* current = registry_->report().Current();
  if (options_.server_state_file.empty() || reconciler_->desired() == nullptr ||
      current == nullptr) {
    ListTables();
    return;
  }
  client_->Submit({cli::Command::ForWorker(current->pid, "show servers state")},
                  lifetime_.Guard([this](std::vector<cli::CommandResult> results) {
                    OnServerState(results[0]);
                  }));
}

void WorkerFiles::OnServerState(const cli::CommandResult& result) {
  absl::StatusOr<std::vector<parse::ServerStateRow>> rows =
      result.ok() ? parse::ParseServersState(*result) : result.status();
  if (!rows.ok()) {
    note_(absl::StrCat("server-state file not written: ", rows.status().message()));
  } else if (const model::DesiredState* desired = reconciler_->desired(); desired != nullptr) {
    size_t servers = rows->size();
    absl::Status written = store::WriteFileAtomically(
        options_.server_state_file, plan::DesiredServersStateFile(*std::move(rows), *desired),
        kServerStateFileMode, "write the server-state file");
    note_(written.ok() ? absl::StrCat("server-state file: ", servers, " servers written to ",
                                      options_.server_state_file)
                       : absl::StrCat("server-state file not written: ", written.message()));
  }
  ListTables();
}

void WorkerFiles::ListTables() {
  const model::DesiredState* desired = reconciler_->desired();
  birth::TableFiles* files = options_.table_files;
  if (files == nullptr || desired == nullptr || (desired->maps.empty() && desired->acls.empty())) {
    Done();
    return;
  }
  const model::WorkerReport* current = registry_->report().Current();
  if (!files->has_dir() || current == nullptr) {
    birth::LoadedTables loaded;
    loaded.error =
        files->has_dir() ? "no current worker to tell which files HAProxy loaded" : files->no_dir();
    WriteTableFiles(loaded);
    return;
  }
  int pid = current->pid;
  client_->Submit(
      {cli::Command::ForWorker(pid, "show map"), cli::Command::ForWorker(pid, "show acl")},
      lifetime_.Guard([this, pid](std::vector<cli::CommandResult> results) {
        WriteTableFiles(birth::ParseLoadedTables(pid, results[0], results[1]));
      }));
}

void WorkerFiles::WriteTableFiles(const birth::LoadedTables& loaded) {
  const model::DesiredState* desired = reconciler_->desired();
  if (desired == nullptr) {
    Done();
    return;
  }
  absl::Time started = clock_();
  birth::TablesWriteReport written = options_.table_files->Write(*desired, loaded);
  note_(absl::StrCat("map and ACL files: ", written.files_written, " written (",
                     written.entries_written, " entries) in ",
                     absl::ToInt64Milliseconds(clock_() - started), " ms, ", written.unchanged,
                     " unchanged since hawk wrote them; the new worker reads ", written.maps,
                     " maps and ", written.acls, " ACLs from them"));
  for (const std::string& line : written.skipped) {
    note_(absl::StrCat("not written, the new worker gets it over the CLI: ", line));
  }
  Done();
}

}  // namespace hawk::reload

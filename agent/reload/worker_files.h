#pragma once

// WorkerFiles: the files a reload round writes from what the current worker reports, just before
// the reload (steps 4 and 5 of a round, reloader.h), so that the new worker is born holding the
// desired state: the server-state file (the worker's `show servers state` with the desired fields
// written in, plan/server_state_file.h) and the map and ACL files it loaded
// (birth/table_files.h, which from then on tells the reconciler what a new worker is born with).
//
// Ownership and threading: uses (does not own) the MasterClient, the WorkerRegistry, the
// Reconciler and the TableFiles; loop thread only. One Write at a time.

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/base/lifetime.h"
#include "agent/birth/table_files.h"
#include "agent/cli/client.h"
#include "agent/reconcile/reconciler.h"
#include "agent/registry/registry.h"

namespace hawk::reload {

struct WorkerFilesOptions {
  std::string server_state_file;  // --server-state-file; empty: not written
  // --write-map-files: the files written, and what the next worker is born with; null: none.
  birth::TableFiles* table_files = nullptr;
};

class WorkerFiles {
 public:
  using Note = std::function<void(absl::string_view line)>;  // a line for the round's log

  WorkerFiles(cli::MasterClient* client, registry::WorkerRegistry* registry,
              reconcile::Reconciler* reconciler, WorkerFilesOptions options,
              std::function<absl::Time()> clock);
  WorkerFiles(const WorkerFiles&) = delete;
  WorkerFiles& operator=(const WorkerFiles&) = delete;

  // Writes the files (each when configured and there is a current worker and a desired state),
  // noting what was written and what not, then runs `done` (from inside this call when nothing
  // needs the CLI). A file that cannot be written is noted, not an error: the new worker then
  // gets that state over the CLI. Neither callback runs once this is destroyed.
  void Write(Note note, std::function<void()> done);

 private:
  void WriteServerState();
  void OnServerState(const cli::CommandResult& result);
  // Asks the current worker which files it loaded its maps and ACLs from, then WriteTableFiles.
  void ListTables();
  void WriteTableFiles(const birth::LoadedTables& loaded);
  void Done();

  cli::MasterClient* client_;
  registry::WorkerRegistry* registry_;
  reconcile::Reconciler* reconciler_;
  WorkerFilesOptions options_;
  std::function<absl::Time()> clock_;
  Note note_;                   // of the Write in progress
  std::function<void()> done_;  // of the Write in progress
  // Guards the CLI batches' callbacks. Last: disarmed before any other member goes.
  base::Lifetime lifetime_;
};

}  // namespace hawk::reload

#include "agent/registry/classify.h"

#include "absl/strings/str_cat.h"

namespace hawk::registry {

model::MasterReport MasterFromShowProc(const parse::ShowProc& proc) {
  model::MasterReport master;
  master.pid = proc.master.pid;
  master.reloads = proc.master.reloads;
  master.failed_reloads = proc.master.failed_reloads;
  master.version = proc.master.version;
  master.uptime_seconds = proc.master.uptime_seconds;
  return master;
}

bool SameProcess(int master_before, const model::WorkerReport& before, int master_now, int reloads,
                 int64_t uptime_seconds) {
  if (master_before != 0 && master_now != 0 && master_before != master_now) return false;
  return reloads >= before.reloads && uptime_seconds + 2 >= before.uptime_seconds;
}

std::vector<model::WorkerReport> ClassifyWorkers(
    const parse::ShowProc& proc,
    const absl::flat_hash_map<int, absl::StatusOr<parse::ShowInfo>>& infos,
    const model::WorkersReport& previous) {
  std::vector<model::WorkerReport> workers;
  for (const parse::ProcessEntry& entry : proc.workers) {
    model::WorkerReport worker;
    worker.pid = entry.pid;
    worker.reloads = entry.reloads;
    worker.uptime_seconds = entry.uptime_seconds;
    worker.version = entry.version;
    worker.listed_as_old = entry.listed_as_old;
    auto it = infos.find(entry.pid);
    const model::WorkerReport* before = previous.Find(entry.pid);
    if (before != nullptr && !SameProcess(previous.master.pid, *before, proc.master.pid,
                                          entry.reloads, entry.uptime_seconds)) {
      before = nullptr;  // another process with the same pid: nothing known of it
    }
    if (it != infos.end() && it->second.ok()) {
      const parse::ShowInfo& info = *it->second;
      worker.stopping = info.stopping;
      worker.role = info.stopping ? model::WorkerRole::kLeaving : model::WorkerRole::kCurrent;
      worker.connections = info.curr_conns;
      worker.listeners = info.listeners;
      worker.uptime_seconds = info.uptime_seconds;
      if (!info.version.empty()) worker.version = info.version;
    } else if (it != infos.end() && absl::IsNotFound(it->second.status())) {
      // The master does not route to it. A worker listed in "# workers" that cannot be reached
      // is still initialising (3.1+); one listed as old has exited since `show proc` ran.
      if (entry.listed_as_old) continue;
      worker.role = model::WorkerRole::kStarting;
    } else if (before != nullptr) {
      // A transient failure (timeout, connection closed by a reload): keep what was known.
      worker = *before;
      worker.reloads = entry.reloads;
      worker.listed_as_old = entry.listed_as_old;
      if (it != infos.end()) worker.error = std::string(it->second.status().message());
    } else {
      worker.role = model::WorkerRole::kUnknown;
      worker.error = it != infos.end() ? std::string(it->second.status().message())
                                       : "show info not asked yet";
    }
    workers.push_back(std::move(worker));
  }
  model::SortWorkers(&workers);
  return workers;
}

}  // namespace hawk::registry

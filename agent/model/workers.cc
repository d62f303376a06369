#include "agent/model/workers.h"

#include <algorithm>
#include <tuple>

namespace hawk::model {

absl::string_view WorkerRoleName(WorkerRole role) {
  switch (role) {
    case WorkerRole::kCurrent:
      return "CURRENT";
    case WorkerRole::kLeaving:
      return "LEAVING";
    case WorkerRole::kStarting:
      return "STARTING";
    case WorkerRole::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

const WorkerReport* WorkersReport::Find(int pid) const {
  for (const WorkerReport& w : workers) {
    if (w.pid == pid) return &w;
  }
  return nullptr;
}

const WorkerReport* WorkersReport::Current() const {
  const WorkerReport* best = nullptr;
  for (const WorkerReport& w : workers) {
    if (w.role != WorkerRole::kCurrent) continue;
    if (best == nullptr || w.reloads < best->reloads) best = &w;
  }
  return best;
}

void SortWorkers(std::vector<WorkerReport>* workers) {
  auto rank = [](WorkerRole role) {
    switch (role) {
      case WorkerRole::kCurrent:
        return 0;
      case WorkerRole::kStarting:
        return 1;
      case WorkerRole::kLeaving:
        return 2;
      case WorkerRole::kUnknown:
        return 3;
    }
    return 3;
  };
  std::sort(workers->begin(), workers->end(), [&](const WorkerReport& a, const WorkerReport& b) {
    return std::make_tuple(rank(a.role), a.reloads, a.pid) <
           std::make_tuple(rank(b.role), b.reloads, b.pid);
  });
}

}  // namespace hawk::model

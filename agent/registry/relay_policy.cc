#include "agent/registry/relay_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/parse/show_version.h"

namespace hawk::registry {
namespace {

constexpr absl::string_view kLeakNote =
    "; on HAProxy before 3.0 the master keeps a CLI slot for good when it relays a command to a "
    "worker that is exiting, so hawk sends it nothing more";

// The worker that started right after `worker` was told to stop (see the file comment).
const parse::ProcessEntry* Successor(const parse::ShowProc& proc,
                                     const parse::ProcessEntry& worker) {
  for (const parse::ProcessEntry& entry : proc.workers) {
    if (entry.pid != worker.pid && entry.reloads == worker.reloads - 1) return &entry;
  }
  return nullptr;
}

bool GraceOver(const model::WorkerReport& last) {
  return last.stopping && last.listeners >= 0 && last.listeners <= 1;
}

}  // namespace

bool RelayToExitingWorkerLeaksSlot(absl::string_view master_version) {
  absl::StatusOr<parse::VersionNumbers> version = parse::ParseVersionNumbers(master_version);
  return !version.ok() || parse::VersionLess(*version, parse::VersionNumbers{3, 0, 0});
}

RelayWindow RelayWindowFor(const parse::ShowProc& proc, const parse::ProcessEntry& worker,
                           bool leaks, absl::optional<absl::Duration> grace, absl::Time observed_at,
                           const model::WorkerReport* last,
                           const absl::flat_hash_map<int, absl::Time>& signalled_after) {
  RelayWindow window;
  if (!leaks) {
    if (last != nullptr && GraceOver(*last) && last->connections == 0) {
      window.until = absl::InfinitePast();
      window.why =
          "soft-stopped, its grace period over and no connection left: it is exiting (relayed "
          "commands would only get `Can't connect to the target CLI!`)";
    }
    return window;
  }
  // 2.6 lists the workers a reload told to stop under "# old workers".
  bool leaving = worker.listed_as_old || (last != nullptr && last->stopping);
  if (!leaving) return window;
  window.until = absl::InfinitePast();
  if (last != nullptr && GraceOver(*last)) {
    window.why = absl::StrCat(
        "leaving, its grace period over: it exits as soon as its last "
        "connection closes",
        kLeakNote);
    return window;
  }
  if (!grace.has_value()) {
    window.why = absl::StrCat(
        "leaving, and when its grace period ends is unknown (hawk reads `grace` from the "
        "configuration given with --haproxy-config): it may exit at any moment",
        kLeakNote);
    return window;
  }
  if (*grace <= absl::ZeroDuration()) {
    window.why = absl::StrCat(
        "leaving, without a grace period: it exits as soon as its last connection closes",
        kLeakNote);
    return window;
  }
  const parse::ProcessEntry* successor = Successor(proc, worker);
  if (successor == nullptr) {
    window.why = absl::StrCat(
        "leaving, and the worker that replaced it is no longer listed, so when its grace period "
        "ended is unknown",
        kLeakNote);
    return window;
  }
  // Uptimes are whole seconds: the successor may have started up to a second earlier.
  absl::Time stopped_no_earlier_than =
      observed_at - absl::Seconds(successor->uptime_seconds + 1) - kSoftStopLead;
  if (auto it = signalled_after.find(successor->pid); it != signalled_after.end()) {
    stopped_no_earlier_than = std::max(stopped_no_earlier_than, it->second - kSeenLate);
  }
  window.until = stopped_no_earlier_than + *grace;
  window.why =
      absl::StrCat("leaving, its grace period (", absl::FormatDuration(*grace),
                   ") may be over: it exits as soon as its last connection closes", kLeakNote);
  return window;
}

}  // namespace hawk::registry

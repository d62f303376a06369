#include "agent/cli/relay_gate.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hawk::cli {

bool HasRelays(const std::vector<Command>& commands) {
  return std::any_of(commands.begin(), commands.end(),
                     [](const Command& command) { return command.pid != 0; });
}

void RelayGate::SetListed(absl::flat_hash_set<int> pids) {
  have_listing_ = true;
  stale_ = false;
  listed_ = std::move(pids);
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (!listed_.contains(it->first)) {
      windows_.erase(it++);
    } else {
      ++it;
    }
  }
}

void RelayGate::SetWindow(int pid, absl::Duration remaining, std::string why, absl::Duration now) {
  if (remaining == absl::InfiniteDuration()) {
    windows_.erase(pid);
    return;
  }
  absl::Duration until = remaining <= absl::ZeroDuration() ? absl::ZeroDuration() : now + remaining;
  windows_[pid] = Window{until, std::move(why)};
}

bool RelayGate::Allowed(int pid, absl::Duration now, std::string* why, size_t commands) const {
  if (have_listing_ && !listed_.contains(pid)) {
    if (why != nullptr) {
      *why = absl::StrCat("worker ", pid, " is not listed by the master's last `show proc`");
    }
    return false;
  }
  auto it = windows_.find(pid);
  if (it == windows_.end()) return true;
  absl::Duration lead = lead_ + lead_per_command_ * static_cast<int64_t>(commands);
  if (now + lead < it->second.until) return true;
  if (why != nullptr) *why = absl::StrCat("worker ", pid, ": ", it->second.why);
  return false;
}

absl::Status RelayGate::Check(const std::vector<Command>& commands, absl::Duration now) const {
  for (const Command& command : commands) {
    int pid = command.pid;
    if (pid == 0) continue;
    std::string why;
    if (Allowed(pid, now, &why, commands.size())) continue;
    std::string message = absl::StrCat("not sent: ", why);
    if (have_listing_ && !listed_.contains(pid)) return absl::NotFoundError(message);
    return absl::UnavailableError(message);
  }
  return absl::OkStatus();
}

}  // namespace hawk::cli

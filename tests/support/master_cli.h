#pragma once

// MasterCli: a deliberately simple client for HAProxy's master CLI, used by tests as an oracle
// independent of hawk's own client. One command per connection: connect, write "<command>\n",
// shutdown(SHUT_WR), read to EOF. EOF frames the reply on every version.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace hawk::testing {

struct CliReply {
  bool ok = false;       // connected, sent, and read to EOF
  std::string text;      // the reply (may be empty: `reload` on 2.6)
  std::string error;     // why not ok ("connect unix:…: Connection refused", "read: timeout")
  int error_number = 0;  // errno of a failed connect (ECONNREFUSED/ENOENT during a reload)
};

// `show proc` parsed. Workers and old workers in the order listed.
struct ProcList {
  int master_pid = 0;
  int master_reloads = 0;
  int master_failed = 0;
  std::vector<int> workers;      // `# workers`: the current worker(s)
  std::vector<int> old_workers;  // `# old workers`: leaving workers
  std::vector<int> programs;     // `# programs` / `# old programs`
};

class MasterCli {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout{5000};

  // Sends one command; the full outcome.
  static CliReply Run(const std::string& socket_path, const std::string& command,
                      std::chrono::milliseconds timeout = kDefaultTimeout);
  // Sends one command; the reply text, or "" with `*error` set when it failed.
  static std::string Command(const std::string& socket_path, const std::string& command,
                             std::chrono::milliseconds timeout = kDefaultTimeout,
                             std::string* error = nullptr);
  // `show proc`, parsed; nullopt with `*error` if unreachable or unparsable.
  static std::optional<ProcList> ShowProc(const std::string& socket_path,
                                          std::chrono::milliseconds timeout = kDefaultTimeout,
                                          std::string* error = nullptr);
};

// Parses a `show proc` reply: whitespace-split rows; the master row is
// `pid master N [failed: M] uptime version`; sections `# workers`, `# old workers`,
// `# programs`, `# old programs`. Returns nullopt with `*error` if there is no master row or a
// row is malformed.
std::optional<ProcList> ParseShowProc(const std::string& text, std::string* error = nullptr);

}  // namespace hawk::testing

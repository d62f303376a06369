#pragma once

// ConfigStage: the configuration a reload round loads (steps 1 and 2 of a round, reloader.h): the
// desired servers written into it (plan/server_lines.h), `haproxy -c` on it, the file replaced,
// and put back after a reload that failed; and, across rounds, what the file holds of the desired
// servers and the advice on it (parse/haproxy_config.h), for Warnings().
//
// Ownership and threading: owns the configuration file (config_file.h), the round's candidate
// file and its `haproxy -c` child process; loop thread only. One round at a time.

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/birth/servers_in_config.h"
#include "agent/model/desired.h"
#include "agent/reload/config_file.h"
#include "agent/uv/process.h"

namespace hawk::reload {

struct ConfigStageOptions {
  std::string config_path;     // --haproxy-config; empty: nothing is checked or written
  std::string haproxy_binary;  // --haproxy-binary; empty: no `haproxy -c` check
  bool write_servers = true;   // --write-servers
  absl::Duration check_timeout = absl::Seconds(60);
  // Told what the file holds of hawk's servers whenever it is read at start, written or restored
  // (null: nobody asks).
  birth::ServersInConfig* servers_in_config = nullptr;
};

class ConfigStage {
 public:
  using Note = std::function<void(absl::string_view line)>;  // a line for the round's log
  // OK: the configuration is in place (or there was none to write); otherwise why the round
  // fails (FailedPrecondition: `haproxy -c` rejected it; Internal: a file could not be written).
  using Done = std::function<void(absl::Status)>;

  ConfigStage(uv_loop_t* loop, ConfigStageOptions options);
  ~ConfigStage();  // a round in progress: its candidate removed, its `haproxy -c` killed
  ConfigStage(const ConfigStage&) = delete;
  ConfigStage& operator=(const ConfigStage&) = delete;

  // Reads the file for config_warnings() (logs them, or why it could not).
  void Start();

  // A round's configuration: `config` (nullopt: the file as it is) with the desired servers of
  // `desired` (as of server sequence `server_seq`) written in, checked, then written. `done` runs
  // once: from inside this call when there is nothing to check, else from the check's exit; never
  // after End() or destruction.
  void Prepare(absl::optional<std::string> config, const model::DesiredState* desired,
               uint64_t server_seq, Note note, Done done);

  struct Ended {
    bool written = false;   // the round wrote a configuration
    bool restored = false;  // … and it was put back
    std::string log;        // a line for the round's log ("" when nothing was restored)
  };
  // The round is over. `restore`: the configuration it wrote did not load (or never reached
  // HAProxy) and must not stay on disk; `succeeded`: its new worker serves, holding the servers
  // written in.
  Ended End(bool succeeded, bool restore);

  // Advice on the configuration file, refreshed at Start and after every configuration a
  // successful round wrote. Empty without a configuration path.
  const std::vector<std::string>& config_warnings() const { return config_warnings_; }
  // config_warnings(), and what the configuration lacks for a worker to be born holding the
  // desired servers (see Reloader::Warnings).
  std::vector<std::string> Warnings(const model::DesiredState* desired,
                                    uint64_t latest_server_seq) const;

 private:
  // What one round holds; reset by End().
  struct Round {
    absl::optional<std::string> config;  // what the round writes (nullopt: nothing)
    // No request carried a configuration: `config` is the file with the desired servers written
    // in (--write-servers), which the round may drop to reload the file as it is.
    bool servers_only = false;
    // The desired servers (as of this server sequence) are in the configuration this round
    // reloads; or why they are not.
    absl::optional<uint64_t> servers_seq;
    std::string servers_problem;
    PreviousConfig previous;  // what the configuration held before this round wrote it
    bool written = false;
    absl::optional<CandidateFile> candidate;  // the configuration under `haproxy -c`
    std::unique_ptr<uv::ChildProcess> check;
    Note note;
    Done done;
  };

  void WriteServers(const model::DesiredState* desired, uint64_t server_seq);
  void Check();
  void OnChecked(uv::ProcessResult result);
  void Write();
  void Complete(absl::Status status);  // runs the round's `done`, last
  void RefreshConfigWarnings(absl::string_view config_text);

  uv_loop_t* loop_;
  ConfigStageOptions options_;
  ConfigFile file_;
  std::unique_ptr<Round> round_;
  std::vector<std::string> config_warnings_;
  // The server sequence whose servers the file held after the last successful round (nullopt:
  // none since hawk started), and why the last one could not write them (empty: it could).
  absl::optional<uint64_t> servers_in_config_seq_;
  std::string servers_not_written_;
};

}  // namespace hawk::reload

#pragma once

// ServersInConfig: the servers hawk wrote into the configuration file in its blocks, the ones the
// file's sections do not declare (plan/server_lines.h): a worker started from the file is born
// holding them, and hawk deletes them there, when they leave the desired state, as it deletes the
// servers it created with `add server`. Read from the file when hawk starts (so hawk knows them
// again after a restart) and from each configuration a reload round writes or restores. Pure.
//
// Ownership and threading: owned by the app; the reload round's ConfigStage tells it, the
// reconciler's workers read it when they are first listed. Loop thread only.

#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"

namespace hawk::birth {

class ServersInConfig {
 public:
  using ServerKey = std::pair<std::string, std::string>;  // backend, server

  // The configuration file now holds `config`.
  void Read(absl::string_view config);
  const absl::flat_hash_set<ServerKey>& servers() const { return servers_; }

 private:
  absl::flat_hash_set<ServerKey> servers_;
};

}  // namespace hawk::birth

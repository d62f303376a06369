#include "agent/birth/servers_in_config.h"

#include "agent/plan/server_lines.h"

namespace hawk::birth {

void ServersInConfig::Read(absl::string_view config) {
  servers_.clear();
  for (auto& server : plan::ServersInHawkBlocks(config)) servers_.insert(std::move(server));
}

}  // namespace hawk::birth

#include "agent/plan/server_state_file.h"

#include "absl/container/flat_hash_map.h"
#include "agent/plan/plan.h"

namespace hawk::plan {

std::vector<parse::ServerStateRow> ApplyDesiredToServerRows(std::vector<parse::ServerStateRow> rows,
                                                            const model::DesiredState& desired) {
  absl::flat_hash_map<std::pair<std::string, std::string>, const model::DesiredServer*> wanted;
  for (const model::DesiredBackend& backend : desired.backends) {
    for (const model::DesiredServer& server : backend.servers) {
      wanted[{backend.name, server.name}] = &server;
    }
  }
  for (parse::ServerStateRow& row : rows) {
    auto it = wanted.find(std::make_pair(row.backend, row.server));
    if (it == wanted.end()) continue;
    const model::DesiredServer& want = *it->second;
    if (IsIpLiteral(want.address)) {
      row.address = want.address;
    } else {
      row.fqdn = want.address;
    }
    if (want.port) row.port = *want.port;
    if (want.weight) row.user_weight = *want.weight;
    if (want.state) {
      row.admin_state &= ~(parse::kAdminFMaint | parse::kAdminFDrain);
      if (*want.state == model::ServerState::kMaint) row.admin_state |= parse::kAdminFMaint;
      if (*want.state == model::ServerState::kDrain) row.admin_state |= parse::kAdminFDrain;
    }
  }
  return rows;
}

std::string DesiredServersStateFile(std::vector<parse::ServerStateRow> rows,
                                    const model::DesiredState& desired) {
  return parse::FormatServersStateFile(ApplyDesiredToServerRows(std::move(rows), desired));
}

}  // namespace hawk::plan

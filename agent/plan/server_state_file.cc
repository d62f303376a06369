#include "agent/plan/server_state_file.h"

#include "agent/model/cli_safety.h"

namespace hawk::plan {

std::vector<parse::ServerStateRow> ApplyDesiredToServerRows(std::vector<parse::ServerStateRow> rows,
                                                            const model::DesiredState& desired) {
  for (parse::ServerStateRow& row : rows) {
    const model::ServerSpec* found = desired.FindServer(row.backend, row.server);
    if (found == nullptr) continue;
    const model::ServerSpec& want = *found;
    if (model::IsIpLiteral(want.address)) {
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

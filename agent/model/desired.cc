#include "agent/model/desired.h"

namespace hawk::model {

const char* ServerStateName(ServerState state) {
  switch (state) {
    case ServerState::kReady:
      return "READY";
    case ServerState::kDrain:
      return "DRAIN";
    case ServerState::kMaint:
      return "MAINT";
  }
  return "UNKNOWN";  // not reached: every enumerator is handled above
}

absl::optional<ServerState> ServerStateFromName(absl::string_view name) {
  for (ServerState state : {ServerState::kReady, ServerState::kDrain, ServerState::kMaint}) {
    if (name == ServerStateName(state)) return state;
  }
  return absl::nullopt;
}

}  // namespace hawk::model

#pragma once

// Pure: the server-state file hawk writes before a reload (`--server-state-file`; HAProxy only
// reads it, when it parses the configuration, and never writes it), so that the new worker starts
// from the desired server state instead of the configuration's.
//
// The rows come from the current worker's `show servers state` (the file is matched by backend
// and server name, and every other column must stay what HAProxy printed); the desired fields of
// the servers hawk manages are written over them:
//   - address: an IP literal into srv_addr, a hostname into srv_fqdn;
//   - port into srv_port, weight into srv_uweight;
//   - state into the admin bits: FMAINT for MAINT, FDRAIN for DRAIN, neither for READY (other
//     bits are HAProxy's and are kept).
// HAProxy restores the port, weight, admin state and fqdn from the file but keeps the
// configuration's address for an IP-literal server, so the new worker is still seeded after the
// reload; the file closes the window until then for everything else.

#include <string>
#include <vector>

#include "agent/model/desired.h"
#include "agent/parse/servers_state.h"

namespace hawk::plan {

// `rows` with the desired fields applied (servers hawk does not manage are unchanged).
std::vector<parse::ServerStateRow> ApplyDesiredToServerRows(std::vector<parse::ServerStateRow> rows,
                                                            const model::DesiredState& desired);

// parse::FormatServersStateFile(ApplyDesiredToServerRows(rows, desired)).
std::string DesiredServersStateFile(std::vector<parse::ServerStateRow> rows,
                                    const model::DesiredState& desired);

}  // namespace hawk::plan

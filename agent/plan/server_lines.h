#pragma once

// Pure: the configuration hawk writes before a reload (--write-servers) so that the new worker is
// born holding the desired servers, from its first request.
//
// Why the configuration: a worker started by a reload starts from what its configuration says.
// The server-state file does not close the gap: HAProxy (2.6 to 3.4) restores a port from it but
// keeps the configuration's address for a server declared with an IP literal, and a server the
// configuration declares `disabled` comes back disabled whatever the file says. In the slot model
// ingress controllers use (`server-template s 1-N 192.0.2.1:80 disabled`, every slot set at
// runtime) the new worker would serve placeholders until hawk seeds it: requests get 503.
//
// What is written, in every `backend` and `listen` section:
//   - `server <name> <address> [keywords]` of a managed server: the address token gets the
//     desired IP literal and port (an IPv6 address in brackets), `weight` the desired weight
//     (added when absent), `disabled` is there exactly when the desired state is MAINT. Every
//     other word, the indentation and a trailing comment stay as they were.
//   - `server-template <prefix> <count|first-last> <address> [keywords]` whose address is an IP
//     literal and that holds a managed slot: replaced by one `server <prefix><i>` line per slot
//     (the same keywords, so the same servers, in the same order, hence the same ids), each
//     managed slot written as above, between two marker comments that keep the template line.
//     Reading a configuration back, a marked block is the template again: the next render starts
//     from the operator's template, and a slot no longer managed gets the template's values back.
//   - a managed server the section does not declare (hawk creates it at runtime with `add server`)
//     whose address is an IP literal with a port: `server <name> <ip>:<port> [weight <w>]
//     [disabled]` at the end of its section, between two marker comments. Reading a
//     configuration back, a marked block is dropped and written again from the desired state, so
//     a server that left it leaves the file at the next write. ServersInHawkBlocks lists them:
//     a worker started from the file holds them, and hawk deletes them as it deletes the servers
//     it created.
// What is not written (the new worker starts from the configuration, then hawk seeds it; each is
// named in `notes`):
//   - a desired hostname (HAProxy would resolve it when it starts, blocking or failing there);
//   - a server whose configured address is not an IP literal with an optional port (a hostname
//     with resolvers, a UNIX socket, an environment variable, a port range): DNS or the operator
//     owns it;
//   - DRAIN, which has no configuration keyword: it is written as not `disabled`, and the
//     server-state file (--server-state-file) carries the drain;
//   - a managed server the configuration does not declare and that `add server` could not create
//     either (plan::WhyNotCreatable; counted in `undeclared`).
//
// Lines are read as HAProxy reads them: words split on blanks, with "…" and '…' quoting and
// backslash escapes, and a comment from an unquoted '#'. A `server` keyword's value is skipped by
// its known arity, so that `cookie disabled` is not taken for the `disabled` flag.

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/model/desired.h"

namespace hawk::plan {

struct ServerLines {
  std::string config;       // the configuration with the desired servers written in
  bool changed = false;     // config differs from the input
  int servers_written = 0;  // managed servers whose line now holds their desired fields
  int templates_expanded = 0;
  int runtime_written = 0;         // undeclared servers written in hawk's blocks
  int undeclared = 0;              // managed servers neither declared nor written in hawk's blocks
  std::vector<std::string> notes;  // why a managed server was left as configured, one per server
};

ServerLines WriteDesiredServers(absl::string_view config, const model::DesiredState& desired);

// The servers in hawk's blocks of `config` ({backend, server}, in file order).
std::vector<std::pair<std::string, std::string>> ServersInHawkBlocks(absl::string_view config);

// The marker comments around an expanded template (exposed for tests).
inline constexpr absl::string_view kTemplateBeginMarker = "# hawk --write-servers: expanded ";
inline constexpr absl::string_view kTemplateEndMarker = "# hawk --write-servers: end of ";
// The marker comments around the servers a section does not declare.
inline constexpr absl::string_view kRuntimeBeginMarker =
    "# hawk --write-servers: servers created at runtime";
inline constexpr absl::string_view kRuntimeEndMarker =
    "# hawk --write-servers: end of servers created at runtime";

}  // namespace hawk::plan

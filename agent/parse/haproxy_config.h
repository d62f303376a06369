#pragma once

// Pure: advice on an HAProxy configuration file, for the settings hawk's zero-downtime result
// depends on (README, "Recommended HAProxy settings"). hawk logs it at start and after each
// configuration it writes, and reports it in GET /v1/workers (`warnings`).
//
//   master-worker        (global) or `-W` on the command line: hawk needs the master CLI.
//   grace <t>            (global) keeps a leaving worker's proxies running for <t> after a
//                        reload, so it still accepts `set server` (seen on 2.6 and 3.4); without it
//                        the leaving worker answers `Proxy is disabled.` at once and its servers
//                        stay frozen.
//   hard-stop-after <t>  (global) bounds how long a leaving worker with frozen state may serve.
//   option idle-close-on-response  (defaults, frontend or listen) keeps idle keep-alive
//                        connections open through the soft-stop and closes them after their
//                        next response, instead of closing them under clients that send on them
//                        (2.6+).
//
// A line-level reading, not a full parser: sections start at an unindented keyword (or any line
// whose first word is a section keyword), comments start at an unescaped '#'.

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"

namespace hawk::parse {

// Whether `word`, first on a line, starts a section (global, defaults, frontend, backend, listen,
// resolvers, peers, …): the lines after it belong to that section until the next one.
bool IsSectionKeyword(absl::string_view word);

// One message per missing setting, naming the setting, where it goes and what its absence costs.
// Empty when the configuration has them all.
std::vector<std::string> AdviseOnConfig(absl::string_view config_text);

// The global `grace` of a configuration: zero when it has none (HAProxy's default), nullopt when
// its value is not a time HAProxy reads (a number with an optional unit us, ms, s, m, h or d;
// milliseconds without one). The last `grace` line wins, as in HAProxy.
absl::optional<absl::Duration> GraceFromConfig(absl::string_view config_text);

}  // namespace hawk::parse

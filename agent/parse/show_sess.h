#pragma once

// Parser of a worker's `show sess` (one line per stream):
//
//   0x5579090d6eb0: proto=tcpv4 src=127.0.0.1:46286 fe=fe be=be_app srv=web1 ts=00 epoch=0 age=2s
//     calls=3 … rq[f=49c40000h,i=0,…] rp[…] scf=[8,80h,fd=15] scb=[…] exp=28s rc=0 c_exp=
//
// The pointer is what `shutdown session <id>` takes, which is how hawk ends the streams that
// keep a leaving worker alive (it exits once its last one ends). The CLI's own stream
// (`fe=GLOBAL`, the `show sess` itself) is always listed; `is_cli()` finds it. The bracketed
// tokens changed between 2.6 and 3.x, so everything but the first few fields is kept as text.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::parse {

struct SessionRow {
  std::string id;            // "0x5579090d6eb0"
  std::string proto;         // proto= ("tcpv4", "sockpair", …)
  std::string source;        // src=
  std::string frontend;      // fe=
  std::string backend;       // be=, "" for <NONE>
  std::string server;        // srv=, "" for <none>
  int64_t age_seconds = -1;  // age= ("2s", "1m12s", "3d4h"), -1 when HAProxy printed "?"
  // Every token: `key=value` → key, value; `key[…]` → key, "[…]"; anything else → token, "".
  absl::flat_hash_map<std::string, std::string> fields;

  // The stream of the CLI session itself (the stats/master socket frontend is "GLOBAL").
  bool is_cli() const { return frontend == "GLOBAL"; }
};

// An empty reply is no streams. InvalidArgument when a line does not start with `0x…: ` or has
// no `fe=`.
absl::StatusOr<std::vector<SessionRow>> ParseShowSess(absl::string_view reply);

}  // namespace hawk::parse

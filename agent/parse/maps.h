#pragma once

// Parsers of the map and ACL listings:
//
//   show map / show acl (the list of pattern references):
//     # id (file) description
//     4 (/etc/haproxy/hosts.map) pattern loaded from file '/etc/haproxy/hosts.map' used by map at
//       file '/etc/haproxy/h.cfg' line 13. curr_ver=0 next_ver=0 entry_cnt=2
//     1 () acl 'src' file '/etc/haproxy/h.cfg' line 11. curr_ver=0 next_ver=0 entry_cnt=0
//   show map [@<ver>] <map>:   0x557909023000 a.example.com be_app
//   show acl [@<ver>] <acl>:   0x55d0c1f2a010 10.0.0.0/8
//
// HAProxy prints entries as "%p %s %s" (map) and "%p %s" (ACL), so a map key that contains a
// space (possible with `\ ` escapes on the command line) cannot be told from the value:
// the parser takes the first word as the key and the rest of the line as the value.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::parse {

// One pattern reference from `show map` or `show acl`.
struct PatternRefInfo {
  int id = 0;               // unique id: `#<id>` names it in commands
  std::string file;         // the "(…)" part: the file path, "" for an inline ACL
  std::string description;  // what HAProxy says about it, without the final '.'
  int64_t curr_ver = -1;    // -1 when HAProxy does not print the version fields
  int64_t next_ver = -1;
  int64_t entry_cnt = -1;
};

// InvalidArgument when the `# id (file) description` header is missing or a row is malformed.
absl::StatusOr<std::vector<PatternRefInfo>> ParseMapList(absl::string_view reply);
absl::StatusOr<std::vector<PatternRefInfo>> ParseAclList(absl::string_view reply);

// `show map <map>` / `show acl <acl>`, one entry at a time and without copies (a map of 100,000
// entries is observed on every resync): `on_entry(ref, key, value)` / `on_entry(ref, pattern)`,
// views into `reply`. An empty reply is an empty table. InvalidArgument when a line does not
// start with a `0x…` reference, which is also how "Unknown map identifier…" is reported.
using MapEntryVisitor =
    std::function<void(absl::string_view ref, absl::string_view key, absl::string_view value)>;
using AclEntryVisitor = std::function<void(absl::string_view ref, absl::string_view pattern)>;
absl::Status ForEachMapEntry(absl::string_view reply, const MapEntryVisitor& on_entry);
absl::Status ForEachAclEntry(absl::string_view reply, const AclEntryVisitor& on_entry);

}  // namespace hawk::parse

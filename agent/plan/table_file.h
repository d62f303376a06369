#pragma once

// Pure: the map and ACL files hawk writes before a reload, so that the new worker is born holding
// the desired tables (HAProxy reads a map or ACL file only when it parses the configuration, and
// runtime changes never reach it).
//
// HAProxy's reader, the same in 2.6 to 3.4, reads one entry per line and ignores lines starting
// with '#' and blank lines:
//   - map: leading blanks (space, tab) are skipped; the key runs to the next blank; blanks after
//     it are skipped; the value is the rest of the line with trailing blanks trimmed;
//   - ACL: leading blanks are skipped; the pattern is the rest of the line, as it is.
// A table holding an entry that this cannot carry (a key with a blank or starting with '#', a
// value with leading or trailing blanks, a pattern starting with '#' or a blank, any CR or LF) is
// not written: the error names the entry, and the new worker gets the table over the CLI instead.

#include <string>

#include "absl/status/statusor.h"
#include "agent/model/string_table.h"

namespace hawk::plan {

// The file's bytes, one "key value" (map) or "pattern" (ACL) line per entry, sorted by key.
absl::StatusOr<std::string> RenderTableFile(bool acl, const model::StringTable& table);

}  // namespace hawk::plan

#include "agent/base/build_info.h"

#include "absl/strings/str_cat.h"
#include "agent/base/build_commit.h"  // generated: HAWK_COMMIT

namespace hawk::base {

absl::string_view BuildVersion() { return HAWK_VERSION; }

absl::string_view BuildCommit() { return HAWK_COMMIT; }

std::string VersionLine() {
  return absl::StrCat("hawk ", BuildVersion(), " (commit ", BuildCommit(), ")");
}

}  // namespace hawk::base

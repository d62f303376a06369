#pragma once

// hawk's own version and the commit it was built from: what `hawk --version` prints.

#include <string>

#include "absl/strings/string_view.h"

namespace hawk::base {

// The project's version (CMakeLists.txt's project(VERSION)), e.g. "0.1.0".
absl::string_view BuildVersion();
// The source commit: 12 hex digits, with "-dirty" when built from changed tracked files; the
// image build's HAWK_COMMIT; "unknown" when built outside a git checkout without one.
absl::string_view BuildCommit();
// "hawk 0.1.0 (commit 1de28b1a2c3d)".
std::string VersionLine();

}  // namespace hawk::base

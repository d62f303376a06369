#pragma once

// Reading the recorded HAProxy replies in tests/fixtures/haproxy-<version>/.

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace hawk::parse::testing {

inline constexpr absl::string_view kVersions[] = {"2.6", "3.0", "3.2", "3.4"};

// The raw bytes of a fixture; a test failure (and "") when it cannot be read.
inline std::string ReadFixture(absl::string_view version, absl::string_view name) {
  std::string path = absl::StrCat(HAWK_FIXTURES_DIR, "/haproxy-", version, "/", name);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read fixture " << path;
    return "";
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The framer may hand a reply over with its blank-line terminator, with one "\n" or with none:
// the same reply in all three forms.
inline std::vector<std::string> Endings(absl::string_view reply) {
  while (!reply.empty() && reply.back() == '\n') reply.remove_suffix(1);
  return {absl::StrCat(reply, "\n\n"), absl::StrCat(reply, "\n"), std::string(reply)};
}

}  // namespace hawk::parse::testing

// The JSON codecs of the API over any bytes. A desired state that parses must come back the same
// through DesiredStateToJson (desired_json.h documents it), and every name or value it holds must
// be safe to put in a CLI command line: no byte that ends a command or starts another.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "agent/model/desired_json.h"
#include "agent/model/reload_json.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

bool NoLineBreakOrNul(absl::string_view text) {
  return text.find_first_of(absl::string_view("\n\r\0", 3)) == absl::string_view::npos;
}

// One CLI word that cannot end the command, start another or start a prefix (`@`).
bool SafeIdentifier(absl::string_view name) {
  return !name.empty() && name[0] != '@' && NoLineBreakOrNul(name) &&
         name.find_first_of(" \t;#") == absl::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view json(reinterpret_cast<const char*>(data), size);
  (void)hawk::model::ParseReloadRequest(json);

  auto state = hawk::model::ParseDesiredState(json);
  if (!state.ok()) return 0;
  for (const auto& backend : state->backends) {
    HAWK_FUZZ_CHECK(SafeIdentifier(backend.name), "a backend name unsafe in a CLI line");
    for (const auto& server : backend.servers) {
      HAWK_FUZZ_CHECK(SafeIdentifier(server.name), "a server name unsafe in a CLI line");
      HAWK_FUZZ_CHECK(server.address.empty() || SafeIdentifier(server.address),
                      "an address unsafe in a CLI line");
    }
  }
  for (const auto& map : state->maps) {
    HAWK_FUZZ_CHECK(SafeIdentifier(map.name), "a map name unsafe in a CLI line");
    for (const auto& entry : map.entries) {
      HAWK_FUZZ_CHECK(NoLineBreakOrNul(entry.key) && NoLineBreakOrNul(entry.value),
                      "a map entry with a line break or NUL");
    }
  }
  for (const auto& acl : state->acls) {
    HAWK_FUZZ_CHECK(SafeIdentifier(acl.name), "an ACL name unsafe in a CLI line");
    for (const auto& pattern : acl.patterns) {
      HAWK_FUZZ_CHECK(NoLineBreakOrNul(pattern), "an ACL pattern with a line break or NUL");
    }
  }
  std::string canonical = hawk::model::DesiredStateToJson(*state);
  auto again = hawk::model::ParseDesiredState(canonical);
  HAWK_FUZZ_CHECK(again.ok(), "the canonical JSON of a parsed state does not parse");
  HAWK_FUZZ_CHECK(*again == *state, "the canonical JSON reads back to another state");
  HAWK_FUZZ_CHECK(hawk::model::DesiredStateToJson(*again) == canonical,
                  "the canonical JSON is not stable");
  return 0;
}

// The replies of one `@@!<pid>` line must be read the same however many commands the line
// carried, and never invent or reorder bytes: each reply is the next piece of the block, ends with
// its own empty line and holds no other; asking for fewer commands than the block answers is the
// only error. Seeds: the recorded `@@` blocks in tests/fixtures and any bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "agent/cli/line_replies.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view block(reinterpret_cast<const char*>(data), size);
  // With room for every reply: never an error, and the replies tile a prefix of the block.
  absl::StatusOr<std::vector<std::string>> all = hawk::cli::SplitLineReplies(block, size + 1);
  HAWK_FUZZ_CHECK(all.ok(), "a block with room for every reply was refused");
  size_t at = 0;
  for (const std::string& reply : *all) {
    HAWK_FUZZ_CHECK(block.substr(at, reply.size()) == reply, "a reply is not the next bytes");
    HAWK_FUZZ_CHECK(absl::EndsWith(reply, "\n"), "a reply does not end with LF");
    bool lone = reply == "\n";
    HAWK_FUZZ_CHECK(lone || absl::EndsWith(reply, "\n\n"),
                    "a reply does not end with an empty line");
    absl::string_view body(reply);
    body.remove_suffix(lone ? 1 : 2);
    HAWK_FUZZ_CHECK(!absl::StrContains(body, "\n\n") && !absl::StartsWith(body, "\n"),
                    "a reply holds a second empty line");
    at += reply.size();
  }
  HAWK_FUZZ_CHECK(!absl::StrContains(block.substr(at), "\n\n"),
                  "a complete reply was left in the tail");
  // With exactly as many commands: the same replies; with fewer: an error, never a shorter list.
  size_t n = all->size();
  absl::StatusOr<std::vector<std::string>> exact = hawk::cli::SplitLineReplies(block, n);
  // Bytes after the last complete reply are a cut-short reply for a command beyond the n-th: with
  // exactly n commands they cannot be anyone's, hence an error.
  bool tail = at < block.size();
  if (tail) {
    HAWK_FUZZ_CHECK(!exact.ok(), "bytes after the last expected reply were accepted");
  } else {
    HAWK_FUZZ_CHECK(exact.ok() && *exact == *all, "exact count reads differently");
  }
  if (n > 0) {
    HAWK_FUZZ_CHECK(!hawk::cli::SplitLineReplies(block, n - 1).ok(),
                    "fewer commands than replies was accepted");
  }
  return 0;
}

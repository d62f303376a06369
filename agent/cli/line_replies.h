#pragma once

// The replies to the commands of one whole line sent to one worker, pure.
//
// `@@!<pid> c1; c2; …` (3.2+) sends the whole line to one worker CLI session, and the master
// passes the session's output back, followed by its prompt. A worker in non-interactive mode ends
// every command's output with an empty line, and 3.0+ ends every message with LF (2.6 does not,
// but 2.6 has no `@@`), so the block splits at empty lines: a silent success is a lone "\n",
// "No such server." arrives as "No such server.\n\n". Checked on 3.2.26 and 3.4.7:
//   "\nNo such server.\n\n11 (initial 1)\n\n"  for  `set … weight 11; set be/nope weight 3;
//                                                   get weight be/s1`
// A block that ends before every command was answered (the worker exited mid-line, the
// connection closed) leaves the rest unanswered: they may or may not have run. Text after the
// last expected reply means the block is not what hawk sent: an error, and the connection must
// not be trusted further.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hawk::cli {

// Up to `commands` replies, each with its terminating empty line ("…\n\n", or "\n" for a silent
// success), in order. Fewer when the block ends early; a last reply without its empty line is
// left out (cut short). DataLoss when non-empty text follows the `commands`-th reply.
absl::StatusOr<std::vector<std::string>> SplitLineReplies(absl::string_view block, size_t commands);

}  // namespace hawk::cli

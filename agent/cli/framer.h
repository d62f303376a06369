#pragma once

// PromptFramer cuts the byte stream of one master-CLI connection in prompt mode into replies.
// Pure: no sockets, no clock.
//
// Why prompt mode: without it a reply ends at its first empty line, but 2.6 prints some messages
// without their LF (no empty line follows) and master-side errors never get one, on any version.
// In prompt mode the master writes its prompt (`master> `, `master[ReloadFailed]> `, with mode
// flags `(xed)` on 3.x) after every command's reply, errors included on 2.8+, so a reply is
// exactly the bytes up to the next prompt that starts a line. 2.6 closes the connection after a
// master error instead: EOF ends that reply. Payload commands make the master echo `+ ` once for
// the command line and once per payload line; the framer strips them.
//
// The one assumption: no reply contains a line that begins with a prompt. Every reply hawk asks
// for prefixes its data lines (`0x…` pointers, numeric ids, `Key:`), so none can.

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::cli {

struct FramedReply {
  std::string text;  // the reply without prompts
};

// Whose prompt ends a reply.
enum class PromptKind {
  kMaster,  // the master CLI: `master> ` (MatchPrompt)
  // A worker's own stats socket in prompt mode: `> ` at the start of a line, after every command
  // on 2.6 and after every line on 3.x (hawk sends one command per line, so after every reply).
  // No reply hawk asks a worker for has a line that starts with "> ".
  kWorker,
};

class PromptFramer {
 public:
  explicit PromptFramer(size_t max_reply_bytes = 64 * 1024 * 1024,
                        PromptKind kind = PromptKind::kMaster);

  // Registers the next reply to expect, in send order. `payload_lines` is the number of payload
  // lines sent with the command (0 for none).
  void Expect(size_t payload_lines);
  // Appends bytes and moves every completed reply to `out`, in order. Fails on bytes that arrive
  // while no reply is expected or on a reply over the size limit; the connection is then unusable.
  absl::Status Feed(absl::string_view bytes, std::vector<FramedReply>* out);
  // The peer closed the connection: the reply being received, if any, ends here (2.6 after a
  // master error; `reload`). Returns nullopt when no reply was expected.
  absl::optional<FramedReply> FinishAtEof();

  size_t expected() const { return expected_.size(); }

 private:
  // Position just after a prompt that starts at a line start in buffer_[from..], and where it
  // starts; npos if none is complete yet.
  struct PromptMatch {
    size_t begin = std::string::npos;
    size_t end = std::string::npos;
  };
  PromptMatch FindPrompt(size_t from) const;
  FramedReply TakeReply(size_t body_end, size_t consumed);

  size_t max_reply_bytes_;
  PromptKind kind_;
  std::string buffer_;
  size_t scan_from_ = 0;         // bytes before this cannot start a prompt (already scanned)
  std::deque<size_t> expected_;  // payload line counts of the replies still due
};

// Matches a master prompt at the start of `text`: `master`, an optional `[…]` state, an optional
// `(…)` mode set, then `> `. Returns its length, 0 if `text` is not a prompt, or npos if `text` is
// a proper prefix of one (more bytes needed).
size_t MatchPrompt(absl::string_view text);
// The same for a worker's `> `.
size_t MatchWorkerPrompt(absl::string_view text);

}  // namespace hawk::cli

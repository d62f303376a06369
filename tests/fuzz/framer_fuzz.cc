// The prompt-mode framer must frame a byte stream the same way however the bytes arrive: whole,
// one byte at a time, or in chunks. The number of expected replies and the chunk size come from
// the input's size, so that every seed (recorded master CLI sessions) is used as it is.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/cli/framer.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

struct Framing {
  std::vector<std::string> replies;
  bool failed = false;
  bool eof_reply = false;
  std::string eof_text;
};

Framing Frame(absl::string_view bytes, size_t expected, size_t chunk) {
  hawk::cli::PromptFramer framer(/*max_reply_bytes=*/1 << 16);
  for (size_t i = 0; i < expected; ++i) framer.Expect(i % 3 == 2 ? 1 : 0);
  Framing out;
  std::vector<hawk::cli::FramedReply> replies;
  for (size_t at = 0; at < bytes.size() && !out.failed; at += chunk) {
    out.failed = !framer.Feed(bytes.substr(at, chunk), &replies).ok();
  }
  for (auto& r : replies) out.replies.push_back(std::move(r.text));
  HAWK_FUZZ_CHECK(out.replies.size() <= expected, "more replies than expected");
  if (!out.failed) {
    auto last = framer.FinishAtEof();
    out.eof_reply = last.has_value();
    if (last) out.eof_text = std::move(last->text);
  }
  return out;
}

bool SameFraming(const Framing& a, const Framing& b) {
  if (a.failed != b.failed) return false;
  if (a.failed) return true;  // the connection is dropped: what came before does not matter
  return a.replies == b.replies && a.eof_reply == b.eof_reply && a.eof_text == b.eof_text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t expected = 1 + size % 7;
  Framing whole = Frame(bytes, expected, bytes.size() + 1);
  Framing bytewise = Frame(bytes, expected, 1);
  Framing chunked = Frame(bytes, expected, 1 + size % 13);
  HAWK_FUZZ_CHECK(SameFraming(whole, bytewise), "byte-by-byte framing differs from whole");
  HAWK_FUZZ_CHECK(SameFraming(whole, chunked), "chunked framing differs from whole");
  return 0;
}

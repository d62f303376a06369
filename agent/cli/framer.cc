#include "agent/cli/framer.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hawk::cli {
namespace {
constexpr absl::string_view kPromptWord = "master";
constexpr absl::string_view kPayloadPrompt = "+ ";
// Bounded so that a stray '[' or '(' cannot make the matcher wait for ever.
constexpr size_t kMaxPromptDecorationBytes = 32;

// Matches an optional `open … close` group at text[pos]; advances pos. Returns false on a
// mismatch, and sets *need_more if text ended inside the group.
bool MatchGroup(absl::string_view text, size_t* pos, char open, char close, bool* need_more) {
  if (*pos >= text.size()) {
    *need_more = true;
    return true;
  }
  if (text[*pos] != open) return true;
  // Letters only up to `close`: anything else (a newline included) means this line is not a
  // prompt, whether or not more bytes are due, so that the verdict never depends on how the
  // bytes were split.
  for (size_t i = *pos + 1; i < text.size(); ++i) {
    if (i - *pos > kMaxPromptDecorationBytes) return false;
    char c = text[i];
    if (c == close) {
      *pos = i + 1;
      return true;
    }
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!letter) return false;
  }
  *need_more = true;
  return true;
}
}  // namespace

size_t MatchPrompt(absl::string_view text) {
  size_t n = std::min(text.size(), kPromptWord.size());
  if (text.substr(0, n) != kPromptWord.substr(0, n)) return 0;
  if (text.size() < kPromptWord.size()) return absl::string_view::npos;
  size_t pos = kPromptWord.size();
  bool need_more = false;
  if (!MatchGroup(text, &pos, '[', ']', &need_more)) return 0;
  if (need_more) return absl::string_view::npos;
  if (!MatchGroup(text, &pos, '(', ')', &need_more)) return 0;
  if (need_more) return absl::string_view::npos;
  if (pos + 2 > text.size()) {
    absl::string_view rest = text.substr(pos);
    return absl::string_view("> ").substr(0, rest.size()) == rest ? absl::string_view::npos : 0;
  }
  if (text[pos] != '>' || text[pos + 1] != ' ') return 0;
  return pos + 2;
}

size_t MatchWorkerPrompt(absl::string_view text) {
  constexpr absl::string_view kPrompt = "> ";
  size_t n = std::min(text.size(), kPrompt.size());
  if (text.substr(0, n) != kPrompt.substr(0, n)) return 0;
  return text.size() < kPrompt.size() ? absl::string_view::npos : kPrompt.size();
}

PromptFramer::PromptFramer(size_t max_reply_bytes, PromptKind kind)
    : max_reply_bytes_(max_reply_bytes), kind_(kind) {}

void PromptFramer::Expect(size_t payload_lines) { expected_.push_back(payload_lines); }

PromptFramer::PromptMatch PromptFramer::FindPrompt(size_t from) const {
  absl::string_view view(buffer_);
  for (size_t pos = from; pos < view.size();) {
    if (pos == 0 || view[pos - 1] == '\n') {
      size_t len = kind_ == PromptKind::kMaster ? MatchPrompt(view.substr(pos))
                                                : MatchWorkerPrompt(view.substr(pos));
      if (len == absl::string_view::npos) return {};  // a prompt may be arriving: wait
      if (len > 0) return {pos, pos + len};
    }
    size_t nl = view.find('\n', pos);
    if (nl == absl::string_view::npos) break;
    pos = nl + 1;
  }
  return {};
}

FramedReply PromptFramer::TakeReply(size_t body_end, size_t consumed) {
  size_t payload_lines = expected_.front();
  expected_.pop_front();
  absl::string_view body = absl::string_view(buffer_).substr(0, body_end);
  if (payload_lines > 0) {
    // One `+ ` for the command line and one per payload line.
    for (size_t i = 0; i <= payload_lines && absl::StartsWith(body, kPayloadPrompt); ++i) {
      body.remove_prefix(kPayloadPrompt.size());
    }
  }
  FramedReply reply{std::string(body)};
  buffer_.erase(0, consumed);
  scan_from_ = 0;
  return reply;
}

absl::Status PromptFramer::Feed(absl::string_view bytes, std::vector<FramedReply>* out) {
  if (expected_.empty() && !bytes.empty()) {
    return absl::DataLossError(
        absl::StrCat("master CLI sent ", bytes.size(), " bytes while no reply was expected"));
  }
  buffer_.append(bytes.data(), bytes.size());
  while (!expected_.empty()) {
    PromptMatch match = FindPrompt(scan_from_);
    if (match.begin == std::string::npos) {
      // Nothing before the last line can start a prompt any more.
      size_t last_nl = buffer_.rfind('\n');
      scan_from_ = last_nl == std::string::npos ? 0 : last_nl + 1;
      if (buffer_.size() > max_reply_bytes_) {
        return absl::ResourceExhaustedError(
            absl::StrCat("master CLI reply exceeds ", max_reply_bytes_, " bytes without a prompt"));
      }
      break;
    }
    out->push_back(TakeReply(match.begin, match.end));
  }
  if (expected_.empty() && !buffer_.empty()) {
    return absl::DataLossError(
        absl::StrCat("master CLI sent ", buffer_.size(), " bytes after the last expected reply"));
  }
  return absl::OkStatus();
}

absl::optional<FramedReply> PromptFramer::FinishAtEof() {
  if (expected_.empty()) return absl::nullopt;
  return TakeReply(buffer_.size(), buffer_.size());
}

}  // namespace hawk::cli

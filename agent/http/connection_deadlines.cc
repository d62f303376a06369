// A connection's deadlines: the one timer each connection arms for whatever it waits on now (a
// request's head, the next bytes of a body, the client reading a response, a lingering close),
// and what happens when it fires.

#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "agent/base/log.h"
#include "agent/http/connection.h"

namespace hawk::http {
namespace internal {
namespace {

uint64_t Milliseconds(absl::Duration duration) {
  // Clamped so that deadline arithmetic cannot overflow (InfiniteDuration is ~forever anyway).
  constexpr int64_t kMax = int64_t{1} << 40;  // ~35 years
  return static_cast<uint64_t>(std::clamp<int64_t>(absl::ToInt64Milliseconds(duration), 0, kMax));
}

}  // namespace

// Arms the one timer for whatever the connection waits on now.
void Connection::UpdateTimer() {
  uint64_t now = Now();
  absl::optional<uint64_t> deadline;
  switch (phase_) {
    case Phase::kReading:
      if (defer_advance_ || !pending_.empty() || parse_failed_) {
        deadline = now;
      } else if (parser_.message_in_progress() && !parser_.headers_complete()) {
        deadline = header_start_ms_ + Milliseconds(HeaderTimeout());
      } else {  // between requests, or in a body: the client must keep sending
        deadline = last_activity_ms_ + Milliseconds(IdleTimeout());
      }
      break;
    case Phase::kHandling:
    case Phase::kStreaming:
      if (abandoned_) deadline = now;
      break;
    case Phase::kDraining:
      deadline = last_activity_ms_ + Milliseconds(IdleTimeout());
      break;
    case Phase::kFinishing:
      // While the last response is still going out, the client must keep reading it.
      deadline = unflushed_writes_ > 0
                     ? last_activity_ms_ + Milliseconds(IdleTimeout())
                     : finishing_since_ms_ + Milliseconds(options_.linger_timeout);
      break;
    case Phase::kClosing:
      break;
  }
  if (!deadline.has_value()) {
    timer_.Stop();
    return;
  }
  if (timer_.active() && armed_deadline_ == *deadline) return;
  armed_deadline_ = *deadline;
  timer_.Start(absl::Milliseconds(*deadline > now ? *deadline - now : 0), [this] { OnTimer(); });
}

void Connection::OnTimer() {
  uint64_t now = Now();
  switch (phase_) {
    case Phase::kReading: {
      if (defer_advance_ || !pending_.empty() || parse_failed_) {
        Advance();
        return;
      }
      bool in_headers = parser_.message_in_progress() && !parser_.headers_complete();
      uint64_t deadline = in_headers ? header_start_ms_ + Milliseconds(HeaderTimeout())
                                     : last_activity_ms_ + Milliseconds(IdleTimeout());
      if (now < deadline) {
        UpdateTimer();
        return;
      }
      if (!parser_.message_in_progress()) {
        Abort();  // idle keep-alive connection
        return;
      }
      base::LogDebug("http: request timed out ", in_headers ? "in its headers" : "in its body");
      SendFinal(JsonError(408, "DEADLINE_EXCEEDED",
                          in_headers ? absl::StrCat("request headers not complete within ",
                                                    absl::FormatDuration(HeaderTimeout()))
                                     : absl::StrCat("no request body bytes for ",
                                                    absl::FormatDuration(IdleTimeout()))));
      return;
    }
    case Phase::kHandling:
      if (!abandoned_) return;
      base::LogError("http: the handler of ", current_.method, " ", current_.path,
                     " dropped its Responder without answering");
      Send(current_id_, JsonError(500, "INTERNAL", "the request was not answered"));
      if (phase_ == Phase::kReading) Advance();
      return;
    case Phase::kStreaming:
      if (!abandoned_) return;
      EndStream(current_id_);
      if (phase_ == Phase::kReading) Advance();
      return;
    case Phase::kDraining:
      base::LogDebug("http: closing a connection whose client does not read its responses");
      Abort();
      return;
    case Phase::kFinishing:
      if (unflushed_writes_ > 0) {
        base::LogDebug("http: closing a connection whose client does not read its response");
      }
      Abort();
      return;
    case Phase::kClosing:
      return;
  }
}

}  // namespace internal
}  // namespace hawk::http

#include "agent/cli/reconnect_pacing.h"

#include <algorithm>

namespace hawk::cli {

void ReconnectPacing::OnPeerClose(absl::Duration now, absl::Duration ready_at) {
  lost_at_ = now;
  if (now - ready_at >= options_.stable_after) close_streak_ = 0;
  if (close_streak_ == 0 || now != last_peer_close_) ++close_streak_;
  last_peer_close_ = now;
  absl::Duration backoff = options_.fast_retry_interval;
  for (int i = 1; i < close_streak_ && backoff < options_.max_close_backoff; ++i) backoff *= 2;
  retry_delay_ = std::min(backoff, options_.max_close_backoff);
}

absl::Duration ReconnectPacing::NextDelay(absl::Duration now) {
  absl::Duration delay = retry_delay_;
  if (now - lost_at_ > options_.fast_retry_window) {
    retry_delay_ = std::min(retry_delay_ * 2, options_.max_retry_interval);
  }
  return delay;
}

}  // namespace hawk::cli

#pragma once

// How long the MasterClient waits before it connects again, pure. The master refuses
// connections while it re-executes: a short constant retry catches it the moment it is back,
// then the delay grows so an absent master costs little. After the master closes an established
// connection the wait starts at the fast interval and doubles for each close in a row of
// connections it closed soon after their handshake: a master that closes each connection once
// hawk sends on it must not be reconnected to (and resent to) hundreds of times a second, while
// a reload, which closes connections that served a while, is followed by a connect at once.
// Times are the client's loop time, passed in: this reads no clock.

#include "absl/time/time.h"

namespace hawk::cli {

struct ReconnectPacingOptions {
  absl::Duration fast_retry_interval = absl::Milliseconds(5);
  absl::Duration fast_retry_window = absl::Seconds(3);  // after a loss, before the delay grows
  absl::Duration max_retry_interval = absl::Milliseconds(250);
  absl::Duration stable_after = absl::Seconds(1);  // a close later than this ends a streak
  absl::Duration max_close_backoff = absl::Seconds(1);
};

class ReconnectPacing {
 public:
  explicit ReconnectPacing(ReconnectPacingOptions options)
      : options_(options), retry_delay_(options.fast_retry_interval) {}

  // A connection completed its handshake: the next loss retries fast again.
  void OnReady() { retry_delay_ = options_.fast_retry_interval; }
  // The master closed, at `now`, a connection whose handshake completed at `ready_at`. Closes
  // within the same millisecond (a reload closing every connection) count once.
  void OnPeerClose(absl::Duration now, absl::Duration ready_at);
  // The master re-executed (a reload) since the closes counted so far: they were the reload's,
  // so the next close backs off as a first one.
  void ForgetCloseStreak() { close_streak_ = 0; }
  // The wait before the next connect, scheduled at `now`; once the loss is older than the fast
  // retry window, each call doubles the wait after it up to max_retry_interval.
  absl::Duration NextDelay(absl::Duration now);

  int close_streak() const { return close_streak_; }  // closes by the master in a row
  absl::Duration retry_delay() const { return retry_delay_; }

 private:
  ReconnectPacingOptions options_;
  absl::Duration retry_delay_;
  absl::Duration lost_at_;  // when the master was last lost
  int close_streak_ = 0;
  absl::Duration last_peer_close_;
};

}  // namespace hawk::cli

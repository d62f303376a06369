#include "agent/drain/drain_rules.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/base/status_field.h"

namespace hawk::drain {
namespace {

absl::StatusOr<int64_t> Millis(absl::string_view name, const absl::optional<std::string>& text,
                               int64_t fallback) {
  if (!text.has_value()) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value) || value < 0 || value > kMaxDrainMs) {
    return base::FieldError(name, absl::StrCat("must be an integer in 0..", kMaxDrainMs,
                                               " (milliseconds), got \"", *text, "\""));
  }
  return value;
}

}  // namespace

absl::StatusOr<DrainParams> ParseDrainParams(const absl::optional<std::string>& quiet_ms,
                                             const absl::optional<std::string>& bound_ms) {
  absl::StatusOr<int64_t> quiet = Millis("quietMs", quiet_ms, kDefaultQuietMs);
  if (!quiet.ok()) return quiet.status();
  absl::StatusOr<int64_t> bound = Millis("boundMs", bound_ms, kDefaultBoundMs);
  if (!bound.ok()) return bound.status();
  if (*quiet > *bound) {
    return base::FieldError("quietMs",
                            absl::StrCat("must not exceed boundMs (", *bound, "), got ", *quiet,
                                         ": the wait would always end at the bound"));
  }
  return DrainParams{absl::Milliseconds(*quiet), absl::Milliseconds(*bound)};
}

absl::string_view DrainReasonName(DrainReason reason) {
  switch (reason) {
    case DrainReason::kQuiet:
      return "quiet";
    case DrainReason::kBound:
      return "bound";
    case DrainReason::kUnavailable:
      return "unavailable";
  }
  return "unknown";
}

void ActivityTracker::Observe(absl::Time asked, absl::Time answered,
                              const ConnectionTotals& totals) {
  if (!has_sample_) {
    has_sample_ = true;
    quiet_since_ = answered;  // nothing is known before the first sample
  } else {
    for (const auto& [pid, total] : totals) {
      auto it = last_.find(pid);
      // A new worker (a reload during the drain) that has accepted anything, or a counter that
      // went back (another process with that pid): activity all the same.
      bool moved = it == last_.end() ? total > 0 : total != it->second;
      if (moved) {
        quiet_since_ = std::max(quiet_since_, answered);
        break;
      }
    }
  }
  last_ = totals;
  quiet_until_ = std::max(quiet_until_, asked);
}

absl::optional<DrainReason> Decide(const DrainParams& params, absl::Time started,
                                   const ActivityTracker& activity, absl::Time now) {
  if (activity.has_sample()) {
    absl::Time since = std::max(started, activity.quiet_since());
    if (activity.quiet_until() - since >= params.quiet) return DrainReason::kQuiet;
  }
  if (now - started >= params.bound) return DrainReason::kBound;
  return absl::nullopt;
}

}  // namespace hawk::drain

#include "agent/reload/history.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hawk::reload {
namespace {

// What a record keeps of the round's log.
constexpr size_t kMaxLogBytes = 16 * 1024;

}  // namespace

const char* ReloadTriggerName(ReloadTrigger trigger) {
  return trigger == ReloadTrigger::kApi ? "API" : "EXTERNAL";
}

const char* ReloadResultName(ReloadResult result) {
  switch (result) {
    case ReloadResult::kSucceeded:
      return "SUCCEEDED";
    case ReloadResult::kFailed:
      return "FAILED";
    case ReloadResult::kTimedOut:
      return "TIMED_OUT";
    case ReloadResult::kUnreachable:
      return "UNREACHABLE";
  }
  return "FAILED";
}

std::string LogExcerpt(absl::string_view log) {
  log = absl::StripTrailingAsciiWhitespace(log);
  if (log.size() <= kMaxLogBytes) return std::string(log);
  return absl::StrCat("…", log.substr(log.size() - kMaxLogBytes));
}

ReloadRecord ExternalRecord(uint64_t id, const ExternalReload& external) {
  const ReloadJudgement& judgement = external.judgement;
  ReloadRecord record;
  record.id = id;
  record.trigger = ReloadTrigger::kExternal;
  record.result = judgement.verdict == Verdict::kSucceeded ? ReloadResult::kSucceeded
                  : judgement.verdict == Verdict::kFailed  ? ReloadResult::kFailed
                                                           : ReloadResult::kTimedOut;
  record.started_at = external.noticed_at;
  record.duration = external.duration;  // from when hawk noticed it
  record.new_worker_pid = judgement.new_worker_pid;
  record.error = judgement.reason;
  return record;
}

void ReloadHistory::Add(ReloadRecord record) {
  ++counters_.reloads[static_cast<int>(record.trigger)][static_cast<int>(record.result)];
  counters_.duration_seconds.Observe(absl::ToDoubleSeconds(record.duration));
  recent_.push_front(std::move(record));
  while (recent_.size() > size_) recent_.pop_back();
}

}  // namespace hawk::reload

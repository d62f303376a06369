#pragma once

// Note: Debian 12 builds abseil with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0);
// hawk uses absl::string_view throughout so that values pass to abseil without conversions.

// A small leveled logger to stderr (abseil 20220623 has no absl/log). One line per event,
// logfmt-ish: `2026-12-02T10:00:00.123Z level=warn msg="…"`. Log at the boundary, never in parsers.

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace hawk::base {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void LogLine(LogLevel level, absl::string_view message);

template <typename... Args>
void Log(LogLevel level, const Args&... args) {
  if (level < GetLogLevel()) return;
  LogLine(level, absl::StrCat(args...));
}

template <typename... Args>
void LogDebug(const Args&... args) {
  Log(LogLevel::kDebug, args...);
}
template <typename... Args>
void LogInfo(const Args&... args) {
  Log(LogLevel::kInfo, args...);
}
template <typename... Args>
void LogWarn(const Args&... args) {
  Log(LogLevel::kWarn, args...);
}
template <typename... Args>
void LogError(const Args&... args) {
  Log(LogLevel::kError, args...);
}

}  // namespace hawk::base

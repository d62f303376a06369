#include "agent/parse/show_info.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agent/parse/text.h"

namespace hawk::parse {
namespace {

constexpr absl::string_view kWhat = "show info";

absl::Status Missing(absl::string_view key) {
  return absl::InvalidArgumentError(absl::StrCat("show info: no \"", key, ":\" line"));
}

absl::Status Malformed(absl::string_view key, absl::string_view value, absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat("show info: ", key, ": ", internal::Quote(value), ": expected ", want));
}

const std::string* Find(const ShowInfo& info, absl::string_view key) {
  auto it = info.fields.find(key);
  return it == info.fields.end() ? nullptr : &it->second;
}

absl::Status RequireCount(const ShowInfo& info, absl::string_view key, int64_t* out) {
  const std::string* value = Find(info, key);
  if (value == nullptr) return Missing(key);
  if (!internal::ParseUnsigned(*value, out)) return Malformed(key, *value, "a number");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ShowInfo> ParseShowInfo(absl::string_view reply) {
  absl::StatusOr<std::vector<internal::Line>> lines = internal::SplitReplyLines(kWhat, reply);
  if (!lines.ok()) return lines.status();
  if (lines->empty()) return absl::InvalidArgumentError("show info: empty reply");
  if (lines->size() > kMaxShowInfoFields) {
    return absl::InvalidArgumentError(absl::StrCat(
        "show info: ", lines->size(), " lines, over the limit of ", kMaxShowInfoFields));
  }
  ShowInfo info;
  for (const internal::Line& line : *lines) {
    size_t colon = line.text.find(':');
    if (colon == absl::string_view::npos || colon == 0) {
      return internal::LineError(kWhat, line, "expected \"Key: value\"");
    }
    absl::string_view key = line.text.substr(0, colon);
    absl::string_view value = absl::StripAsciiWhitespace(line.text.substr(colon + 1));
    info.fields.try_emplace(key, value);
  }

  const std::string* pid = Find(info, "Pid");
  if (pid == nullptr) return Missing("Pid");
  if (!internal::ParseUnsignedInt(*pid, &info.pid) || info.pid <= 0) {
    return Malformed("Pid", *pid, "a pid");
  }

  const std::string* stopping = Find(info, "Stopping");
  if (stopping == nullptr) return Missing("Stopping");
  if (*stopping != "0" && *stopping != "1") return Malformed("Stopping", *stopping, "0 or 1");
  info.stopping = *stopping == "1";

  absl::Status status = RequireCount(info, "CurrConns", &info.curr_conns);
  if (!status.ok()) return status;
  status = RequireCount(info, "Uptime_sec", &info.uptime_seconds);
  if (!status.ok()) return status;

  const std::string* version = Find(info, "Version");
  if (version == nullptr) return Missing("Version");
  if (version->empty()) return Malformed("Version", *version, "a version");
  info.version = *version;

  if (const std::string* node = Find(info, "node")) info.node = *node;
  if (Find(info, "Listeners") != nullptr) {
    status = RequireCount(info, "Listeners", &info.listeners);
    if (!status.ok()) return status;
  }
  return info;
}

}  // namespace hawk::parse

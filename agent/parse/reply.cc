#include "agent/parse/reply.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/parse/text.h"

namespace hawk::parse {
namespace {

constexpr absl::string_view kTargetNotFoundPrefix =
    "Can't find the target PID matching the prefix '";
constexpr absl::string_view kCantConnect = "Can't connect to the target CLI!";
constexpr absl::string_view kMasterPermissionDenied = "Permission denied!";
constexpr absl::string_view kNewVersionPrefix = "New version created: ";

// log_levels[] in HAProxy's src/log.c, indexed by severity.
constexpr absl::string_view kSeverityNames[] = {"emerg",   "alert",  "crit", "err",
                                                "warning", "notice", "info", "debug"};

// Strips a leading `[N]: ` or `[name]: ` and returns the severity, or -1 (text untouched).
int StripSeverity(absl::string_view* text) {
  if (!absl::StartsWith(*text, "[")) return -1;
  size_t close = text->find("]: ");
  if (close == absl::string_view::npos || close < 2) return -1;
  absl::string_view tag = text->substr(1, close - 1);
  int severity = -1;
  if (tag.size() == 1 && tag[0] >= '0' && tag[0] <= '7') {
    severity = tag[0] - '0';
  } else {
    for (int i = 0; i < 8; ++i) {
      if (tag == kSeverityNames[i]) severity = i;
    }
  }
  if (severity >= 0) text->remove_prefix(close + 3);
  return severity;
}

absl::optional<ReplyCode> MatchMasterError(absl::string_view line) {
  if (absl::StartsWith(line, kTargetNotFoundPrefix) && absl::EndsWith(line, "'") &&
      line.size() > kTargetNotFoundPrefix.size()) {
    return ReplyCode::kTargetNotFound;
  }
  if (line == kCantConnect) return ReplyCode::kCantConnect;
  if (line == kMasterPermissionDenied) return ReplyCode::kPermissionDenied;
  return absl::nullopt;
}

bool IsNewVersion(absl::string_view line, int64_t* version) {
  int64_t ignored = 0;
  if (version == nullptr) version = &ignored;
  return absl::ConsumePrefix(&line, kNewVersionPrefix) && internal::ParseUnsigned(line, version);
}

// The one-line success messages. `set server … addr/port` (src/server.c
// srv_update_addr_port) combines "IP changed from '…' to '…'" or "no need to change the addr"
// with ", port changed from '…' to '…'" or ", no need to change the port", then " by '…'"; 3.x
// may answer "nothing changed" for a no-op.
bool IsSuccessLine(absl::string_view line) {
  return absl::StartsWith(line, "IP changed from '") ||
         absl::StartsWith(line, "port changed from '") ||
         absl::StartsWith(line, "no need to change the addr") ||
         absl::StartsWith(line, "no need to change the port") ||
         absl::StartsWith(line, "nothing changed") || line == "New server registered." ||
         line == "Server deleted." || line == "Done." || IsNewVersion(line, nullptr);
}

ReplyCode ClassifyErrorLine(absl::string_view line) {
  if (line == "Proxy is disabled.") return ReplyCode::kProxyDisabled;
  if (line == "No such server.") return ReplyCode::kNoSuchServer;
  if (line == "No such backend.") return ReplyCode::kNoSuchBackend;
  if (absl::StartsWith(line, "Unknown map identifier")) return ReplyCode::kUnknownMap;
  if (absl::StartsWith(line, "Unknown ACL identifier")) return ReplyCode::kUnknownAcl;
  // Same texts on 2.6 and 3.4 (checked on both binaries).
  if (line == "entry not found.") return ReplyCode::kEntryNotFound;
  if (line == "Key not found.") return ReplyCode::kKeyNotFound;
  if (line == "Server still has connections attached to it, cannot remove it.") {
    return ReplyCode::kServerInUse;
  }
  if (line == "Only servers in maintenance mode can be deleted.") {
    return ReplyCode::kNotInMaintenance;
  }
  if (line == "Backend must use a dynamic load balancing to support dynamic servers." ||
      absl::StartsWith(line, "Backend does not support dynamic servers")) {
    return ReplyCode::kStaticBackend;
  }
  // 2.6: "Unknown command, but maybe …" (worker), "Unknown command. Please enter …" (master);
  // 3.x: "Unknown command: 'x', but maybe …".
  if (absl::StartsWith(line, "Unknown command")) return ReplyCode::kUnknownCommand;
  if (line == "The following commands are valid at this level:") {
    return ReplyCode::kUnknownCommand;
  }
  if (line == "Permission denied") return ReplyCode::kPermissionDenied;  // worker level check
  if (absl::optional<ReplyCode> master = MatchMasterError(line)) return *master;
  return ReplyCode::kOtherError;
}

}  // namespace

absl::string_view ReplyCodeName(ReplyCode code) {
  switch (code) {
    case ReplyCode::kEmptySuccess:
      return "empty_success";
    case ReplyCode::kSuccess:
      return "success";
    case ReplyCode::kProxyDisabled:
      return "proxy_disabled";
    case ReplyCode::kNoSuchServer:
      return "no_such_server";
    case ReplyCode::kNoSuchBackend:
      return "no_such_backend";
    case ReplyCode::kUnknownMap:
      return "unknown_map";
    case ReplyCode::kUnknownAcl:
      return "unknown_acl";
    case ReplyCode::kEntryNotFound:
      return "entry_not_found";
    case ReplyCode::kKeyNotFound:
      return "key_not_found";
    case ReplyCode::kServerInUse:
      return "server_in_use";
    case ReplyCode::kNotInMaintenance:
      return "not_in_maintenance";
    case ReplyCode::kStaticBackend:
      return "static_backend";
    case ReplyCode::kUnknownCommand:
      return "unknown_command";
    case ReplyCode::kTargetNotFound:
      return "target_not_found";
    case ReplyCode::kCantConnect:
      return "cant_connect";
    case ReplyCode::kPermissionDenied:
      return "permission_denied";
    case ReplyCode::kOtherError:
      return "other_error";
  }
  return "other_error";
}

bool IsSuccess(ReplyCode code) {
  return code == ReplyCode::kEmptySuccess || code == ReplyCode::kSuccess;
}

ClassifiedReply ClassifyMutationReply(absl::string_view reply) {
  ClassifiedReply result;
  absl::string_view text = absl::StripAsciiWhitespace(reply);
  result.text = std::string(text);
  if (text.empty()) {
    result.code = ReplyCode::kEmptySuccess;
    return result;
  }
  result.severity = StripSeverity(&text);
  size_t newline = text.find('\n');
  absl::string_view first_line = text.substr(0, newline);
  if (newline == absl::string_view::npos && IsSuccessLine(first_line)) {
    result.code = ReplyCode::kSuccess;
    return result;
  }
  result.code = ClassifyErrorLine(first_line);
  return result;
}

absl::optional<ReplyCode> ClassifyMasterError(absl::string_view reply) {
  absl::string_view line = internal::StripTrailingNewlines(reply);
  if (line.find('\n') != absl::string_view::npos) return absl::nullopt;
  return MatchMasterError(line);
}

absl::Status ReplyCodeStatus(ReplyCode code, std::string message) {
  switch (code) {
    case ReplyCode::kTargetNotFound:
      return absl::NotFoundError(std::move(message));
    case ReplyCode::kCantConnect:
      return absl::UnavailableError(std::move(message));
    case ReplyCode::kPermissionDenied:
      return absl::PermissionDeniedError(std::move(message));
    case ReplyCode::kUnknownCommand:
      return absl::FailedPreconditionError(std::move(message));
    default:
      return absl::OkStatus();
  }
}

absl::StatusOr<int64_t> ParseNewVersion(absl::string_view reply) {
  ClassifiedReply classified = ClassifyMutationReply(reply);
  absl::string_view text = classified.text;
  StripSeverity(&text);
  int64_t version = 0;
  if (classified.code != ReplyCode::kSuccess || !IsNewVersion(text, &version)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prepare: expected \"New version created: <N>\", got ", internal::Quote(classified.text)));
  }
  return version;
}

}  // namespace hawk::parse

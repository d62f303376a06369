#include "agent/plan/observed.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/parse/reply.h"

namespace hawk::plan {
namespace {

// The replies that say nothing about the object asked for: the command never reached a worker
// that could answer it. Ok for anything else.
absl::Status NotAboutTheObject(absl::string_view what, const parse::ClassifiedReply& reply) {
  std::string message = absl::StrCat(what, ": HAProxy replied \"", reply.text, "\"");
  switch (reply.code) {
    case parse::ReplyCode::kTargetNotFound:
      return absl::NotFoundError(message);
    case parse::ReplyCode::kCantConnect:
      return absl::UnavailableError(message);
    case parse::ReplyCode::kPermissionDenied:
      return absl::PermissionDeniedError(message);
    case parse::ReplyCode::kUnknownCommand:
      return absl::FailedPreconditionError(message);
    default:
      return absl::OkStatus();
  }
}

absl::string_view FirstLine(absl::string_view text) {
  text = absl::StripLeadingAsciiWhitespace(text);
  return absl::StripTrailingAsciiWhitespace(text.substr(0, text.find('\n')));
}

}  // namespace

ObservedBackend FromServersState(const std::vector<parse::ServerStateRow>& rows) {
  ObservedBackend backend;
  for (const parse::ServerStateRow& row : rows) {
    backend.servers[row.server] = ObservedServer{row.address,  row.port,        row.admin_state,
                                                 row.op_state, row.user_weight, row.fqdn};
  }
  return backend;
}

absl::flat_hash_map<std::string, ObservedBackend> BackendsFromServersState(
    const std::vector<parse::ServerStateRow>& rows) {
  absl::flat_hash_map<std::string, ObservedBackend> backends;
  for (const parse::ServerStateRow& row : rows) {
    backends[row.backend].servers[row.server] = ObservedServer{
        row.address, row.port, row.admin_state, row.op_state, row.user_weight, row.fqdn};
  }
  return backends;
}

ObservedMap FromMapEntries(const std::vector<parse::MapEntry>& entries) {
  ObservedMap map;
  map.lines.reserve(entries.size());
  for (const parse::MapEntry& entry : entries) {
    map.lines.push_back(absl::StrCat(entry.key, " ", entry.value));
  }
  return map;
}

ObservedAcl FromAclEntries(const std::vector<parse::AclEntry>& entries) {
  ObservedAcl acl;
  acl.patterns.reserve(entries.size());
  for (const parse::AclEntry& entry : entries) acl.patterns.push_back(entry.pattern);
  return acl;
}

absl::StatusOr<ObservedBackend> BackendFromReply(absl::string_view reply) {
  constexpr absl::string_view kWhat = "show servers state";
  absl::StatusOr<std::vector<parse::ServerStateRow>> rows = parse::ParseServersState(reply);
  if (rows.ok()) return FromServersState(*rows);
  parse::ClassifiedReply classified = parse::ClassifyMutationReply(reply);
  if (absl::Status status = NotAboutTheObject(kWhat, classified); !status.ok()) return status;
  absl::string_view first = FirstLine(reply);
  // The table starts with its format version ("1") and the `# be_id …` header: a broken table is
  // the parser's error, not an absent backend.
  if (first.empty() || first == "1" || absl::StartsWith(first, "#") ||
      absl::ascii_isdigit(static_cast<unsigned char>(first[0]))) {
    return rows.status();
  }
  return ObservedBackend{false, {}};
}

absl::StatusOr<ObservedMap> MapFromReply(absl::string_view reply) {
  absl::StatusOr<std::vector<parse::MapEntry>> entries = parse::ParseMapEntries(reply);
  if (entries.ok()) return FromMapEntries(*entries);
  parse::ClassifiedReply classified = parse::ClassifyMutationReply(reply);
  if (absl::Status status = NotAboutTheObject("show map", classified); !status.ok()) {
    return status;
  }
  if (classified.code == parse::ReplyCode::kUnknownMap ||
      classified.code == parse::ReplyCode::kUnknownAcl) {
    return ObservedMap{false, {}};
  }
  return entries.status();
}

absl::StatusOr<ObservedAcl> AclFromReply(absl::string_view reply) {
  absl::StatusOr<std::vector<parse::AclEntry>> entries = parse::ParseAclEntries(reply);
  if (entries.ok()) return FromAclEntries(*entries);
  parse::ClassifiedReply classified = parse::ClassifyMutationReply(reply);
  if (absl::Status status = NotAboutTheObject("show acl", classified); !status.ok()) {
    return status;
  }
  if (classified.code == parse::ReplyCode::kUnknownMap ||
      classified.code == parse::ReplyCode::kUnknownAcl) {
    return ObservedAcl{false, {}};
  }
  return entries.status();
}

}  // namespace hawk::plan

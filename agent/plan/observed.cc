#include "agent/plan/observed.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/parse/maps.h"
#include "agent/parse/reply.h"
#include "agent/parse/servers_state.h"

namespace hawk::plan {
namespace {

// Not OK when the reply says nothing about the object asked for (parse::ReplyCodeStatus): the
// command never reached a worker that could answer it.
absl::Status NotAboutTheObject(absl::string_view what, const parse::ClassifiedReply& reply) {
  return parse::ReplyCodeStatus(reply.code,
                                absl::StrCat(what, ": HAProxy replied \"", reply.text, "\""));
}

absl::string_view FirstLine(absl::string_view text) {
  text = absl::StripLeadingAsciiWhitespace(text);
  return absl::StripTrailingAsciiWhitespace(text.substr(0, text.find('\n')));
}

}  // namespace

absl::StatusOr<ObservedBackend> BackendFromReply(absl::string_view reply) {
  constexpr absl::string_view kWhat = "show servers state";
  ObservedBackend backend;
  absl::Status rows =
      parse::ForEachServerState(reply, [&backend](const parse::ServerStateRow& row) {
        backend.servers[row.server] = ObservedServer{row.address,  row.port,        row.admin_state,
                                                     row.op_state, row.user_weight, row.fqdn};
      });
  if (rows.ok()) return backend;
  parse::ClassifiedReply classified = parse::ClassifyMutationReply(reply);
  if (absl::Status status = NotAboutTheObject(kWhat, classified); !status.ok()) return status;
  absl::string_view first = FirstLine(reply);
  // The table starts with its format version ("1") and the `# be_id …` header: a broken table is
  // the parser's error, not an absent backend.
  if (first.empty() || first == "1" || absl::StartsWith(first, "#") ||
      absl::ascii_isdigit(static_cast<unsigned char>(first[0]))) {
    return rows;
  }
  return ObservedBackend{false, {}};
}

// A map or ACL listing, or the reply that says the worker has none by that name.
template <typename Walk>
absl::StatusOr<ObservedTable> TableFromReply(absl::string_view what, absl::string_view reply,
                                             Walk walk) {
  ObservedTable table;
  absl::Status entries = walk(&table);
  if (entries.ok()) return table;
  parse::ClassifiedReply classified = parse::ClassifyMutationReply(reply);
  if (absl::Status status = NotAboutTheObject(what, classified); !status.ok()) return status;
  if (classified.code == parse::ReplyCode::kUnknownMap ||
      classified.code == parse::ReplyCode::kUnknownAcl) {
    ObservedTable absent;
    absent.present = false;
    return absent;
  }
  return entries;
}

absl::StatusOr<ObservedTable> MapFromReply(absl::string_view reply) {
  return TableFromReply("show map", reply, [reply](ObservedTable* table) {
    absl::Status status = parse::ForEachMapEntry(
        reply, [table](absl::string_view, absl::string_view key, absl::string_view value) {
          if (table->entries.Set(key, value).has_value()) table->duplicates = true;
          if (value.find_first_of(" \t") != absl::string_view::npos) table->ambiguous = true;
        });
    if (!status.ok() || !table->ambiguous) return status;
    // The split at the first space may be wrong somewhere: read the lines whole.
    table->duplicates = false;
    return parse::ForEachMapEntry(
        reply, [table](absl::string_view, absl::string_view key, absl::string_view value) {
          std::string line = absl::StrCat(key, " ", value);
          if (table->lines.Set(line, "").has_value()) table->duplicates = true;
        });
  });
}

absl::StatusOr<ObservedTable> AclFromReply(absl::string_view reply) {
  return TableFromReply("show acl", reply, [reply](ObservedTable* table) {
    return parse::ForEachAclEntry(reply, [table](absl::string_view, absl::string_view pattern) {
      if (table->entries.Set(pattern, "").has_value()) table->duplicates = true;
    });
  });
}

}  // namespace hawk::plan

#include "agent/parse/servers_state.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/parse/text.h"

namespace hawk::parse {

namespace {

using internal::Line;
using internal::LineError;

constexpr absl::string_view kWhat = "show servers state";
// Far more columns than HAProxy prints; a header with more is garbage.
constexpr size_t kMaxColumns = 256;

// How each standard column maps onto ServerStateRow. Exactly one member pointer is set.
struct Field {
  int ServerStateRow::*int_field = nullptr;
  int64_t ServerStateRow::*int64_field = nullptr;
  std::string ServerStateRow::*string_field = nullptr;
  bool dash_is_empty = false;  // "-" means "" (not for names: "-" is a valid HAProxy name)
  bool required = false;
};

constexpr Field IntField(int ServerStateRow::*field, bool required = false) {
  Field f;
  f.int_field = field;
  f.required = required;
  return f;
}

constexpr Field Int64Field(int64_t ServerStateRow::*field) {
  Field f;
  f.int64_field = field;
  return f;
}

constexpr Field StringField(std::string ServerStateRow::*field, bool dash_is_empty,
                            bool required = false) {
  Field f;
  f.string_field = field;
  f.dash_is_empty = dash_is_empty;
  f.required = required;
  return f;
}

// Indexed like kServersStateColumns.
constexpr Field kFields[kServersStateColumnCount] = {
    IntField(&ServerStateRow::backend_id, true),
    StringField(&ServerStateRow::backend, false, true),
    IntField(&ServerStateRow::server_id, true),
    StringField(&ServerStateRow::server, false, true),
    StringField(&ServerStateRow::address, true, true),
    IntField(&ServerStateRow::op_state, true),
    IntField(&ServerStateRow::admin_state, true),
    IntField(&ServerStateRow::user_weight, true),
    IntField(&ServerStateRow::initial_weight, true),
    Int64Field(&ServerStateRow::seconds_since_last_change),
    IntField(&ServerStateRow::check_status),
    IntField(&ServerStateRow::check_result),
    IntField(&ServerStateRow::check_health),
    IntField(&ServerStateRow::check_state),
    IntField(&ServerStateRow::agent_state),
    IntField(&ServerStateRow::backend_forced_id),
    IntField(&ServerStateRow::server_forced_id),
    StringField(&ServerStateRow::fqdn, true),
    IntField(&ServerStateRow::port),
    StringField(&ServerStateRow::srv_record, true),
    IntField(&ServerStateRow::use_ssl),
    IntField(&ServerStateRow::check_port),
    StringField(&ServerStateRow::check_addr, true),
    StringField(&ServerStateRow::agent_addr, true),
    IntField(&ServerStateRow::agent_port),
};

constexpr int kExtraColumn = -1;

int StandardIndex(absl::string_view name) {
  for (size_t i = 0; i < kServersStateColumnCount; ++i) {
    if (kServersStateColumns[i] == name) return static_cast<int>(i);
  }
  return kExtraColumn;
}

absl::Status SetField(const Line& line, absl::string_view column, const Field& field,
                      absl::string_view value, ServerStateRow* row) {
  if (field.string_field != nullptr) {
    row->*field.string_field = field.dash_is_empty && value == "-" ? "" : std::string(value);
  } else if (field.int_field != nullptr) {
    if (!internal::ParseSignedInt(value, &(row->*field.int_field))) {
      return LineError(kWhat, line, absl::StrCat(column, ": expected a number"));
    }
  } else if (!internal::ParseSigned(value, &(row->*field.int64_field))) {
    return LineError(kWhat, line, absl::StrCat(column, ": expected a number"));
  }
  return absl::OkStatus();
}

std::string FieldText(const Field& field, const ServerStateRow& row) {
  if (field.string_field != nullptr) {
    const std::string& value = row.*field.string_field;
    return value.empty() ? "-" : value;
  }
  if (field.int_field != nullptr) return absl::StrCat(row.*field.int_field);
  return absl::StrCat(row.*field.int64_field);
}

absl::Status WalkServersState(absl::string_view reply, bool keep_columns,
                              const std::function<void(ServerStateRow*)>& on_row) {
  absl::StatusOr<std::vector<Line>> lines = internal::SplitReplyLines(kWhat, reply);
  if (!lines.ok()) return lines.status();
  if (lines->empty()) return absl::InvalidArgumentError("show servers state: empty reply");

  const Line& version = (*lines)[0];
  absl::string_view version_text = absl::StripAsciiWhitespace(version.text);
  if (version_text != "1") {
    int64_t number = 0;
    return LineError(kWhat, version,
                     internal::ParseUnsigned(version_text, &number)
                         ? "unsupported format version (only 1 is known)"
                         : "expected the format version line \"1\"");
  }
  if (lines->size() < 2) {
    return absl::InvalidArgumentError("show servers state: no \"# be_id …\" header line");
  }
  const Line& header = (*lines)[1];
  std::vector<absl::string_view> names = internal::SplitWords(header.text);
  if (names.size() < 2 || names[0] != "#") {
    return LineError(kWhat, header, "expected the \"# be_id be_name …\" header");
  }
  names.erase(names.begin());
  if (names.size() > kMaxColumns) {
    return LineError(kWhat, header,
                     absl::StrCat(names.size(), " columns, over the limit of ", kMaxColumns));
  }
  std::vector<int> standard(names.size());
  absl::flat_hash_set<absl::string_view> seen;
  bool present[kServersStateColumnCount] = {};
  for (size_t i = 0; i < names.size(); ++i) {
    if (!seen.insert(names[i]).second) {
      return LineError(kWhat, header, absl::StrCat("column ", names[i], " appears twice"));
    }
    standard[i] = StandardIndex(names[i]);
    if (standard[i] != kExtraColumn) present[standard[i]] = true;
  }
  for (size_t i = 0; i < kServersStateColumnCount; ++i) {
    if (kFields[i].required && !present[i]) {
      return LineError(kWhat, header,
                       absl::StrCat("required column ", kServersStateColumns[i], " is missing"));
    }
  }

  ServerStateRow row;
  for (size_t i = 2; i < lines->size(); ++i) {
    const Line& line = (*lines)[i];
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line.text), "#")) continue;
    std::vector<absl::string_view> values = internal::SplitWords(line.text);
    if (values.size() != names.size()) {
      return LineError(kWhat, line,
                       absl::StrCat("expected ", names.size(), " fields, got ", values.size()));
    }
    row = ServerStateRow{};
    if (keep_columns) row.columns.reserve(values.size());
    for (size_t c = 0; c < values.size(); ++c) {
      if (keep_columns) row.columns.try_emplace(names[c], values[c]);
      if (standard[c] == kExtraColumn) continue;
      absl::Status status = SetField(line, names[c], kFields[standard[c]], values[c], &row);
      if (!status.ok()) return status;
    }
    on_row(&row);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<ServerStateRow>> ParseServersState(absl::string_view reply) {
  std::vector<ServerStateRow> rows;
  absl::Status status =
      WalkServersState(reply, /*keep_columns=*/true,
                       [&rows](ServerStateRow* row) { rows.push_back(std::move(*row)); });
  if (!status.ok()) return status;
  return rows;
}

absl::Status ForEachServerState(absl::string_view reply,
                                const std::function<void(const ServerStateRow&)>& on_row) {
  return WalkServersState(reply, /*keep_columns=*/false,
                          [&on_row](ServerStateRow* row) { on_row(*row); });
}

std::string FormatServersStateFile(const std::vector<ServerStateRow>& rows) {
  std::string out = absl::StrCat("1\n# ", absl::StrJoin(kServersStateColumns, " "), "\n");
  for (const ServerStateRow& row : rows) {
    for (size_t i = 0; i < kServersStateColumnCount; ++i) {
      if (i > 0) out.push_back(' ');
      absl::StrAppend(&out, FieldText(kFields[i], row));
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace hawk::parse

#include "agent/parse/show_sess.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/types/optional.h"
#include "agent/parse/text.h"

namespace hawk::parse {
namespace {

constexpr absl::string_view kWhat = "show sess";

std::string Lookup(const SessionRow& row, absl::string_view key, absl::string_view none) {
  auto it = row.fields.find(key);
  if (it == row.fields.end() || it->second == none) return "";
  return it->second;
}

}  // namespace

absl::StatusOr<std::vector<SessionRow>> ParseShowSess(absl::string_view reply) {
  absl::StatusOr<std::vector<internal::Line>> lines = internal::SplitReplyLines(kWhat, reply);
  if (!lines.ok()) return lines.status();
  std::vector<SessionRow> rows;
  rows.reserve(lines->size());
  for (const internal::Line& line : *lines) {
    std::vector<absl::string_view> words = internal::SplitWords(line.text);
    absl::string_view id = words.empty() ? absl::string_view() : words[0];
    if (!absl::StartsWith(line.text, "0x") || !absl::ConsumeSuffix(&id, ":") ||
        !internal::IsPointer(id)) {
      return internal::LineError(kWhat, line, "expected a stream line starting with 0x…:");
    }
    SessionRow row;
    row.id = std::string(id);
    for (size_t i = 1; i < words.size(); ++i) {
      absl::string_view word = words[i];
      size_t split = word.find_first_of("=[");
      if (split == absl::string_view::npos) {
        row.fields.try_emplace(word, "");
      } else if (word[split] == '=') {
        row.fields.try_emplace(word.substr(0, split), word.substr(split + 1));
      } else {
        row.fields.try_emplace(word.substr(0, split), word.substr(split));
      }
    }
    auto fe = row.fields.find("fe");
    if (fe == row.fields.end()) return internal::LineError(kWhat, line, "expected fe=");
    row.frontend = fe->second;
    row.proto = Lookup(row, "proto", "");
    row.source = Lookup(row, "src", "");
    row.backend = Lookup(row, "be", "<NONE>");
    row.server = Lookup(row, "srv", "<none>");
    auto age = row.fields.find("age");
    if (age != row.fields.end()) {
      absl::optional<int64_t> seconds = internal::ParseDuration(age->second);
      if (seconds.has_value()) row.age_seconds = *seconds;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace hawk::parse

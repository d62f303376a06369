#include "agent/plan/table_file.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace hawk::plan {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool HasLineBreak(absl::string_view text) {
  return text.find_first_of(absl::string_view("\r\n\0", 3)) != absl::string_view::npos;
}

// Why `key` → `value` cannot be one line of the file; empty when it can.
absl::string_view Unrepresentable(bool acl, absl::string_view key, absl::string_view value) {
  if (key.empty()) return "it is empty";
  if (HasLineBreak(key) || HasLineBreak(value)) return "it holds a line break or a NUL byte";
  if (key.front() == '#') return "a line starting with '#' is a comment";
  if (IsBlank(key.front())) return "leading blanks are skipped";
  if (acl) return {};
  if (key.find_first_of(" \t") != absl::string_view::npos) return "the key ends at a blank";
  if (!value.empty() && (IsBlank(value.front()) || IsBlank(value.back()))) {
    return "blanks around the value are trimmed";
  }
  return {};
}

}  // namespace

absl::StatusOr<std::string> RenderTableFile(bool acl, const model::StringTable& table) {
  std::string file;
  auto sorted = table.Sorted();
  size_t bytes = 0;
  for (const auto& [key, value] : sorted) bytes += key.size() + value.size() + 2;
  file.reserve(bytes);
  for (const auto& [key, value] : sorted) {
    if (absl::string_view why = Unrepresentable(acl, key, value); !why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(acl ? "pattern \"" : "key \"",
                                                     absl::CEscape(key), "\" cannot be written to ",
                                                     acl ? "an ACL" : "a map", " file: ", why));
    }
    // An empty map value is a line holding only the key.
    absl::StrAppend(&file, key, acl || value.empty() ? "" : " ", acl ? "" : value, "\n");
  }
  return file;
}

}  // namespace hawk::plan

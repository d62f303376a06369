#include "agent/http/request.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace hawk::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string DecodeQueryComponent(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
               HexValue(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void SplitTarget(absl::string_view target, std::string* path, std::string* query) {
  absl::string_view rest = target;
  size_t hash = rest.find('#');
  if (hash != absl::string_view::npos) rest = rest.substr(0, hash);
  for (absl::string_view scheme : {"http://", "https://"}) {
    if (absl::StartsWithIgnoreCase(rest, scheme)) {
      rest.remove_prefix(scheme.size());
      size_t slash = rest.find_first_of("/?");
      rest = slash == absl::string_view::npos ? absl::string_view() : rest.substr(slash);
      break;
    }
  }
  size_t question = rest.find('?');
  absl::string_view path_part = rest.substr(0, question);
  if (path_part.empty()) path_part = "/";
  path->assign(path_part.data(), path_part.size());
  if (question == absl::string_view::npos) {
    query->clear();
  } else {
    absl::string_view query_part = rest.substr(question + 1);
    query->assign(query_part.data(), query_part.size());
  }
}

absl::optional<absl::string_view> Request::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return absl::string_view(value);
  }
  return absl::nullopt;
}

absl::optional<std::string> Request::QueryParam(absl::string_view name) const {
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    size_t equals = pair.find('=');
    absl::string_view key = pair.substr(0, equals);
    if (DecodeQueryComponent(key) != name) continue;
    if (equals == absl::string_view::npos) return std::string();
    return DecodeQueryComponent(pair.substr(equals + 1));
  }
  return absl::nullopt;
}

}  // namespace hawk::http

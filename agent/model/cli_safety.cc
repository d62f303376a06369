#include "agent/model/cli_safety.h"

#include <arpa/inet.h>

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agent/base/status_field.h"
#include "agent/base/status_macros.h"
#include "agent/model/json_path.h"

namespace hawk::model {
namespace {
using json::DescribeByte;
using json::Quote;

// The first byte of `s` that `allowed` rejects, or npos.
template <typename Pred>
size_t FindDisallowed(absl::string_view s, Pred allowed) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (!allowed(static_cast<unsigned char>(s[i]))) return i;
  }
  return absl::string_view::npos;
}

std::string BadByte(absl::string_view s, size_t i) {
  return absl::StrCat("byte ", DescribeByte(static_cast<unsigned char>(s[i])), " at offset ", i);
}

absl::Status CheckLength(absl::string_view s, const json::Path& path, size_t max) {
  if (s.empty()) return json::Error(path, "must not be empty");
  if (s.size() > max) {
    return json::Error(path, absl::StrCat("must be at most ", max, " bytes, got ", s.size()));
  }
  return absl::OkStatus();
}

bool IsIdentifierByte(unsigned char c) {
  return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == ':' || c == '-';
}

bool IsPrintableNoSpace(unsigned char c) { return c > 0x20 && c < 0x7F; }

bool IsFilePathByte(unsigned char c) {
  return IsPrintableNoSpace(c) && c != ';' && c != '\\' && c != '#' && c != '<' && c != '"' &&
         c != '\'';
}

// Why `s` is not an RFC 1123 hostname, or "" if it is one.
std::string HostnameProblem(absl::string_view s) {
  size_t bad = FindDisallowed(
      s, [](unsigned char c) { return absl::ascii_isalnum(c) || c == '-' || c == '.'; });
  if (bad != absl::string_view::npos) {
    return absl::StrCat(BadByte(s, bad), " is not allowed in a hostname");
  }
  if (s.size() > kMaxHostnameBytes) {
    return absl::StrCat("a hostname has at most ", kMaxHostnameBytes, " bytes");
  }
  size_t start = 0;
  while (true) {
    size_t end = s.find('.', start);
    if (end == absl::string_view::npos) end = s.size();
    absl::string_view label = s.substr(start, end - start);
    if (label.empty()) return "a hostname has no empty labels";
    if (label.size() > 63) return "a hostname label has at most 63 bytes";
    if (label.front() == '-' || label.back() == '-') {
      return "a hostname label neither starts nor ends with '-'";
    }
    if (end == s.size()) break;
    start = end + 1;
  }
  if (std::none_of(s.begin(), s.end(),
                   [](char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); })) {
    return "not a valid IPv4 literal, and a hostname needs a letter";
  }
  return "";
}

}  // namespace

// Backend and server names: HAProxy identifiers, which also keeps them one CLI word that cannot
// start a prefix (`@`) or a reference (`#`).
absl::Status CheckIdentifier(absl::string_view s, const json::Path& path) {
  RETURN_IF_ERROR(CheckLength(s, path, kMaxIdentifierBytes));
  size_t bad = FindDisallowed(s, IsIdentifierByte);
  if (bad != absl::string_view::npos) {
    return json::Error(path, absl::StrCat("must contain only [A-Za-z0-9_.:-], got ", Quote(s), " (",
                                          BadByte(s, bad), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckVersion(absl::string_view s, const json::Path& path) {
  RETURN_IF_ERROR(CheckLength(s, path, kMaxVersionBytes));
  size_t bad = FindDisallowed(s, IsPrintableNoSpace);
  if (bad != absl::string_view::npos) {
    return json::Error(path, absl::StrCat("must be printable ASCII without spaces, got ", Quote(s),
                                          " (", BadByte(s, bad), ")"));
  }
  return absl::OkStatus();
}

// Map and ACL names go unescaped into CLI lines, so only bytes with no meaning to the tokenizer
// ('<': a name ending in "<<" would open HAProxy's payload mode).
absl::Status CheckFilePath(absl::string_view s, const json::Path& path) {
  RETURN_IF_ERROR(CheckLength(s, path, kMaxFilePathBytes));
  if (s[0] != '/') {
    return json::Error(
        path, absl::StrCat("must be an absolute file path starting with '/', got ", Quote(s)));
  }
  size_t bad = FindDisallowed(s, IsFilePathByte);
  if (bad != absl::string_view::npos) {
    return json::Error(
        path, absl::StrCat("must be a file path of printable ASCII without spaces, ';', '\\', '#', "
                           "'<' or quotes, got ",
                           Quote(s), " (", BadByte(s, bad), ")"));
  }
  return absl::OkStatus();
}

// Map keys and values, ACL patterns: anything the command builder can escape.
absl::Status CheckEntryText(absl::string_view s, const json::Path& path) {
  RETURN_IF_ERROR(CheckLength(s, path, kMaxEntryBytes));
  size_t bad = FindDisallowed(s, [](unsigned char c) { return c != '\n' && c != '\r' && c != 0; });
  if (bad != absl::string_view::npos) {
    return json::Error(
        path, absl::StrCat("must not contain LF, CR or NUL, which cannot be escaped on a CLI "
                           "line, got ",
                           Quote(s), " (", BadByte(s, bad), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckAddress(absl::string_view s, const json::Path& path) {
  if (s.empty()) return json::Error(path, "must not be empty");
  if (IsIpLiteral(s)) return absl::OkStatus();
  std::string problem;
  if (s.find(':') != absl::string_view::npos) {
    problem = "not a valid IPv6 literal (write it without brackets, zone id or port)";
  } else {
    problem = HostnameProblem(s);
    if (problem.empty()) return absl::OkStatus();
  }
  return json::Error(path, absl::StrCat("must be an IPv4 or IPv6 literal or a hostname, got ",
                                        Quote(s), ": ", problem));
}

bool IsIpLiteral(absl::string_view address) {
  // inet_pton reads a C string: an embedded NUL would hide the bytes after it.
  char buffer[INET6_ADDRSTRLEN];
  if (address.empty() || address.size() >= sizeof(buffer) ||
      address.find('\0') != absl::string_view::npos) {
    return false;
  }
  std::copy(address.begin(), address.end(), buffer);
  buffer[address.size()] = '\0';
  unsigned char binary[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, buffer, binary) == 1 || inet_pton(AF_INET6, buffer, binary) == 1;
}

}  // namespace hawk::model

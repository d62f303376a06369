#pragma once

// What a client value must look like before it may go into a master-CLI line. Every check fails
// with an InvalidArgument naming the field (json::Error) and the offending byte. Together
// they guarantee that nothing a client sends can end a command or start another one:
//   - LF, CR and NUL are refused everywhere (no escape can carry them on a CLI line);
//   - identifiers (backend and server names) are HAProxy names, [A-Za-z0-9_.:-]: one CLI word
//     that cannot start a prefix (`@`) or a reference (`#`);
//   - map and ACL names are absolute file paths without spaces, ';', '\', '#', '<' or quotes,
//     so they go unescaped into lines, never start with '@' and never open a payload ("<<");
//   - keys, values and patterns may hold spaces, tabs, ';', '<' and backslashes: the command
//     builder escapes them (cli::EscapeWord).

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/model/json_path.h"

namespace hawk::model {

inline constexpr size_t kMaxVersionBytes = 128;
inline constexpr size_t kMaxIdentifierBytes = 127;  // backend and server names
inline constexpr size_t kMaxHostnameBytes = 253;
inline constexpr size_t kMaxFilePathBytes = 1024;  // map and ACL names
inline constexpr size_t kMaxEntryBytes = 4096;     // a map key, a map value, an ACL pattern

absl::Status CheckIdentifier(absl::string_view s, const json::Path& path);
// Printable ASCII without spaces.
absl::Status CheckVersion(absl::string_view s, const json::Path& path);
absl::Status CheckFilePath(absl::string_view s, const json::Path& path);
absl::Status CheckEntryText(absl::string_view s, const json::Path& path);
// An IP literal or an RFC 1123 hostname.
absl::Status CheckAddress(absl::string_view s, const json::Path& path);

// An IPv4 (dotted quad) or IPv6 literal (no brackets, no zone id): `set server … addr`. Any other
// valid address is a hostname (`set server … fqdn`).
bool IsIpLiteral(absl::string_view address);

}  // namespace hawk::model

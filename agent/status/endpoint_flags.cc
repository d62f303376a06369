#include "agent/status/endpoint_flags.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "agent/auth/bearer_token.h"
#include "agent/base/address.h"

namespace hawk::status {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat("--token-file ", path, ": cannot read it: ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  return auth::ParseTokenFile(text.str(), path);
}

absl::StatusOr<Endpoint> MakeEndpoint(const std::string& address_text,
                                      const std::string& token_file) {
  absl::StatusOr<base::Address> address = base::ParseAddress(address_text, "ADDRESS");
  if (!address.ok()) return address.status();
  Endpoint endpoint{*address, ""};
  if (!token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(token_file);
    if (!token.ok()) return token.status();
    endpoint.bearer_token = *std::move(token);
  }
  return endpoint;
}

}  // namespace hawk::status

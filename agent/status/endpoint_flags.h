#pragma once

// What `hawk status`, `hawk apply` and `hawk get` share: where hawk is (its --listen address)
// and its bearer token, read from the same file hawk reads (--token-file).

#include <string>

#include "absl/status/statusor.h"
#include "agent/status/status_client.h"

namespace hawk::status {

inline constexpr const char* kDefaultAddress = "unix:/run/hawk/hawk.sock";

// The token as hawk reads it from `path` (agent/auth).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// `address_text` (unix:PATH, a path, tcp:HOST:PORT) and the token of `token_file` ("" for none).
absl::StatusOr<Endpoint> MakeEndpoint(const std::string& address_text,
                                      const std::string& token_file);

}  // namespace hawk::status

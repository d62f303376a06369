#pragma once

// The body of POST /v1/reload (hawk.v1.ReloadRequest in the proto3 JSON mapping):
// `{"config": "<full haproxy.cfg text>"}`, or an empty body (or `{}`) to reload the current file.

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::model {

inline constexpr size_t kMaxConfigBytes = 16 * 1024 * 1024;

// nullopt: reload the current configuration file. InvalidArgument (with the field where there is
// one) for a body that is not a JSON object, an unknown or duplicate field, a `config` that is not
// a string, is empty, holds a NUL byte or is larger than kMaxConfigBytes.
absl::StatusOr<absl::optional<std::string>> ParseReloadRequest(absl::string_view body);

}  // namespace hawk::model

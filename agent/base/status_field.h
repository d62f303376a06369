#pragma once

// Attaches the request field a Status is about (a JSON path such as
// `backends[0].servers[1].port`) as a Status payload, so that the HTTP layer can report it in
// `{"error":{…,"field":"…"}}` without the module that found the error knowing about HTTP.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"

namespace hawk::base {

inline constexpr absl::string_view kFieldPayloadUrl = "hawk.field";

inline absl::Status WithField(absl::Status status, absl::string_view field) {
  status.SetPayload(kFieldPayloadUrl, absl::Cord(field));
  return status;
}

// InvalidArgument naming the field: `field: message`.
inline absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return WithField(absl::InvalidArgumentError(std::string(field) + ": " + std::string(message)),
                   field);
}

inline std::string FieldOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kFieldPayloadUrl);
  return payload ? std::string(*payload) : std::string();
}

// The generation hawk holds, attached to the Aborted status of an out-of-order push so that the
// answer carries it (`currentGeneration`) and a controller that lost track recovers without a
// GET. An empty payload: hawk holds no generation.
inline constexpr absl::string_view kCurrentGenerationPayloadUrl = "hawk.current_generation";

inline absl::Status WithCurrentGeneration(absl::Status status, absl::string_view generation) {
  status.SetPayload(kCurrentGenerationPayloadUrl, absl::Cord(generation));
  return status;
}

inline absl::optional<std::string> CurrentGenerationOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kCurrentGenerationPayloadUrl);
  if (!payload) return absl::nullopt;
  return std::string(*payload);
}

}  // namespace hawk::base

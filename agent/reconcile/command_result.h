#pragma once

// The reply to one command, as the reconciler's pure pieces see it.

#include <string>

#include "absl/status/statusor.h"

namespace hawk::reconcile {

// A command's reply or error: the same type as cli::CommandResult, named here without the
// client's header (which brings libuv), so that this file stays pure.
using CommandResult = absl::StatusOr<std::string>;

}  // namespace hawk::reconcile

#pragma once

// What json_read.cc (the typed reads) and json_validate.cc (the whole-document check run when a
// read fails) share. Not for other modules.

#include <cstddef>

#include "simdjson.h"

namespace hawk::model::json::internal {

// The DOM's limit (simdjson's default max_depth), which On-Demand does not check: a container
// deeper than this (the root's depth is 1) makes a document invalid.
inline constexpr size_t kMaxDepth = simdjson::DEFAULT_MAX_DEPTH;

inline bool AtEnd(simdjson::ondemand::document& doc) {
  return doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

inline bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace hawk::model::json::internal

#pragma once

// abseil 20220623 (Debian 12) ships neither RETURN_IF_ERROR nor ASSIGN_OR_RETURN.

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HAWK_CONCAT_INNER(a, b) a##b
#define HAWK_CONCAT(a, b) HAWK_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::absl::Status hawk_status_ = (expr);        \
    if (!hawk_status_.ok()) return hawk_status_; \
  } while (false)

#define ASSIGN_OR_RETURN(lhs, expr) \
  HAWK_ASSIGN_OR_RETURN_IMPL(HAWK_CONCAT(hawk_statusor_, __LINE__), lhs, expr)

#define HAWK_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).value()

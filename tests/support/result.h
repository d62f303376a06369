#pragma once

// Result: the outcome of a test-support operation that can fail, with a message meant for a test
// failure report (it often carries a log tail). Kept free of absl on purpose: the support library
// is an oracle independent of hawk's own code.

#include <string>
#include <utility>

namespace hawk::testing {

struct Result {
  bool ok = true;
  std::string error;  // empty when ok

  static Result Ok() { return Result{}; }
  static Result Error(std::string message) { return Result{false, std::move(message)}; }
  explicit operator bool() const { return ok; }
};

}  // namespace hawk::testing

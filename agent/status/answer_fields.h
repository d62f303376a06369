#pragma once

// Reading the members of hawk's JSON answers for the person's screens (status_text, apply_text):
// a member that is missing or of another type reads as empty, 0 or false, so that a screen shows
// what an older or newer hawk answered instead of failing on it.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "simdjson.h"

namespace hawk::status {

inline std::string Str(simdjson::dom::element e, const char* key) {
  std::string_view value;
  if (e[key].get(value) != simdjson::SUCCESS) return "";
  return std::string(value);
}

// An integer, as a JSON number or (proto3 JSON for int64) a string.
inline int64_t Int(simdjson::dom::element e, const char* key) {
  int64_t number = 0;
  if (e[key].get(number) == simdjson::SUCCESS) return number;
  std::string_view text;
  if (e[key].get(text) == simdjson::SUCCESS &&
      absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &number))
    return number;
  return 0;
}

inline bool Bool(simdjson::dom::element e, const char* key) {
  bool value = false;
  return e[key].get(value) == simdjson::SUCCESS && value;
}

}  // namespace hawk::status

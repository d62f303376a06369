#pragma once

// Seeded generators of hostile-but-valid map keys, values and ACL patterns: what
// model::ParseDesiredState accepts (non-empty, at most 4096 bytes, no LF/CR/NUL) with the bytes
// that matter to the CLI (space, tab, ';', '\', '#', '<', '@') over-represented.

#include <cstddef>
#include <random>
#include <string>

namespace hawk::plan::testing {

inline size_t Uniform(std::mt19937& rng, size_t lo, size_t hi) {
  return std::uniform_int_distribution<size_t>(lo, hi)(rng);
}

inline bool OneIn(std::mt19937& rng, size_t n) { return Uniform(rng, 1, n) == 1; }

// 1..max bytes; with probability 1/`long_odds` up to 4096.
inline std::string HostileText(std::mt19937& rng, size_t max, size_t long_odds = 50) {
  static constexpr char kAlphabet[] = " \t;\\#<@abcxyz019.-_/:=\"'\x7f\xc3\xa9";
  size_t length = Uniform(rng, 1, OneIn(rng, long_odds) ? 4096 : max);
  std::string text;
  text.reserve(length);
  for (size_t i = 0; i < length; ++i) {
    if (OneIn(rng, 3)) {
      text.push_back(static_cast<char>('a' + Uniform(rng, 0, 25)));
    } else {
      text.push_back(kAlphabet[Uniform(rng, 0, sizeof(kAlphabet) - 2)]);
    }
  }
  // Now and then the forms HAProxy treats specially, whole.
  switch (Uniform(rng, 0, 12)) {
    case 0:
      return "<<";
    case 1:
      return "#comment";
    case 2:
      return " leading";
    case 3:
      return "trailing\t";
    case 4:
      return "\\";
    case 5:
      return "a<<";
    case 6:
      return "<<END";
    default:
      return text;
  }
}

}  // namespace hawk::plan::testing

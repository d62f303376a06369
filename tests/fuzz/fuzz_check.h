#pragma once

// A failed property in a fuzz target: print what broke and abort, so that libFuzzer saves the
// input and the replay test fails.

#include <cstdio>
#include <cstdlib>

#define HAWK_FUZZ_CHECK(condition, what)                                              \
  do {                                                                                \
    if (!(condition)) {                                                               \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, what); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (false)

#pragma once

// HAWK_CHECK(condition): an invariant of hawk's own state machines (not of anything a client or
// HAProxy sends). When it does not hold, hawk's view of a worker is corrupt and no answer it gives
// could be trusted: log where, and abort, in every build (Node's CHECK does the same for its
// handle states).

#include <cstdio>
#include <cstdlib>

#define HAWK_CHECK(condition)                                                                \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)

#pragma once

namespace hawk::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read it back, close).
// Another process may take it before the caller binds it; tests accept that small race.
// Returns -1 on failure.
int FreeTcpPort();

}  // namespace hawk::testing

#pragma once

// `hawk status [--json] [--watch] [ADDRESS]`: a person's view of hawk's per-worker report.
// ADDRESS is hawk's --listen (unix:PATH, a bare path, or tcp:HOST:PORT; default
// unix:/run/hawk/hawk.sock). --watch redraws on every change (GET /v1/watch); --json prints the
// report as hawk sends it. Colours only on a terminal. Exit 0; 1 when hawk cannot be reached or
// answers an error (one line on stderr); 2 for a usage error.

namespace hawk::status {

int StatusMain(int argc, char** argv);  // argv[0] is "status"

}  // namespace hawk::status

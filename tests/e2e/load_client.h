#pragma once

// hawk_load_client's engine: keep-alive HTTP/1.1 load on libuv + llhttp, one thread, with the
// retry rule of real clients (Go's http.Transport, browsers): a request on a reused keep-alive
// connection that the peer closes before any byte of the response is resent once on a new
// connection. See load_client_main.cc for the flags and the output.

#include <cstdint>
#include <string>
#include <vector>

namespace hawk::e2e {

struct LoadClientOptions {
  std::string target;  // HOST:PORT, numeric IPv4; also the Host header
  std::string path = "/";
  int connections = 16;               // load connections, each one request at a time, back to back
  uint64_t prober_interval_ms = 200;  // one extra connection, one request per interval; 0: none
  uint64_t duration_ms = 0;           // 0: until SIGTERM or SIGINT
  std::string events_path;            // JSON lines of failures and retries; "": none
  std::vector<std::string> headers;   // extra request headers, "Name: value"
  uint64_t request_timeout_ms = 5000;
  // Pause of a load connection after a transport failure, so that a refused port does not turn
  // into a busy loop of connect attempts.
  uint64_t failure_backoff_ms = 10;
  // Load clients beside `connections` that send each request on a new connection, with
  // `Connection: close` (one-shot clients: scripts, health checkers, HTTP/1.0): each request is
  // accepted by whichever worker listens at that moment, so none stays on a leaving worker.
  int one_shot_connections = 0;
};

// Runs the load until the duration elapses or SIGTERM/SIGINT, printing a one-line JSON summary
// on stdout then (and on SIGUSR1). Returns the process exit code: 0, or 1 on a setup error (the
// reason on stderr) or if libuv's loop did not close cleanly.
int RunLoadClient(const LoadClientOptions& options);

}  // namespace hawk::e2e

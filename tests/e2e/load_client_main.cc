// hawk_load_client: keep-alive HTTP/1.1 load that behaves like real clients, to catch requests
// lost while HAProxy reloads or a backend stops.
//
//   hawk_load_client --target 127.0.0.1:PORT [--path /] [--connections 16]
//                    [--prober-interval-ms 200] [--duration-ms 0] [--events FILE]
//                    [--header 'Name: value']... [--request-timeout-ms 5000]
//                    [--failure-backoff-ms 10] [--one-shot-connections 0]
//
// Each of the C connections sends `GET PATH HTTP/1.1` and waits for the whole response before
// the next one (no pipelining); the prober sends one request per interval on its own keep-alive
// connection. A request on a reused connection that the peer closes before any response byte is
// resent once on a new connection (counted in "retries", not a failure). Failures: non-2xx, and
// transport errors (refused or reset connects, EOF or reset mid-response or before any byte on a
// new connection, a resent request failing again, --request-timeout-ms).
// --one-shot-connections K: K more load clients, each sending every request on a new connection
// with `Connection: close` (nothing of theirs is ever resent: no connection is reused).
//
// Runs for --duration-ms (0: until SIGTERM/SIGINT), then prints one line of JSON on stdout:
//   {"requests":…,"ok":…,"failures":…,"failures_by_kind":{"connect_refused":…,"eof":…,
//    "reset":…,"status_503":…,"timeout":…},"retries":…,"abandoned":…,"reconnects":…,
//    "duration_ms":…,"rps":…,"latency_ms":{"p50":…,"p90":…,"p99":…,"max":…},
//    "by_pid":{"<X-Pid>":…},"prober":{"requests":…,"failures":…}}
// "requests", "failures" and "by_pid" include the prober's; latency runs from the first send to
// the complete response (a retry included). SIGUSR1 prints the same line for the
// run so far and goes on (send it only once the handler is in place, SIGUSR1 in SigCgt of
// /proc/PID/status: until then it would kill the process). --events appends one JSON line
// per failure and per retry: {"t_ms":<CLOCK_MONOTONIC ms>,"kind":"failure"|"retry","conn":N,
// "prober":bool,"status":N,"error":"…","pid":<X-Pid of the response, or of the connection's last
// one; 0 if none>}.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/e2e/load_client.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: hawk_load_client --target IPV4:PORT [--path /] [--connections 16]\n"
               "         [--prober-interval-ms 200] [--duration-ms 0] [--events FILE]\n"
               "         [--header 'Name: value']... [--request-timeout-ms 5000]\n"
               "         [--failure-backoff-ms 10] [--one-shot-connections 0]\n");
  return 2;
}

bool ParseCount(const char* text, uint64_t* value) {
  char* end = nullptr;
  if (text[0] < '0' || text[0] > '9') return false;
  *value = std::strtoull(text, &end, 10);
  return *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  hawk::e2e::LoadClientOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return Usage();
    const char* value = argv[++i];
    uint64_t number = 0;
    if (arg == "--target") {
      options.target = value;
    } else if (arg == "--path") {
      options.path = value;
    } else if (arg == "--events") {
      options.events_path = value;
    } else if (arg == "--header") {
      options.headers.emplace_back(value);
    } else if (!ParseCount(value, &number)) {
      return Usage();
    } else if (arg == "--connections" && number <= 100000) {
      options.connections = static_cast<int>(number);
    } else if (arg == "--prober-interval-ms") {
      options.prober_interval_ms = number;
    } else if (arg == "--duration-ms") {
      options.duration_ms = number;
    } else if (arg == "--request-timeout-ms" && number > 0) {
      options.request_timeout_ms = number;
    } else if (arg == "--one-shot-connections" && number <= 100000) {
      options.one_shot_connections = static_cast<int>(number);
    } else if (arg == "--failure-backoff-ms") {
      options.failure_backoff_ms = number;
    } else {
      return Usage();
    }
  }
  if (options.target.empty()) return Usage();
  return hawk::e2e::RunLoadClient(options);
}

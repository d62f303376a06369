#pragma once

// `hawk apply [--dry-run] [--patch] [--json] [--timeout-ms N] [--token-file PATH]
// [--address ADDRESS] FILE|-`: sends a desired-state document (PUT /v1/state, or PATCH with
// --patch) to a running hawk and prints, per worker, whether it APPLIED it, what stayed stale and
// what HAProxy refused, in the style of `hawk status`. --dry-run asks `?dryRun=true`.
// Exit 0 when every worker APPLIED it; 3 when hawk kept it but a worker did not (yet) apply it
// (or none was reachable); 1 when hawk cannot be reached or refused the document (its error on
// stderr); 2 for a usage error.
//
// `hawk get state [--token-file PATH] [ADDRESS]`: prints the desired state hawk holds (GET
// /v1/state); exit 1 when it holds none or cannot be reached.

namespace hawk::status {

int ApplyMain(int argc, char** argv);  // argv[0] is "apply"
int GetMain(int argc, char** argv);    // argv[0] is "get"

}  // namespace hawk::status

#pragma once

// What journal.cc (records, group commit, load) and journal_compaction.cc (snapshots on the
// threadpool) share: the compaction's two structs and two error helpers. Not for other modules.

#include <uv.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/base/lifetime.h"
#include "agent/store/journal.h"

namespace hawk::store {

// The same error with `context: ` in front of its message.
inline absl::Status Prefixed(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

// Programmer errors only: a Journal used before Load is a bug in its caller.
[[noreturn]] inline void Fatal(absl::string_view message) {
  std::fprintf(stderr, "hawk::store::Journal: %.*s\n", static_cast<int>(message.size()),
               message.data());
  std::abort();
}

// A compaction from Compact() until its done runs.
struct Journal::Compaction {
  std::string snapshot;  // moved into the request when the work starts
  uint64_t seq = 0;
  std::function<void(absl::Status)> done;
  bool started = false;  // queued on the threadpool (else waiting for records up to seq)
};

// Owned by libuv's threadpool machinery from uv_queue_work until AfterCompactionWork, which
// frees it. CompactionWork (on a pool thread) reads and writes only the fields marked "work";
// `owner` and `journal` are for the loop thread alone.
struct Journal::CompactionRequest {
  uv_work_t req;
  base::AliveToken owner;  // expires with the Journal
  Journal* journal = nullptr;
  uint64_t seq = 0;
  size_t snapshot_bytes = 0;
  std::string what;                   // work: the operation, for errors
  std::string path;                   // work: snapshot-<seq>.json
  std::string snapshot;               // work: the bytes
  std::vector<std::string> obsolete;  // work: paths the snapshot covers, deleted once durable
  absl::Status status;                // work: the result
};

}  // namespace hawk::store

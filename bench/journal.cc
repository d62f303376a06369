// What persisting a change costs with the journal (store/journal.h), against today's cost of
// rewriting the whole state (WriteFileAtomically, as StateStore::Save does per push), measured in
// the same run on the same disk:
//   - one Append per loop iteration, waited for, for payloads of 200 B, 20 KB and 2 MB: time and
//     bytes written per append (one write and one fdatasync each);
//   - 100 Appends in one iteration: one batch, one fdatasync;
//   - compacting a 5 MB snapshot: the time Compact() blocks the loop and the time to its done;
//   - CRC-32C throughput, the checksum's share of a record.
//
//   build/default/bench/journal [dir] [rounds]
//
// `dir` (default: a fresh directory under $TMPDIR or /var/tmp) must be on the disk the numbers
// are meant for: on a tmpfs, fdatasync costs nothing.

#include "agent/store/journal.h"

#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/store/atomic_file.h"
#include "agent/store/crc32c.h"
#include "agent/uv/loop.h"
#include "bench/stats.h"

using hawk::bench::Median;
using hawk::bench::Ms;
using hawk::bench::PrintDistribution;
using hawk::store::Journal;
using hawk::store::JournalOptions;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "journal bench: %s\n", message.c_str());
  std::exit(1);
}

void Check(const absl::Status& status, const char* what) {
  if (!status.ok()) Die(absl::StrCat(what, ": ", status.ToString()));
}

// Runs the loop once at a time until `done()`.
void RunUntil(uv_loop_t* loop, const std::function<bool()>& done) {
  while (!done()) uv_run(loop, UV_RUN_ONCE);
}

std::unique_ptr<Journal> OpenFresh(uv_loop_t* loop, const std::string& dir) {
  std::filesystem::remove_all(dir);
  JournalOptions options;
  options.dir = dir;
  auto journal = Journal::Open(loop, options);
  Check(journal.status(), "open");
  Check((*journal)->Load().status(), "load");
  return *std::move(journal);
}

void SingleAppends(uv_loop_t* loop, const std::string& dir, size_t payload_bytes, int count) {
  std::unique_ptr<Journal> journal = OpenFresh(loop, dir);
  std::string payload(payload_bytes, 'p');
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    bool done = false;
    Clock::time_point start = Clock::now();
    Check(journal
              ->Append(payload,
                       [&](absl::Status status) {
                         Check(status, "append");
                         done = true;
                       })
              .status(),
          "append");
    RunUntil(loop, [&] { return done; });
    ms.push_back(Ms(Clock::now() - start));
  }
  const hawk::store::JournalStats& stats = journal->stats();
  std::string what = absl::StrCat("append ", payload_bytes, " B, one per iteration");
  PrintDistribution(what.c_str(), ms);
  std::printf("    %.0f bytes written and %.2f fdatasyncs per append\n",
              static_cast<double>(stats.bytes_written) / count,
              static_cast<double>(stats.fdatasyncs) / count);
}

void Batches(uv_loop_t* loop, const std::string& dir, size_t payload_bytes, int rounds) {
  constexpr int kBatch = 100;
  std::unique_ptr<Journal> journal = OpenFresh(loop, dir);
  std::string payload(payload_bytes, 'b');
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    int acked = 0;
    Clock::time_point start = Clock::now();
    for (int i = 0; i < kBatch; ++i) {
      Check(journal
                ->Append(payload,
                         [&](absl::Status status) {
                           Check(status, "append");
                           ++acked;
                         })
                .status(),
            "append");
    }
    RunUntil(loop, [&] { return acked == kBatch; });
    ms.push_back(Ms(Clock::now() - start));
  }
  const hawk::store::JournalStats& stats = journal->stats();
  std::string what = absl::StrCat(kBatch, " x ", payload_bytes, " B in one iteration (batch)");
  PrintDistribution(what.c_str(), ms);
  std::printf("    %.2f fdatasyncs per batch, %.1f us per record\n",
              static_cast<double>(stats.fdatasyncs) / rounds, 1000 * Median(ms) / kBatch);
}

void Compactions(uv_loop_t* loop, const std::string& dir, size_t snapshot_bytes, int rounds) {
  std::unique_ptr<Journal> journal = OpenFresh(loop, dir);
  std::string snapshot(snapshot_bytes, 's');
  std::vector<double> blocked;
  std::vector<double> total;
  for (int r = 0; r < rounds; ++r) {
    bool appended = false;
    Check(journal
              ->Append(std::string(200, 'r'),
                       [&](absl::Status status) {
                         Check(status, "append");
                         appended = true;
                       })
              .status(),
          "append");
    RunUntil(loop, [&] { return appended; });
    bool done = false;
    Clock::time_point start = Clock::now();
    journal->Compact(snapshot, journal->last_seq(), [&](absl::Status status) {
      Check(status, "compact");
      done = true;
    });
    blocked.push_back(Ms(Clock::now() - start));
    RunUntil(loop, [&] { return done; });
    total.push_back(Ms(Clock::now() - start));
  }
  std::string what =
      absl::StrCat("compact ", snapshot_bytes >> 20, " MB: Compact() blocks the loop");
  PrintDistribution(what.c_str(), blocked);
  what = absl::StrCat("compact ", snapshot_bytes >> 20, " MB: Compact() to its done");
  PrintDistribution(what.c_str(), total);
}

// The checksum's share of a record's cost.
void Crc32cThroughput() {
  std::string data(2 * 1000 * 1000, 'c');
  uint32_t sink = 0;
  std::vector<double> ms;
  for (int r = 0; r < 50; ++r) {
    Clock::time_point start = Clock::now();
    sink ^= hawk::store::Crc32c(data);
    ms.push_back(Ms(Clock::now() - start));
  }
  double median = Median(ms);
  std::printf("%-52s median=%.2f ms  (%.0f MB/s)%s\n", "crc32c over 2 MB", median,
              2.0 / (median / 1000), sink == 42 ? " " : "");
}

// Today: every push rewrites the whole state durably (temporary, fsync, rename, fsync dir).
void WholeStateRewrites(const std::string& dir, size_t state_bytes, int rounds) {
  std::filesystem::create_directories(dir);
  std::string state(state_bytes, 'w');
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    Clock::time_point start = Clock::now();
    Check(hawk::store::WriteFileAtomically(dir + "/desired-state.json", state, 0600, "rewrite"),
          "rewrite");
    ms.push_back(Ms(Clock::now() - start));
  }
  std::string what = absl::StrCat("baseline: rewrite a ", state_bytes / 1024, " KB state");
  PrintDistribution(what.c_str(), ms);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  if (argc > 1) {
    dir = argv[1];
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp ? tmp : "/var/tmp", "/hawk-journal-bench-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) Die("mkdtemp " + pattern);
    dir = pattern;
  }
  int rounds = 100;
  if (argc > 2 && (!absl::SimpleAtoi(argv[2], &rounds) || rounds < 1)) Die("bad rounds");
  std::filesystem::create_directories(dir);
  struct statfs fs;
  if (::statfs(dir.c_str(), &fs) == 0) {
    std::printf("dir %s (filesystem magic 0x%lx%s)\n", dir.c_str(),
                static_cast<unsigned long>(fs.f_type),
                fs.f_type == 0x01021994 ? ", tmpfs: fdatasync is free here" : "");
  }

  Crc32cThroughput();
  hawk::uv::Loop loop;
  SingleAppends(loop.get(), dir + "/a200", 200, rounds);
  SingleAppends(loop.get(), dir + "/a20k", 20 * 1000, rounds);
  SingleAppends(loop.get(), dir + "/a2m", 2 * 1000 * 1000, std::max(10, rounds / 5));
  Batches(loop.get(), dir + "/b200", 200, std::max(10, rounds / 5));
  Batches(loop.get(), dir + "/b20k", 20 * 1000, std::max(10, rounds / 5));
  Compactions(loop.get(), dir + "/c5m", 5 << 20, std::max(10, rounds / 10));
  WholeStateRewrites(dir + "/w", 20 * 1024, std::max(10, rounds / 5));
  WholeStateRewrites(dir + "/w", 5 << 20, std::max(10, rounds / 10));
  Check(loop.RunDryAndClose(), "close the loop");
  if (argc <= 1) std::filesystem::remove_all(dir);
  return 0;
}

// The child of journal_crash_test: appends records of varied sizes to the journal in <dir> as
// fast as fdatasync allows, compacting whenever the journal asks, until it is killed. It prints
//   A <seq>   after the record's done(OK): the record is acknowledged
//   C <seq>   when it starts a compaction at <seq>
//   D <seq>   after that compaction's done(OK)
// one line per write(2), so that a SIGKILL never leaves half a line the test could misread.
//
//   journal_crash_main <dir> <seed> <compact_after_bytes> <snapshot_bytes>

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/store/journal.h"
#include "agent/uv/loop.h"
#include "agent/uv/timer.h"
#include "tests/unit/store/journal_crash_payload.h"

namespace {

void Say(const std::string& line) {
  std::string out = line + "\n";
  if (::write(1, out.data(), out.size()) < 0) std::_Exit(3);
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "journal_crash_main: %s\n", message.c_str());
  std::_Exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
  uint64_t seed = 0;
  size_t compact_after = 0;
  size_t snapshot_bytes = 0;
  if (argc != 5 || !absl::SimpleAtoi(argv[2], &seed) ||
      !absl::SimpleAtoi(argv[3], &compact_after) || !absl::SimpleAtoi(argv[4], &snapshot_bytes)) {
    Die("usage: journal_crash_main <dir> <seed> <compact_after_bytes> <snapshot_bytes>");
  }
  hawk::uv::Loop loop;
  hawk::store::JournalOptions options;
  options.dir = argv[1];
  options.compact_after_bytes = compact_after;
  auto journal = hawk::store::Journal::Open(loop.get(), options);
  if (!journal.ok()) Die(std::string(journal.status().message()));
  auto loaded = (*journal)->Load();
  if (!loaded.ok()) Die(std::string(loaded.status().message()));
  hawk::store::Journal& j = **journal;

  std::mt19937_64 rng(seed);
  hawk::uv::Timer tick(loop.get());
  hawk::uv::Timer deadline(loop.get());
  // Several appends per tick make batches of several records; a bounded backlog keeps memory
  // flat when the disk is slow.
  tick.StartRepeating(absl::ZeroDuration(), absl::Milliseconds(1), [&] {
    int count = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < count && j.last_seq() - j.durable_seq() < 64; ++i) {
      uint64_t next = j.last_seq() + 1;
      absl::StatusOr<uint64_t> seq =
          j.Append(hawk::store::crash::Payload(next), [next](absl::Status status) {
            if (!status.ok()) Die(absl::StrCat("append ", next, ": ", status.message()));
            Say(absl::StrCat("A ", next));
          });
      if (!seq.ok()) Die(absl::StrCat("append ", next, ": ", seq.status().message()));
      if (*seq != next) Die(absl::StrCat("Append returned ", *seq, ", expected ", next));
    }
    if (j.WantsCompaction()) {
      uint64_t at = j.last_seq();
      Say(absl::StrCat("C ", at));
      j.Compact(hawk::store::crash::SnapshotPayload(at, snapshot_bytes), at,
                [at](absl::Status status) {
                  if (!status.ok()) Die(absl::StrCat("compact ", at, ": ", status.message()));
                  Say(absl::StrCat("D ", at));
                });
    }
  });
  deadline.Start(absl::Milliseconds(60000),
                 [&] { std::_Exit(0); });  // the test kills it long before
  loop.Run();
  return 1;
}

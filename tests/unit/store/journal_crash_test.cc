// SIGKILLs journal_crash_main at random moments, mid-append and mid-compaction, reopening the
// same directory every round, and checks what survives: Load succeeds, every acknowledged record
// is there with its exact bytes (or inside the snapshot), the seqs have no gap, and a torn tail
// is reported once and then gone.
//
// A SIGKILL loses no page cache, so this tests the journal's ordering and repair logic, not the
// disk's durability under power loss. It also seldom lands inside a write to the page cache (the
// multi-MiB records make it possible), so every third round appends part of the next record
// after the kill as well: the state such a kill leaves.
//
// HAWK_CRASH_SEED=<n> replays a run (the seed is printed).

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/store/journal.h"
#include "agent/store/journal_format.h"
#include "agent/uv/loop.h"
#include "gtest/gtest.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/store/journal_crash_payload.h"

namespace hawk::store {
namespace {

namespace fs = std::filesystem;

constexpr size_t kCompactAfterBytes = 256 * 1024;
constexpr size_t kSnapshotBytes = 4 * 1024 * 1024;  // a few ms to write and fsync
constexpr int kRounds = 24;

struct ChildOutput {
  uint64_t max_acked = 0;
  int acked = 0;
  int compactions_started = 0;
  int compactions_done = 0;
  bool compaction_open = false;  // the last C had no D: killed mid-compaction
};

ChildOutput ParseOutput(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  ChildOutput out;
  size_t end = all.rfind('\n');
  if (end == std::string::npos) return out;
  for (absl::string_view line : absl::StrSplit(absl::string_view(all).substr(0, end), '\n')) {
    uint64_t seq = 0;
    if (line.size() < 3 || !absl::SimpleAtoi(line.substr(2), &seq)) continue;
    if (line[0] == 'A') {
      out.max_acked = std::max(out.max_acked, seq);
      ++out.acked;
    } else if (line[0] == 'C') {
      ++out.compactions_started;
      out.compaction_open = true;
    } else if (line[0] == 'D') {
      ++out.compactions_done;
      out.compaction_open = false;
    }
  }
  return out;
}

// Appends the first `keep` bytes of record `seq` to the newest journal file in `dir`: what a kill
// in the middle of that record's write leaves. Returns the file's path.
std::string TearNextRecord(const std::string& dir, uint64_t seq, std::mt19937_64& rng) {
  std::string newest;
  uint64_t newest_seq = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    absl::optional<uint64_t> first = ParseJournalFileName(entry.path().filename().string());
    if (first && *first >= newest_seq) {
      newest_seq = *first;
      newest = entry.path().string();
    }
  }
  std::string payload = crash::Payload(seq);
  char header[kRecordHeaderBytes];
  EncodeRecordHeader(seq, payload, header);
  std::string record = std::string(header, sizeof(header)) + payload;
  size_t keep = 1 + rng() % (record.size() - 1);
  std::ofstream out(newest, std::ios::binary | std::ios::app);
  out.write(record.data(), static_cast<std::streamsize>(keep));
  return newest;
}

// Loads `dir` and checks it against everything ever acknowledged. Returns Load's `repaired`.
std::string Verify(const std::string& dir, uint64_t max_acked, uint64_t* last_seq) {
  uv::Loop loop;
  std::string repaired;
  {
    JournalOptions options;
    options.dir = dir;
    auto journal = Journal::Open(loop.get(), options);
    if (!journal.ok()) {
      ADD_FAILURE() << journal.status();
      return "";
    }
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos)
          << "Open left " << entry.path() << " behind";
    }
    auto loaded = (*journal)->Load();
    if (!loaded.ok()) {
      ADD_FAILURE() << loaded.status();
      return "";
    }
    repaired = loaded->repaired;
    if (loaded->snapshot.has_value()) {
      EXPECT_EQ(*loaded->snapshot, crash::SnapshotPayload(loaded->snapshot_seq, kSnapshotBytes))
          << "snapshot at seq " << loaded->snapshot_seq;
    } else {
      EXPECT_EQ(loaded->snapshot_seq, 0u);
    }
    uint64_t expected = loaded->snapshot_seq + 1;
    for (const JournalRecord& record : loaded->records) {
      if (record.seq != expected || record.payload != crash::Payload(record.seq)) {
        ADD_FAILURE() << "record " << record.seq << " (expected seq " << expected << ", "
                      << record.payload.size() << " bytes): a gap or wrong bytes";
        break;
      }
      ++expected;
    }
    EXPECT_EQ(loaded->last_seq, expected - 1);
    EXPECT_GE(loaded->last_seq, max_acked) << "acknowledged records are missing";
    *last_seq = loaded->last_seq;
  }
  absl::Status closed = loop.RunDryAndClose();
  EXPECT_TRUE(closed.ok()) << closed;
  return repaired;
}

TEST(JournalCrashTest, AcknowledgedRecordsSurviveSigkill) {
  uint64_t seed = std::random_device()();
  if (const char* env = std::getenv("HAWK_CRASH_SEED")) {
    ASSERT_TRUE(absl::SimpleAtoi(env, &seed)) << env;
  }
  std::printf("HAWK_CRASH_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  testing::TempDir tmp;
  std::string dir = tmp.File("state");

  uint64_t max_acked = 0;
  uint64_t last_seq = 0;
  int mid_compaction = 0;
  int repaired_rounds = 0;
  int compactions = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round, ", seed ", seed));
    std::string out_path = tmp.File(absl::StrCat("out-", round, ".txt"));
    testing::SubprocessOptions options;
    options.argv = {HAWK_JOURNAL_CRASH_MAIN, dir, std::to_string(rng()),
                    std::to_string(kCompactAfterBytes), std::to_string(kSnapshotBytes)};
    options.stdout_path = out_path;
    options.stderr_path = tmp.File(absl::StrCat("err-", round, ".txt"));
    std::string error;
    std::unique_ptr<testing::Subprocess> child = testing::Subprocess::Spawn(options, &error);
    ASSERT_NE(child, nullptr) << error;

    // Four ways to pick the moment: a random delay; a random delay after the first
    // acknowledgement; right after a compaction starts; a random delay after one finished.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    auto wait_for = [&](auto predicate) {
      while (!predicate() && child->Running() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    };
    switch (round % 4) {
      case 0:
        std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 300));
        break;
      case 1:
        wait_for([&] { return ParseOutput(out_path).acked > 0; });
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 30000));
        break;
      case 2:
        wait_for([&] { return ParseOutput(out_path).compaction_open; });
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
        break;
      case 3:
        wait_for([&] { return ParseOutput(out_path).compactions_done > 0; });
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
        break;
    }
    ASSERT_TRUE(child->Running()) << child->DescribeExit() << ": "
                                  << testing::ReadFile(options.stderr_path);
    child->Signal(SIGKILL);
    ASSERT_TRUE(child->WaitExit(std::chrono::seconds(10)));
    ASSERT_EQ(child->term_signal(), SIGKILL) << testing::ReadFile(options.stderr_path);

    ChildOutput output = ParseOutput(out_path);
    max_acked = std::max(max_acked, output.max_acked);
    mid_compaction += output.compaction_open ? 1 : 0;
    compactions += output.compactions_done;
    uint64_t before = last_seq;
    // Every third round (so with each way of killing in turn), also leave part of the next
    // record behind, as a kill in the middle of its write would: SIGKILL itself rarely lands
    // inside a write to the page cache.
    bool torn = round % 3 == 2;
    if (torn) {
      uint64_t loaded_seq = 0;
      std::string natural = Verify(dir, max_acked, &loaded_seq);  // repairs a tear of the kill
      if (!natural.empty()) {
        ++repaired_rounds;
        std::printf("round %d: %s\n", round, natural.c_str());
      }
      TearNextRecord(dir, loaded_seq + 1, rng);
    }
    std::string repaired = Verify(dir, max_acked, &last_seq);
    if (torn) {
      EXPECT_NE(repaired, "") << "a torn record went unreported";
    }
    if (::testing::Test::HasFailure()) return;  // later rounds would only repeat it
    EXPECT_GE(last_seq, before);
    if (!repaired.empty()) {
      repaired_rounds += torn ? 0 : 1;
      std::printf("round %d: %s\n", round, repaired.c_str());
      // The repair is durable: the next Load finds nothing to drop and the same records.
      uint64_t again = 0;
      EXPECT_EQ(Verify(dir, max_acked, &again), "");
      EXPECT_EQ(again, last_seq);
    }
  }
  std::printf(
      "%d rounds: last seq %llu, %d compactions done, %d kills mid-compaction, %d torn "
      "tails from SIGKILL itself repaired\n",
      kRounds, static_cast<unsigned long long>(last_seq), compactions, mid_compaction,
      repaired_rounds);
  EXPECT_GT(max_acked, 0u);
  EXPECT_GT(compactions, 0);
  EXPECT_GT(mid_compaction, 0) << "no round killed the child during a compaction";
}

}  // namespace
}  // namespace hawk::store

#include "agent/store/journal.h"

#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/store/journal_format.h"
#include "agent/uv/loop.h"
#include "agent/uv/timer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/run_loop_until.h"

namespace hawk::store {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteFile(const std::string& path, absl::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

std::string Record(uint64_t seq, absl::string_view payload) {
  char header[kRecordHeaderBytes];
  EncodeRecordHeader(seq, payload, header);
  return absl::StrCat(absl::string_view(header, sizeof(header)), payload);
}

std::vector<uint64_t> Seqs(const LoadedJournal& loaded) {
  std::vector<uint64_t> seqs;
  for (const JournalRecord& record : loaded.records) seqs.push_back(record.seq);
  return seqs;
}

std::vector<std::string> Payloads(const LoadedJournal& loaded) {
  std::vector<std::string> payloads;
  for (const JournalRecord& record : loaded.records) payloads.push_back(record.payload);
  return payloads;
}

// Restores RLIMIT_FSIZE and SIGXFSZ's disposition on scope exit.
class ScopedFileSizeLimit {
 public:
  explicit ScopedFileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &previous_);
    previous_handler_ = ::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG
    rlimit limit = previous_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~ScopedFileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &previous_);
    ::signal(SIGXFSZ, previous_handler_);
  }

 private:
  rlimit previous_{};
  sighandler_t previous_handler_ = SIG_DFL;
};

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "hawk-journal-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = root_ + "/state";
  }
  void TearDown() override {
    journal_.reset();
    EXPECT_TRUE(loop_.RunDryAndClose().ok());  // no handle or request leaked
    for (const std::string& mount : mounts_) ::umount2(mount.c_str(), MNT_DETACH);
    std::error_code ignored;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root_, ignored)) {
      if (entry.is_directory(ignored)) fs::permissions(entry.path(), fs::perms::owner_all, ignored);
    }
    fs::remove_all(root_, ignored);
  }

  JournalOptions Options() const {
    JournalOptions options;
    options.dir = dir_;
    return options;
  }

  // (Re)opens journal_ on `options` and loads it.
  LoadedJournal Reopen(JournalOptions options) {
    journal_.reset();
    absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(loop_.get(), options);
    EXPECT_TRUE(journal.ok()) << journal.status();
    if (!journal.ok()) return {};
    journal_ = *std::move(journal);
    absl::StatusOr<LoadedJournal> loaded = journal_->Load();
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return loaded.ok() ? *std::move(loaded) : LoadedJournal{};
  }
  LoadedJournal Reopen() { return Reopen(Options()); }

  // Opens a fresh journal on `options` and returns Load's result.
  absl::StatusOr<LoadedJournal> TryLoad(JournalOptions options) {
    journal_.reset();
    absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(loop_.get(), options);
    if (!journal.ok()) return journal.status();
    journal_ = *std::move(journal);
    return journal_->Load();
  }

  bool Run(const std::function<bool()>& until, uint64_t timeout_ms = 10000) {
    return testing::RunLoopUntil(loop_.get(), until, timeout_ms);
  }

  // An Append the journal must accept: its seq (0, and a failure, if it refused).
  uint64_t Append(std::string payload, std::function<void(absl::Status)> done) {
    absl::StatusOr<uint64_t> seq = journal_->Append(std::move(payload), std::move(done));
    EXPECT_TRUE(seq.ok()) << seq.status();
    return seq.value_or(0);
  }

  // Appends and runs the loop until the record is durable (or failed).
  absl::Status AppendAndWait(std::string payload, uint64_t* seq = nullptr) {
    absl::optional<absl::Status> result;
    absl::StatusOr<uint64_t> assigned =
        journal_->Append(std::move(payload), [&](absl::Status s) { result = s; });
    if (!assigned.ok()) return assigned.status();
    if (seq != nullptr) *seq = *assigned;
    EXPECT_TRUE(Run([&] { return result.has_value(); }));
    return result.value_or(absl::DeadlineExceededError("append did not finish"));
  }

  absl::Status CompactAndWait(std::string snapshot, uint64_t seq) {
    absl::optional<absl::Status> result;
    journal_->Compact(std::move(snapshot), seq, [&](absl::Status s) { result = s; });
    EXPECT_TRUE(Run([&] { return result.has_value(); }));
    return result.value_or(absl::DeadlineExceededError("compaction did not finish"));
  }

  std::vector<std::string> Files(const std::string& dir) const {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }
  std::vector<std::string> Files() const { return Files(dir_); }

  // Mounts a tmpfs of `size` at `path`; false (the test skips) where mounting is not allowed.
  bool MountTmpfs(const std::string& path, const std::string& size) {
    fs::create_directories(path);
    if (::mount("tmpfs", path.c_str(), "tmpfs", 0, absl::StrCat("size=", size).c_str()) != 0) {
      return false;
    }
    mounts_.push_back(path);
    return true;
  }

  uv::Loop loop_;
  std::string root_;
  std::string dir_;
  std::unique_ptr<Journal> journal_;
  std::vector<std::string> mounts_;
};

TEST_F(JournalTest, RoundTrip) {
  LoadedJournal empty = Reopen();
  EXPECT_FALSE(empty.snapshot.has_value());
  EXPECT_EQ(empty.last_seq, 0u);
  EXPECT_THAT(empty.records, IsEmpty());
  EXPECT_THAT(empty.repaired, IsEmpty());
  EXPECT_THAT(Files(), ElementsAre("journal-1.log"));
  EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all);

  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  std::vector<std::string> payloads = {"first", "", binary, std::string(20000, 'x')};
  for (size_t i = 0; i < payloads.size(); ++i) {
    uint64_t seq = 0;
    ASSERT_TRUE(AppendAndWait(payloads[i], &seq).ok());
    EXPECT_EQ(seq, i + 1);
  }
  EXPECT_EQ(journal_->durable_seq(), 4u);

  LoadedJournal loaded = Reopen();
  EXPECT_THAT(Seqs(loaded), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(Payloads(loaded), payloads);
  EXPECT_EQ(loaded.last_seq, 4u);
  EXPECT_FALSE(loaded.snapshot.has_value());
  EXPECT_THAT(loaded.repaired, IsEmpty());
}

TEST_F(JournalTest, GroupCommitWritesOneBatchPerIteration) {
  Reopen();
  std::vector<uint64_t> done_order;
  std::vector<uint64_t> seqs;
  uint64_t bytes = 0;
  for (int i = 0; i < 50; ++i) {
    std::string payload(static_cast<size_t>(i * 10), 'p');
    bytes += kRecordHeaderBytes + payload.size();
    uint64_t seq = Append(payload, [&done_order, &seqs, i](absl::Status status) {
      EXPECT_TRUE(status.ok()) << status;
      done_order.push_back(seqs[static_cast<size_t>(i)]);
    });
    seqs.push_back(seq);
  }
  EXPECT_THAT(done_order, IsEmpty());  // never inside Append
  ASSERT_TRUE(Run([&] { return done_order.size() == 50; }));
  std::vector<uint64_t> expected;
  for (uint64_t seq = 1; seq <= 50; ++seq) expected.push_back(seq);
  EXPECT_EQ(seqs, expected);
  EXPECT_EQ(done_order, expected);
  EXPECT_EQ(journal_->stats().fdatasyncs, 1u);
  EXPECT_EQ(journal_->stats().batches, 1u);
  EXPECT_EQ(journal_->stats().records, 50u);
  EXPECT_EQ(journal_->stats().bytes_written, bytes);
  EXPECT_EQ(fs::file_size(dir_ + "/journal-1.log"), bytes);

  // An Append from a done goes into the next batch.
  bool second = false;
  Append("a", [&](absl::Status) {
    Append("b", [&](absl::Status status) {
      EXPECT_TRUE(status.ok());
      second = true;
    });
  });
  ASSERT_TRUE(Run([&] { return second; }));
  EXPECT_EQ(journal_->stats().fdatasyncs, 3u);
  EXPECT_EQ(Reopen().last_seq, 52u);
}

// An Append from a timer must not wait in poll for unrelated I/O: the idle handle keeps the loop
// from blocking until the check handle has flushed it.
TEST_F(JournalTest, AppendFromATimerIsFlushedWithoutOtherIo) {
  Reopen();
  bool done = false;
  uv::Timer timer(loop_.get());
  timer.Start(absl::Milliseconds(1), [&] { Append("x", [&](absl::Status) { done = true; }); });
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Run([&] { return done; }, 5000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // Nothing pending: the journal's handles are inactive and let the loop run dry.
  EXPECT_EQ(uv_run(loop_.get(), UV_RUN_NOWAIT), 0);
}

TEST_F(JournalTest, ReopenContinuesTheSeqs) {
  std::vector<std::string> all;
  for (int round = 0; round < 3; ++round) {
    LoadedJournal loaded = Reopen();
    EXPECT_EQ(Payloads(loaded), all);
    for (int i = 0; i < 3; ++i) {
      std::string payload = absl::StrCat("round ", round, " record ", i);
      uint64_t seq = 0;
      ASSERT_TRUE(AppendAndWait(payload, &seq).ok());
      all.push_back(payload);
      EXPECT_EQ(seq, all.size());
    }
  }
  EXPECT_EQ(Payloads(Reopen()), all);
  EXPECT_THAT(Files(), ElementsAre("journal-1.log"));
}

// Issue 24, defect 2: a refused record never takes another record's place. The refusal comes
// from Append itself, and the refused record's done never runs. It used to come from the loop,
// after the dones of the batch appended after it, so a caller pairing dones with its records by
// their order answered the wrong one.
TEST_F(JournalTest, RefusesARecordOverTheLimitAtOnce) {
  JournalOptions options = Options();
  options.max_record_bytes = 10;
  Reopen(options);
  std::vector<std::string> order;
  absl::StatusOr<uint64_t> big = journal_->Append(std::string(11, 'x'), [&](absl::Status s) {
    order.push_back(s.ok() ? "big durable" : "big refused");
  });
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(big.status())) << big.status();
  EXPECT_THAT(big.status().message(), HasSubstr("11 bytes, more than the limit of 10 bytes"));
  EXPECT_EQ(
      Append("small",
             [&](absl::Status s) { order.push_back(s.ok() ? "small durable" : "small refused"); }),
      1u);
  EXPECT_EQ(
      Append(std::string(10, 'x'),
             [&](absl::Status s) { order.push_back(s.ok() ? "limit durable" : "limit refused"); }),
      2u);
  ASSERT_TRUE(Run([&] { return order.size() == 2; }));
  uv_run(loop_.get(), UV_RUN_NOWAIT);
  EXPECT_THAT(order, ElementsAre("small durable", "limit durable"));
  EXPECT_THAT(Payloads(Reopen(options)), ElementsAre("small", std::string(10, 'x')));
}

TEST_F(JournalTest, CompactionReplacesTheFilesItCovers) {
  JournalOptions options = Options();
  options.compact_after_bytes = 500;
  Reopen(options);
  for (int i = 1; i <= 10; ++i) ASSERT_TRUE(AppendAndWait(std::string(100, 'a' + i)).ok());
  EXPECT_TRUE(journal_->WantsCompaction());

  std::string snapshot(5 << 20, 's');
  absl::optional<absl::Status> compacted;
  journal_->Compact(snapshot, 10, [&](absl::Status s) { compacted = s; });
  EXPECT_FALSE(compacted.has_value());
  EXPECT_TRUE(journal_->compacting());
  EXPECT_FALSE(journal_->WantsCompaction());
  // Appends meanwhile: some in the same iteration as Compact, then one per iteration for as long
  // as the snapshot is being written.
  std::vector<std::string> later;
  int acked = 0;
  auto append = [&] {
    later.push_back(absl::StrCat("during compaction ", later.size()));
    Append(later.back(), [&](absl::Status s) {
      EXPECT_TRUE(s.ok()) << s;
      ++acked;
    });
  };
  append();
  append();
  ASSERT_TRUE(Run([&] {
    if (!compacted && later.size() < 1000) append();
    return compacted.has_value() && acked == static_cast<int>(later.size());
  }));
  ASSERT_TRUE(compacted->ok()) << *compacted;
  EXPECT_FALSE(journal_->compacting());
  EXPECT_EQ(journal_->snapshot_seq(), 10u);
  EXPECT_EQ(journal_->stats().compactions, 1u);
  EXPECT_EQ(journal_->stats().snapshot_bytes_written, snapshot.size());
  EXPECT_THAT(Files(), UnorderedElementsAre("snapshot-10.json", "journal-11.log"));
  EXPECT_EQ(ReadFile(dir_ + "/snapshot-10.json"), snapshot);
  uint64_t later_bytes = 0;
  for (const std::string& payload : later) later_bytes += kRecordHeaderBytes + payload.size();
  EXPECT_EQ(journal_->live_journal_bytes(), later_bytes);

  LoadedJournal loaded = Reopen(options);
  ASSERT_TRUE(loaded.snapshot.has_value());
  EXPECT_EQ(*loaded.snapshot, snapshot);
  EXPECT_EQ(loaded.snapshot_seq, 10u);
  EXPECT_EQ(Payloads(loaded), later);
  EXPECT_EQ(loaded.records.front().seq, 11u);
  EXPECT_EQ(loaded.last_seq, 10 + later.size());
  uint64_t seq = 0;
  ASSERT_TRUE(AppendAndWait("after reopen", &seq).ok());
  EXPECT_EQ(seq, 11 + later.size());
  EXPECT_THAT(Files(), UnorderedElementsAre("snapshot-10.json", "journal-11.log"));
}

TEST_F(JournalTest, ACompactionAtAnOlderSeqKeepsWhatItDoesNotCover) {
  Reopen();
  for (int i = 1; i <= 10; ++i) ASSERT_TRUE(AppendAndWait(absl::StrCat("r", i)).ok());
  ASSERT_TRUE(CompactAndWait("state@5", 5).ok());
  EXPECT_THAT(Files(), UnorderedElementsAre("snapshot-5.json", "journal-1.log", "journal-11.log"));
  LoadedJournal loaded = Reopen();
  EXPECT_EQ(*loaded.snapshot, "state@5");
  EXPECT_THAT(Seqs(loaded), ElementsAre(6, 7, 8, 9, 10));
  ASSERT_TRUE(AppendAndWait("r11").ok());
  ASSERT_TRUE(CompactAndWait("state@11", 11).ok());
  EXPECT_THAT(Files(), UnorderedElementsAre("snapshot-11.json", "journal-12.log"));
  loaded = Reopen();
  EXPECT_EQ(loaded.snapshot_seq, 11u);
  EXPECT_THAT(loaded.records, IsEmpty());
}

TEST_F(JournalTest, ACompactionWaitsForTheRecordsItCovers) {
  Reopen();
  int acked = 0;
  for (int i = 1; i <= 3; ++i) Append(absl::StrCat("r", i), [&](absl::Status) { ++acked; });
  // Same iteration: the records are not durable yet; the snapshot must not be before they are.
  ASSERT_TRUE(CompactAndWait("state@3", 3).ok());
  EXPECT_EQ(acked, 3);
  LoadedJournal loaded = Reopen();
  EXPECT_EQ(loaded.snapshot_seq, 3u);
  EXPECT_EQ(loaded.last_seq, 3u);
  EXPECT_THAT(loaded.records, IsEmpty());
  uint64_t seq = 0;
  ASSERT_TRUE(AppendAndWait("r4", &seq).ok());
  EXPECT_EQ(seq, 4u);
  EXPECT_THAT(Seqs(Reopen()), ElementsAre(4));
}

TEST_F(JournalTest, CompactRefusals) {
  Reopen();
  ASSERT_TRUE(AppendAndWait("r1").ok());
  ASSERT_TRUE(AppendAndWait("r2").ok());
  absl::optional<absl::Status> beyond;
  journal_->Compact("x", 3, [&](absl::Status s) { beyond = s; });
  EXPECT_FALSE(beyond.has_value());
  absl::optional<absl::Status> first;
  absl::optional<absl::Status> second;
  journal_->Compact(std::string(1 << 20, 'x'), 2, [&](absl::Status s) { first = s; });
  journal_->Compact("y", 2, [&](absl::Status s) { second = s; });
  EXPECT_FALSE(second.has_value());
  ASSERT_TRUE(Run([&] { return beyond && first && second; }));
  EXPECT_TRUE(absl::IsInvalidArgument(*beyond)) << *beyond;
  EXPECT_THAT(beyond->message(), HasSubstr("seq is outside [0, 2]"));
  EXPECT_TRUE(first->ok()) << *first;
  EXPECT_TRUE(absl::IsFailedPrecondition(*second)) << *second;
  absl::Status older = CompactAndWait("z", 1);
  EXPECT_TRUE(absl::IsInvalidArgument(older)) << older;
}

// Issue 24, item 8: Load refuses a snapshot above max_snapshot_bytes, so Compact never writes
// one: the journal keeps its records, which Load accepts.
TEST_F(JournalTest, CompactRefusesASnapshotLoadWouldRefuse) {
  JournalOptions options = Options();
  options.max_snapshot_bytes = 100;
  Reopen(options);
  ASSERT_TRUE(AppendAndWait("r1").ok());
  absl::Status refused = CompactAndWait(std::string(101, 's'), 1);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.message()),
              AllOf(HasSubstr("101 bytes"), HasSubstr("more than the 100 bytes")));
  EXPECT_THAT(Files(), Not(Contains(HasSubstr("snapshot"))));
  absl::StatusOr<LoadedJournal> loaded = TryLoad(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->snapshot.has_value());
  EXPECT_THAT(Payloads(*loaded), ElementsAre("r1"));

  // At the limit it is written, and loads.
  ASSERT_TRUE(CompactAndWait(std::string(100, 's'), 1).ok());
  loaded = TryLoad(options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->snapshot, std::string(100, 's'));
}

TEST_F(JournalTest, DestroyingTheJournalDuringACompactionIsSafe) {
  Reopen();
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(AppendAndWait(absl::StrCat("r", i)).ok());
  bool called = false;
  std::string snapshot(5 << 20, 'q');
  journal_->Compact(snapshot, 5, [&](absl::Status) { called = true; });
  journal_.reset();                     // the threadpool may be writing the snapshot right now
  uv_run(loop_.get(), UV_RUN_DEFAULT);  // returns once the request is freed
  EXPECT_FALSE(called);
  LoadedJournal loaded = Reopen();
  // The work ran to completion: its snapshot is durable, and Load cleaned what it covers.
  EXPECT_EQ(loaded.snapshot_seq, 5u);
  EXPECT_EQ(loaded.snapshot, snapshot);
  EXPECT_THAT(loaded.records, IsEmpty());
  EXPECT_THAT(Files(), UnorderedElementsAre("snapshot-5.json", "journal-6.log"));
}

TEST_F(JournalTest, DestroyingTheJournalDropsUnwrittenRecords) {
  Reopen();
  bool called = false;
  Append("never written", [&](absl::Status) { called = true; });
  journal_.reset();
  uv_run(loop_.get(), UV_RUN_DEFAULT);
  EXPECT_FALSE(called);
  EXPECT_THAT(Reopen().records, IsEmpty());
}

// What a crash between a snapshot's rename and the deletions leaves: Load finishes the job.
TEST_F(JournalTest, LoadDeletesWhatTheNewestSnapshotCovers) {
  fs::create_directories(dir_);
  WriteFile(dir_ + "/snapshot-2.json", "two");
  WriteFile(dir_ + "/snapshot-5.json", "five");
  WriteFile(dir_ + "/journal-1.log", Record(1, "a") + Record(2, "b") + Record(3, "c"));
  WriteFile(dir_ + "/journal-4.log", Record(4, "d") + Record(5, "e") + Record(6, "f"));
  WriteFile(dir_ + "/notes.txt", "not ours");
  LoadedJournal loaded = Reopen();
  EXPECT_EQ(loaded.snapshot, "five");
  EXPECT_EQ(loaded.snapshot_seq, 5u);
  EXPECT_THAT(Payloads(loaded), ElementsAre("f"));
  EXPECT_EQ(loaded.last_seq, 6u);
  EXPECT_THAT(Files(), UnorderedElementsAre("snapshot-5.json", "journal-4.log", "notes.txt"));
}

TEST_F(JournalTest, ASnapshotPastTheLastFileStartsAFreshOne) {
  fs::create_directories(dir_);
  WriteFile(dir_ + "/snapshot-7.json", "seven");
  WriteFile(dir_ + "/journal-1.log", Record(1, "a") + Record(2, "b"));
  LoadedJournal loaded = Reopen();
  EXPECT_EQ(loaded.last_seq, 7u);
  EXPECT_THAT(loaded.records, IsEmpty());
  uint64_t seq = 0;
  ASSERT_TRUE(AppendAndWait("h", &seq).ok());
  EXPECT_EQ(seq, 8u);
  EXPECT_THAT(Files(), UnorderedElementsAre("snapshot-7.json", "journal-8.log"));
  EXPECT_THAT(Seqs(Reopen()), ElementsAre(8));
}

// Truncating the file at every byte offset inside the last record: Load drops exactly that
// record, says so, and the journal appends and reloads cleanly afterwards.
TEST_F(JournalTest, ATornLastRecordIsDroppedAtEveryOffset) {
  Reopen();
  ASSERT_TRUE(AppendAndWait("first").ok());
  ASSERT_TRUE(AppendAndWait("second record").ok());
  size_t start = fs::file_size(dir_ + "/journal-1.log");
  ASSERT_TRUE(AppendAndWait("the third record, which will be torn").ok());
  journal_.reset();
  std::string full = ReadFile(dir_ + "/journal-1.log");
  ASSERT_GT(full.size(), start + 1);

  std::string base = dir_;
  for (size_t cut = start + 1; cut < full.size(); ++cut) {
    SCOPED_TRACE(absl::StrCat("cut at ", cut));
    dir_ = absl::StrCat(base, "-", cut);
    fs::create_directories(dir_);
    std::string path = dir_ + "/journal-1.log";
    WriteFile(path, full.substr(0, cut));
    LoadedJournal loaded = Reopen();
    EXPECT_THAT(Payloads(loaded), ElementsAre("first", "second record"));
    EXPECT_EQ(loaded.last_seq, 2u);
    EXPECT_THAT(loaded.repaired, HasSubstr(absl::StrCat(path, " from offset ", start)));
    EXPECT_THAT(loaded.repaired, HasSubstr(absl::StrCat("dropped ", cut - start, " bytes")));
    EXPECT_EQ(fs::file_size(path), start);
    uint64_t seq = 0;
    ASSERT_TRUE(AppendAndWait("a new third", &seq).ok());
    EXPECT_EQ(seq, 3u);
    LoadedJournal again = Reopen();
    EXPECT_THAT(Payloads(again), ElementsAre("first", "second record", "a new third"));
    EXPECT_THAT(again.repaired, IsEmpty());
  }
}

TEST_F(JournalTest, TrailingZerosAreATornTail) {
  fs::create_directories(dir_);
  WriteFile(dir_ + "/journal-1.log", Record(1, "a") + std::string(8192, '\0'));
  LoadedJournal loaded = Reopen();
  EXPECT_THAT(Payloads(loaded), ElementsAre("a"));
  EXPECT_THAT(loaded.repaired, HasSubstr("dropped 8192 bytes"));
}

TEST_F(JournalTest, DamageInTheMiddleIsDataLoss) {
  fs::create_directories(dir_);
  std::string path = dir_ + "/journal-1.log";
  std::string data = Record(1, "one") + Record(2, "two") + Record(3, "three");
  data[kRecordHeaderBytes + 3 + kRecordHeaderBytes] ^= 0x01;
  WriteFile(path, data);
  absl::StatusOr<LoadedJournal> loaded = TryLoad(Options());
  ASSERT_TRUE(absl::IsDataLoss(loaded.status())) << loaded.status();
  EXPECT_THAT(loaded.status().message(), HasSubstr(path));
  EXPECT_THAT(loaded.status().message(), HasSubstr("record 2 at offset 19"));
  EXPECT_EQ(ReadFile(path), data);  // left for the operator
}

TEST_F(JournalTest, ATornRecordBeforeAnotherFileIsDataLoss) {
  fs::create_directories(dir_);
  std::string torn = Record(1, "one") + Record(2, "two").substr(0, 10);
  WriteFile(dir_ + "/journal-1.log", torn);
  WriteFile(dir_ + "/journal-2.log", Record(2, "two"));
  absl::StatusOr<LoadedJournal> loaded = TryLoad(Options());
  ASSERT_TRUE(absl::IsDataLoss(loaded.status())) << loaded.status();
  EXPECT_THAT(loaded.status().message(), HasSubstr(dir_ + "/journal-1.log is damaged"));
}

TEST_F(JournalTest, AGapBetweenFilesIsDataLoss) {
  fs::create_directories(dir_);
  WriteFile(dir_ + "/journal-1.log", Record(1, "one") + Record(2, "two"));
  WriteFile(dir_ + "/journal-4.log", Record(4, "four"));
  absl::StatusOr<LoadedJournal> loaded = TryLoad(Options());
  ASSERT_TRUE(absl::IsDataLoss(loaded.status())) << loaded.status();
  EXPECT_THAT(loaded.status().message(), HasSubstr("journal-4.log starts at seq 4"));

  fs::remove(dir_ + "/journal-1.log");
  WriteFile(dir_ + "/snapshot-2.json", "two");
  loaded = TryLoad(Options());
  ASSERT_TRUE(absl::IsDataLoss(loaded.status())) << loaded.status();
  EXPECT_THAT(loaded.status().message(), HasSubstr("records 3..3 are missing"));
}

TEST_F(JournalTest, AFailedWriteLeavesNothingPartialAndTheSeqsAreReused) {
  Reopen();
  ASSERT_TRUE(AppendAndWait(std::string(100, 'a')).ok());
  std::string first_file = dir_ + "/journal-1.log";
  std::string second_file = dir_ + "/journal-2.log";
  std::vector<absl::Status> results;
  absl::optional<absl::Status> compacted;
  {
    // The new file (Compact rotates) may hold 200 bytes: record 2 fits, record 3 is cut short
    // by EFBIG after a partial write.
    ScopedFileSizeLimit limit(200);
    Append(std::string(100, 'b'), [&](absl::Status s) { results.push_back(s); });
    Append(std::string(100, 'c'), [&](absl::Status s) { results.push_back(s); });
    journal_->Compact("state@3", 3, [&](absl::Status s) { compacted = s; });
    ASSERT_TRUE(Run([&] { return results.size() == 2 && compacted.has_value(); }));
  }
  for (const absl::Status& status : results) {
    EXPECT_TRUE(absl::IsOutOfRange(status)) << status;  // EFBIG
    EXPECT_THAT(status.message(), HasSubstr("append journal records 2..3 to " + second_file));
    EXPECT_THAT(status.message(), HasSubstr("File too large"));
  }
  EXPECT_TRUE(absl::IsOutOfRange(*compacted)) << *compacted;
  EXPECT_THAT(compacted->message(), HasSubstr("compact journal in " + dir_ + " at seq 3"));
  EXPECT_EQ(fs::file_size(second_file), 0u);
  EXPECT_EQ(journal_->last_seq(), 1u);
  EXPECT_EQ(journal_->stats().failed_batches, 1u);

  uint64_t seq = 0;
  ASSERT_TRUE(AppendAndWait("b again", &seq).ok());
  EXPECT_EQ(seq, 2u);
  LoadedJournal loaded = Reopen();
  EXPECT_THAT(Payloads(loaded), ElementsAre(std::string(100, 'a'), "b again"));
  EXPECT_THAT(loaded.repaired, IsEmpty());
}

TEST_F(JournalTest, ENospcOnAFullFilesystem) {
  if (!MountTmpfs(root_ + "/small", "64k")) GTEST_SKIP() << "cannot mount a tmpfs here";
  dir_ = root_ + "/small/state";
  Reopen();
  std::vector<std::string> acked;
  absl::Status failure;
  for (int i = 0; i < 100 && failure.ok(); ++i) {
    std::string payload(6000, static_cast<char>('a' + i % 26));
    absl::Status status = AppendAndWait(payload);
    if (status.ok()) {
      acked.push_back(payload);
    } else {
      failure = status;
    }
  }
  ASSERT_FALSE(failure.ok()) << "64 KiB never filled up";
  EXPECT_TRUE(absl::IsResourceExhausted(failure)) << failure;
  EXPECT_THAT(failure.message(), HasSubstr(dir_ + "/journal-1.log: No space left on device"));
  EXPECT_EQ(fs::file_size(dir_ + "/journal-1.log"), acked.size() * (kRecordHeaderBytes + 6000));
  // Not broken: the next Append gets the reused seq (and fails or not, depending on space).
  absl::optional<absl::Status> tiny;
  EXPECT_EQ(Append("", [&](absl::Status s) { tiny = s; }), acked.size() + 1);
  ASSERT_TRUE(Run([&] { return tiny.has_value(); }));
  if (tiny->ok()) acked.push_back("");
  EXPECT_EQ(Payloads(Reopen()), acked);
}

TEST_F(JournalTest, OpenReportsAReadOnlyDirectory) {
  std::string mount = root_ + "/ro";
  bool mounted = MountTmpfs(mount, "1m");
  if (!mounted && ::geteuid() == 0) GTEST_SKIP() << "root and no mount: no way to be read-only";
  dir_ = mount + "/state";
  Reopen();
  ASSERT_TRUE(AppendAndWait("kept").ok());
  journal_.reset();
  if (mounted) {
    ASSERT_EQ(::mount("tmpfs", mount.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=1m"), 0);
  } else {
    fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
    fs::permissions(mount, fs::perms::owner_read | fs::perms::owner_exec);
  }
  absl::StatusOr<std::unique_ptr<Journal>> existing = Journal::Open(loop_.get(), Options());
  ASSERT_TRUE(absl::IsPermissionDenied(existing.status())) << existing.status();
  EXPECT_THAT(existing.status().message(),
              HasSubstr("open journal directory " + dir_ + ": create " + dir_));
  JournalOptions missing = Options();
  missing.dir = mount + "/new/state";
  absl::StatusOr<std::unique_ptr<Journal>> created = Journal::Open(loop_.get(), missing);
  ASSERT_TRUE(absl::IsPermissionDenied(created.status())) << created.status();
  EXPECT_THAT(created.status().message(), HasSubstr("mkdir " + mount + "/new"));
}

TEST_F(JournalTest, OpenRefusesAFileAndBadOptions) {
  WriteFile(root_ + "/file", "x");
  JournalOptions options = Options();
  options.dir = root_ + "/file";
  EXPECT_TRUE(absl::IsFailedPrecondition(Journal::Open(loop_.get(), options).status()));
  options.dir = "";
  EXPECT_TRUE(absl::IsInvalidArgument(Journal::Open(loop_.get(), options).status()));
  options = Options();
  options.max_record_bytes = size_t{1} << 32;
  EXPECT_TRUE(absl::IsInvalidArgument(Journal::Open(loop_.get(), options).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Journal::Open(nullptr, Options()).status()));
}

TEST_F(JournalTest, OpenRemovesTemporarySnapshotsOfGoneProcesses) {
  fs::create_directories(dir_);
  // A pid that cannot exist (above pid_max's hard limit of 2^22), ours, and a live one.
  std::string gone = dir_ + "/snapshot-3.json.tmp-99999999";
  std::string own = absl::StrCat(dir_, "/snapshot-3.json.tmp-", ::getpid());
  std::string live = dir_ + "/snapshot-3.json.tmp-1";
  std::string foreign = dir_ + "/other.json.tmp-99999999";
  for (const std::string& path : {gone, own, live, foreign}) WriteFile(path, "partial");
  Reopen();
  EXPECT_THAT(Files(), UnorderedElementsAre("snapshot-3.json.tmp-1", "other.json.tmp-99999999",
                                            "journal-1.log"));
}

TEST_F(JournalTest, LoadOnlyOnce) {
  Reopen();
  absl::StatusOr<LoadedJournal> again = journal_->Load();
  EXPECT_TRUE(absl::IsFailedPrecondition(again.status())) << again.status();
}

TEST_F(JournalTest, AppendBeforeLoadIsAProgrammerError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        uv::Loop loop;
        auto journal = Journal::Open(loop.get(), Options());
        if (journal.ok()) (*journal)->Append("x", nullptr).IgnoreError();
      },
      "Append called before a successful Load");
}

}  // namespace
}  // namespace hawk::store

#include "agent/store/journal_format.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::store {
namespace {

using ::testing::HasSubstr;
using Outcome = JournalScan::Outcome;

constexpr size_t kMax = 1 << 20;

std::string Record(uint64_t seq, const std::string& payload) {
  char header[kRecordHeaderBytes];
  EncodeRecordHeader(seq, payload, header);
  return std::string(header, sizeof(header)) + payload;
}

std::string Records(uint64_t first, const std::vector<std::string>& payloads) {
  std::string out;
  for (const std::string& payload : payloads) out += Record(first++, payload);
  return out;
}

TEST(JournalFormatTest, FileNamesRoundTrip) {
  EXPECT_EQ(JournalFileName(1), "journal-1.log");
  EXPECT_EQ(SnapshotFileName(42), "snapshot-42.json");
  EXPECT_EQ(ParseJournalFileName("journal-1.log"), 1u);
  EXPECT_EQ(ParseJournalFileName("journal-18446744073709551615.log"), UINT64_MAX);
  EXPECT_EQ(ParseSnapshotFileName("snapshot-0.json"), 0u);
  EXPECT_EQ(ParseSnapshotFileName("snapshot-42.json"), 42u);
  for (const char* name :
       {"journal-.log", "journal-01.log", "journal-+1.log", "journal--1.log", "journal-1.log.tmp-5",
        "journal-1.logx", "journal-18446744073709551616.log", "journal-1 .log", "xjournal-1.log"}) {
    EXPECT_FALSE(ParseJournalFileName(name)) << name;
  }
  EXPECT_FALSE(ParseSnapshotFileName("snapshot-3.json.tmp-77"));
  EXPECT_FALSE(ParseSnapshotFileName("journal-3.log"));
}

TEST(JournalFormatTest, HeaderLayoutIsLittleEndian) {
  char header[kRecordHeaderBytes];
  EncodeRecordHeader(0x0102030405060708ull, "abc", header);
  EXPECT_EQ(std::string(header, 4), std::string("\x03\x00\x00\x00", 4));
  EXPECT_EQ(std::string(header + 8, 8), "\x08\x07\x06\x05\x04\x03\x02\x01");
}

TEST(JournalFormatTest, CleanScan) {
  std::string data = Records(5, {"a", "", std::string(1000, 'z')});
  JournalScan scan = ScanJournal(data, 5, kMax);
  EXPECT_EQ(scan.outcome, Outcome::kClean);
  ASSERT_EQ(scan.records.size(), 3u);
  EXPECT_EQ(scan.records[0].seq, 5u);
  EXPECT_EQ(scan.records[1].payload, "");
  EXPECT_EQ(scan.records[2].payload, std::string(1000, 'z'));
  EXPECT_EQ(scan.records[2].offset, 2 * kRecordHeaderBytes + 1);
  EXPECT_EQ(scan.valid_bytes, data.size());
  EXPECT_EQ(ScanJournal("", 1, kMax).outcome, Outcome::kClean);
}

// Every cut inside the last record is a torn tail that keeps exactly the records before it.
TEST(JournalFormatTest, EveryTruncationOfTheLastRecordIsATornTail) {
  std::string good = Records(1, {"first", "second"});
  std::string data = good + Record(3, "the third record, forty bytes long......");
  for (size_t cut = good.size() + 1; cut < data.size(); ++cut) {
    JournalScan scan = ScanJournal(absl::string_view(data).substr(0, cut), 1, kMax);
    EXPECT_EQ(scan.outcome, Outcome::kTornTail) << cut;
    EXPECT_EQ(scan.records.size(), 2u) << cut;
    EXPECT_EQ(scan.valid_bytes, good.size()) << cut;
    EXPECT_THAT(scan.problem, HasSubstr("record 3 at offset " + std::to_string(good.size())));
  }
}

TEST(JournalFormatTest, ZerosAndAFlippedLastRecordAreATornTail) {
  std::string good = Records(1, {"a", "b"});
  JournalScan zeros = ScanJournal(good + std::string(4096, '\0'), 1, kMax);
  EXPECT_EQ(zeros.outcome, Outcome::kTornTail);
  EXPECT_EQ(zeros.valid_bytes, good.size());

  std::string flipped = good + Record(3, "payload");
  flipped.back() ^= 1;
  JournalScan scan = ScanJournal(flipped, 1, kMax);
  EXPECT_EQ(scan.outcome, Outcome::kTornTail);
  EXPECT_THAT(scan.problem, HasSubstr("CRC mismatch"));

  JournalScan huge = ScanJournal(good + std::string(16, '\xFF'), 1, kMax);
  EXPECT_EQ(huge.outcome, Outcome::kTornTail);
  EXPECT_THAT(huge.problem, HasSubstr("more than the limit"));
}

TEST(JournalFormatTest, DamageBeforeAValidRecordIsDamage) {
  std::string data = Records(1, {"one", "two", "three"});
  std::string flipped = data;
  flipped[kRecordHeaderBytes + 3 + kRecordHeaderBytes] ^= 0x40;  // "two"'s payload
  JournalScan scan = ScanJournal(flipped, 1, kMax);
  EXPECT_EQ(scan.outcome, Outcome::kDamaged);
  EXPECT_EQ(scan.records.size(), 1u);
  EXPECT_THAT(scan.problem, HasSubstr("record 2 at offset 19: CRC mismatch"));
  EXPECT_THAT(scan.problem, HasSubstr("a valid record (seq 3) follows at offset 38"));

  // A length field that lies makes the record run into the next one.
  std::string bad_length = data;
  bad_length[kRecordHeaderBytes + 3] = 9;
  EXPECT_EQ(ScanJournal(bad_length, 1, kMax).outcome, Outcome::kDamaged);
}

TEST(JournalFormatTest, AValidRecordOutOfSequenceIsDamage) {
  JournalScan scan = ScanJournal(Records(1, {"a"}) + Record(3, "c"), 1, kMax);
  EXPECT_EQ(scan.outcome, Outcome::kDamaged);
  EXPECT_THAT(scan.problem, HasSubstr("record 2 at offset 17: a valid record with seq 3"));
  EXPECT_EQ(ScanJournal(Records(2, {"a"}), 1, kMax).outcome, Outcome::kDamaged);
}

}  // namespace
}  // namespace hawk::store

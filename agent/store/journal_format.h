#pragma once

// The on-disk format of hawk's journal (journal.h), as pure functions: file names, record framing
// and the scan that tells a torn tail from damage. No I/O, so every byte-level case is testable
// without files.
//
// A journal file is a sequence of records, nothing else (no file header: the name carries the
// first seq, and a future format would get a new name). One record, little-endian:
//
//   [u32 payload length][u32 CRC-32C of (seq as 8 LE bytes, then payload)][u64 seq][payload]
//
// The CRC covers the seq so that a record copied to the wrong place is caught; it does not cover
// the length, but a wrong length makes the CRC cover the wrong bytes, which fails just the same.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::store {

inline constexpr size_t kRecordHeaderBytes = 16;
inline constexpr absl::string_view kJournalPrefix = "journal-";
inline constexpr absl::string_view kJournalSuffix = ".log";
inline constexpr absl::string_view kSnapshotPrefix = "snapshot-";
inline constexpr absl::string_view kSnapshotSuffix = ".json";

// "journal-<first_seq>.log" and "snapshot-<seq>.json", seqs in decimal without padding.
std::string JournalFileName(uint64_t first_seq);
std::string SnapshotFileName(uint64_t seq);
// The seq in a name those functions produce; nullopt for any other name (leading zeros, signs,
// overflow, temporary files and other suffixes included), so that only names hawk wrote count.
absl::optional<uint64_t> ParseJournalFileName(absl::string_view name);
absl::optional<uint64_t> ParseSnapshotFileName(absl::string_view name);

// Writes the header of record (seq, payload) into `out`. `payload.size()` must fit in a u32.
void EncodeRecordHeader(uint64_t seq, absl::string_view payload, char out[kRecordHeaderBytes]);

struct ScannedRecord {
  uint64_t seq = 0;
  size_t offset = 0;          // of the header in the scanned bytes
  absl::string_view payload;  // points into the scanned bytes
};

struct JournalScan {
  enum class Outcome {
    kClean,     // every byte belongs to a valid record
    kTornTail,  // bytes from `valid_bytes` on hold no valid record: what a crash mid-write leaves
    kDamaged,   // invalid bytes with a valid record after them, or a valid record out of sequence
  };
  Outcome outcome = Outcome::kClean;
  std::vector<ScannedRecord> records;  // the valid records before `valid_bytes`, in order
  size_t valid_bytes = 0;              // the offset just past the last valid record
  // Unless kClean: what is wrong at `valid_bytes` (or, for kDamaged, where the damage is), e.g.
  // "record 9 at offset 1234: header says 2000 payload bytes, 1963 present".
  std::string problem;
};

// Scans the contents of a journal file whose first record must have `first_seq`, each next one
// the seq after. A record is valid when its length is at most `max_record_bytes`, it fits in
// `data`, its CRC matches and its seq is the expected one. At the first invalid record the scan
// looks for any valid record further on (a plausible header whose seq could follow and whose CRC
// matches) at every later offset: finding one means the bytes in between were damaged (kDamaged);
// finding none means a torn tail. The search costs O(rest) header checks and a CRC only per
// plausible header.
JournalScan ScanJournal(absl::string_view data, uint64_t first_seq, size_t max_record_bytes);

}  // namespace hawk::store

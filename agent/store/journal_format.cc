#include "agent/store/journal_format.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/store/crc32c.h"

namespace hawk::store {
namespace {

void Put32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
void Put64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint32_t Get32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t Get64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint32_t RecordCrc(uint64_t seq, absl::string_view payload) {
  char seq_bytes[8];
  Put64(seq, seq_bytes);
  return Crc32cExtend(Crc32c(absl::string_view(seq_bytes, sizeof(seq_bytes))), payload);
}

struct Header {
  uint32_t length;
  uint32_t crc;
  uint64_t seq;
};

Header DecodeHeader(const char* p) { return Header{Get32(p), Get32(p + 4), Get64(p + 8)}; }

absl::optional<uint64_t> ParseSeq(absl::string_view name, absl::string_view prefix,
                                  absl::string_view suffix) {
  if (!absl::ConsumePrefix(&name, prefix) || !absl::ConsumeSuffix(&name, suffix)) {
    return absl::nullopt;
  }
  // Digits only, and the canonical spelling: "journal-01.log" is not a name hawk writes.
  if (name.empty() || (name.size() > 1 && name[0] == '0')) return absl::nullopt;
  for (char c : name) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return absl::nullopt;
  }
  uint64_t seq = 0;
  if (!absl::SimpleAtoi(name, &seq)) return absl::nullopt;  // overflow
  return seq;
}

}  // namespace

std::string JournalFileName(uint64_t first_seq) {
  return absl::StrCat(kJournalPrefix, first_seq, kJournalSuffix);
}

std::string SnapshotFileName(uint64_t seq) {
  return absl::StrCat(kSnapshotPrefix, seq, kSnapshotSuffix);
}

absl::optional<uint64_t> ParseJournalFileName(absl::string_view name) {
  return ParseSeq(name, kJournalPrefix, kJournalSuffix);
}

absl::optional<uint64_t> ParseSnapshotFileName(absl::string_view name) {
  return ParseSeq(name, kSnapshotPrefix, kSnapshotSuffix);
}

void EncodeRecordHeader(uint64_t seq, absl::string_view payload, char out[kRecordHeaderBytes]) {
  Put32(static_cast<uint32_t>(payload.size()), out);
  Put32(RecordCrc(seq, payload), out + 4);
  Put64(seq, out + 8);
}

JournalScan ScanJournal(absl::string_view data, uint64_t first_seq, size_t max_record_bytes) {
  JournalScan scan;
  uint64_t expected = first_seq;
  size_t offset = 0;
  while (offset < data.size()) {
    size_t rest = data.size() - offset;
    std::string where = absl::StrCat("record ", expected, " at offset ", offset, ": ");
    if (rest < kRecordHeaderBytes) {
      scan.problem = absl::StrCat(where, rest, " bytes, less than a record header");
      break;
    }
    Header header = DecodeHeader(data.data() + offset);
    if (header.length > max_record_bytes) {
      scan.problem = absl::StrCat(where, "header says ", header.length,
                                  " payload bytes, more than the limit of ", max_record_bytes);
      break;
    }
    if (header.length > rest - kRecordHeaderBytes) {
      scan.problem = absl::StrCat(where, "header says ", header.length, " payload bytes, ",
                                  rest - kRecordHeaderBytes, " present");
      break;
    }
    absl::string_view payload = data.substr(offset + kRecordHeaderBytes, header.length);
    if (RecordCrc(header.seq, payload) != header.crc) {
      scan.problem = absl::StrCat(where, "CRC mismatch");
      break;
    }
    if (header.seq != expected) {
      // Intact bytes in the wrong place are never a torn write.
      scan.outcome = JournalScan::Outcome::kDamaged;
      scan.valid_bytes = offset;
      scan.problem = absl::StrCat(where, "a valid record with seq ", header.seq);
      return scan;
    }
    scan.records.push_back(ScannedRecord{header.seq, offset, payload});
    offset += kRecordHeaderBytes + header.length;
    ++expected;
  }
  scan.valid_bytes = offset;
  if (offset == data.size()) return scan;

  // A torn write leaves one incomplete batch at the end and nothing valid after it. A record that
  // could follow has a seq of at least `expected` and at most one per header's worth of bytes
  // beyond it; the seq window makes a CRC computation rare on random bytes.
  size_t rest = data.size() - offset;
  for (size_t at = offset + 1; at + kRecordHeaderBytes <= data.size(); ++at) {
    Header header = DecodeHeader(data.data() + at);
    if (header.length > max_record_bytes || header.length > data.size() - at - kRecordHeaderBytes) {
      continue;
    }
    if (header.seq < expected || header.seq - expected > rest / kRecordHeaderBytes) continue;
    if (RecordCrc(header.seq, data.substr(at + kRecordHeaderBytes, header.length)) != header.crc) {
      continue;
    }
    scan.outcome = JournalScan::Outcome::kDamaged;
    scan.problem = absl::StrCat(scan.problem, ", and a valid record (seq ", header.seq,
                                ") follows at offset ", at);
    return scan;
  }
  scan.outcome = JournalScan::Outcome::kTornTail;
  return scan;
}

}  // namespace hawk::store

#pragma once

// The records and snapshots of the journal crash test, derived from their seq alone, so that the
// test can check every byte that survived a SIGKILL without talking to the child.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace hawk::store::crash {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Mostly small records, some of tens of KiB, a few of a few hundred and one in fifty of a few
// MiB (whose write takes long enough for a SIGKILL to land inside it): batches then tear at
// every kind of boundary.
inline size_t PayloadSize(uint64_t seq) {
  uint64_t h = SplitMix64(seq);
  if (h % 50 == 0) return (1 << 20) + (h >> 8) % (3 << 20);
  switch (h % 10) {
    case 9:
      return 20000 + (h >> 8) % 200000;
    case 7:
    case 8:
      return 1000 + (h >> 8) % 19000;
    default:
      return (h >> 8) % 300;  // 0 included
  }
}

inline std::string Payload(uint64_t seq) {
  std::string payload = absl::StrCat("record ", seq, ":");
  size_t size = PayloadSize(seq);
  uint64_t state = seq;
  while (payload.size() < size) {
    state = SplitMix64(state);
    for (int i = 0; i < 8; ++i) payload.push_back(static_cast<char>((state >> (8 * i)) & 0xFF));
  }
  payload.resize(size);
  return payload;
}

inline std::string SnapshotPayload(uint64_t seq, size_t bytes) {
  std::string snapshot = absl::StrCat("{\"snapshot_seq\":", seq, "}\n");
  snapshot.resize(std::max(bytes, snapshot.size()), static_cast<char>('a' + seq % 26));
  return snapshot;
}

}  // namespace hawk::store::crash

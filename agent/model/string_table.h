#pragma once

// StringTable: a compact key → value table of byte strings, for the desired content of one map
// (key → value) or one ACL (pattern → ""). At ingress scale a map holds 100,000 entries; a
// flat_hash_map<std::string, std::string> spends about 110 bytes on each (two 32-byte string
// objects, a heap block for every key longer than 15 bytes, the table's slack). Here an entry is
// its bytes once, in one arena, behind a 4-byte slot: about 10 bytes of overhead.
//
// Layout: `arena_` holds records [u16 key length][u16 value length][key][value]; the index is a
// flat_hash_set of arena offsets whose hash and equality look through the arena, so lookups take
// a string_view and never allocate. Replacing or erasing an entry leaves its old record as
// garbage, marked dead (the key length's top bit); once garbage outweighs live bytes the arena is
// rewritten (amortised O(1) per change). Iteration walks the arena, so entries come in the order
// they were first set, and copies and rewrites keep that order: a table built from a document
// holds its entries in the document's order, which FindEntry's cursor turns into sequential reads
// when the next document lists them in the same order.
//
// Views returned by Find() and the iteration functions stay valid until the next mutation.
// Keys and values are at most kMaxBytes each (the model's per-entry limit is lower).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace hawk::model {

class StringTable {
 public:
  static constexpr size_t kMaxBytes = 0x7FFF;

  StringTable();
  StringTable(const StringTable& other);
  StringTable& operator=(const StringTable& other);
  StringTable(StringTable&& other) noexcept;
  StringTable& operator=(StringTable&& other) noexcept;
  ~StringTable() = default;

  // Inserts `key` → `value` or replaces its value. Returns the previous value, if there was one.
  // Sizes beyond kMaxBytes are a programmer error (validation runs before).
  absl::optional<std::string> Set(absl::string_view key, absl::string_view value);
  // Removes `key`; returns its value, or nullopt when it was absent.
  absl::optional<std::string> Erase(absl::string_view key);

  absl::optional<absl::string_view> Find(absl::string_view key) const;
  bool Contains(absl::string_view key) const { return Find(key).has_value(); }
  size_t size() const { return index_.size(); }
  bool empty() const { return index_.empty(); }
  void Reserve(size_t entries, size_t bytes);

  // Every entry, in the order they were first set: f(key, value).
  template <typename F>
  void ForEach(F&& f) const {
    ForEachWithId([&](uint32_t id, absl::string_view key) { f(key, ValueAt(id)); });
  }
  // Entry ids, for one pass that marks entries without copying keys (a whole-state document
  // diffed against the table: which entries did it list?). An id is below id_limit(), and two
  // entries have different ids; ids change with every mutation.
  struct Entry {
    uint32_t id;
    absl::string_view value;
  };
  absl::optional<Entry> FindEntry(absl::string_view key) const;
  // The same, trying first the entry after the one the previous call found (`*cursor`, 0 to
  // start): a list in the table's own order is then read sequentially instead of one cache miss
  // per lookup in the index.
  absl::optional<Entry> FindEntry(absl::string_view key, uint32_t* cursor) const;
  size_t id_limit() const { return arena_->size(); }
  // Every entry with its id, in the order they were first set: f(id, key).
  template <typename F>
  void ForEachWithId(F&& f) const {
    const std::string& arena = *arena_;
    for (size_t offset = 0; offset < arena.size(); offset += RecordBytesAt(arena, offset)) {
      if (IsLive(arena, offset)) f(static_cast<uint32_t>(offset), KeyIn(arena, offset));
    }
  }
  // Every entry sorted by key (byte order): for canonical output and deterministic plans.
  std::vector<std::pair<absl::string_view, absl::string_view>> Sorted() const;

  // Same entries, whatever the arena layout.
  friend bool operator==(const StringTable& a, const StringTable& b);

  // Heap bytes held (arena capacity, index slots and control bytes), for the memory report.
  size_t MemoryBytes() const;

 private:
  // The arena lives on the heap so that the index's hasher, which points at it, stays valid when
  // the table moves (tables live in a hash map of maps, which moves them when it grows).
  struct Hash {
    using is_transparent = void;
    const std::string* arena;
    size_t operator()(uint32_t offset) const;
    size_t operator()(absl::string_view key) const;
  };
  struct Eq {
    using is_transparent = void;
    const std::string* arena;
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(uint32_t a, absl::string_view b) const { return KeyIn(*arena, a) == b; }
    bool operator()(absl::string_view a, uint32_t b) const { return a == KeyIn(*arena, b); }
  };
  using Index = absl::flat_hash_set<uint32_t, Hash, Eq>;

  static uint16_t LengthAt(const char* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static constexpr uint16_t kDead = 0x8000;  // in the key length: the record is garbage
  static size_t KeyLength(const char* p) { return LengthAt(p) & ~kDead; }
  static bool IsLive(const std::string& arena, size_t offset) {
    return (LengthAt(arena.data() + offset) & kDead) == 0;
  }
  static size_t RecordBytesAt(const std::string& arena, size_t offset) {
    const char* p = arena.data() + offset;
    return 4 + KeyLength(p) + LengthAt(p + 2);
  }
  static absl::string_view KeyIn(const std::string& arena, uint32_t offset) {
    const char* p = arena.data() + offset;
    return absl::string_view(p + 4, KeyLength(p));
  }
  static absl::string_view ValueIn(const std::string& arena, uint32_t offset) {
    const char* p = arena.data() + offset;
    return absl::string_view(p + 4 + KeyLength(p), LengthAt(p + 2));
  }
  void MarkDead(uint32_t offset);
  absl::string_view KeyAt(uint32_t offset) const { return KeyIn(*arena_, offset); }
  absl::string_view ValueAt(uint32_t offset) const { return ValueIn(*arena_, offset); }
  uint32_t Append(absl::string_view key, absl::string_view value);
  static size_t RecordBytes(absl::string_view key, absl::string_view value);
  void MaybeCompact();
  void Reset();  // empty, with a fresh arena and an index bound to it

  std::unique_ptr<std::string> arena_;
  size_t garbage_bytes_ = 0;
  Index index_;
};

}  // namespace hawk::model

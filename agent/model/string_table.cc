#include "agent/model/string_table.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "absl/hash/hash.h"

namespace hawk::model {
namespace {

constexpr size_t kHeaderBytes = 4;  // u16 key length, u16 value length
// Below this much garbage the arena is never rewritten: small tables churn cheaply.
constexpr size_t kMinGarbageToCompact = 64 * 1024;

}  // namespace

StringTable::StringTable() { Reset(); }

StringTable::StringTable(const StringTable& other) : StringTable() { *this = other; }

StringTable& StringTable::operator=(const StringTable& other) {
  if (this == &other) return *this;
  Reset();
  Reserve(other.size(), other.arena_->size() - other.garbage_bytes_);
  other.ForEach([this](absl::string_view key, absl::string_view value) { Set(key, value); });
  return *this;
}

StringTable::StringTable(StringTable&& other) noexcept
    : arena_(std::move(other.arena_)),
      garbage_bytes_(other.garbage_bytes_),
      index_(std::move(other.index_)) {
  other.Reset();
}

StringTable& StringTable::operator=(StringTable&& other) noexcept {
  if (this == &other) return *this;
  arena_ = std::move(other.arena_);
  garbage_bytes_ = other.garbage_bytes_;
  index_ = std::move(other.index_);
  other.Reset();
  return *this;
}

void StringTable::Reset() {
  arena_ = std::make_unique<std::string>();
  garbage_bytes_ = 0;
  index_ = Index(0, Hash{arena_.get()}, Eq{arena_.get()});
}

size_t StringTable::Hash::operator()(uint32_t offset) const {
  return absl::Hash<absl::string_view>{}(KeyIn(*arena, offset));
}

size_t StringTable::Hash::operator()(absl::string_view key) const {
  return absl::Hash<absl::string_view>{}(key);
}

size_t StringTable::RecordBytes(absl::string_view key, absl::string_view value) {
  return kHeaderBytes + key.size() + value.size();
}

uint32_t StringTable::Append(absl::string_view key, absl::string_view value) {
  assert(key.size() <= kMaxBytes && value.size() <= kMaxBytes);
  // Offsets are 32-bit: 100,000 entries of 2 × 4 KiB at most stay far below 4 GiB.
  assert(arena_->size() + RecordBytes(key, value) < UINT32_MAX);
  auto offset = static_cast<uint32_t>(arena_->size());
  uint16_t lengths[2] = {static_cast<uint16_t>(key.size()), static_cast<uint16_t>(value.size())};
  arena_->append(reinterpret_cast<const char*>(lengths), sizeof lengths);
  arena_->append(key.data(), key.size());
  arena_->append(value.data(), value.size());
  return offset;
}

absl::optional<std::string> StringTable::Set(absl::string_view key, absl::string_view value) {
  // Views into this table's own arena would dangle once Append reallocates it: copy them first.
  auto inside = [this](absl::string_view v) {
    const char* begin = arena_->data();
    return v.data() >= begin && v.data() < begin + arena_->size();
  };
  if (inside(key) || inside(value)) {
    std::string key_copy(key), value_copy(value);
    return Set(key_copy, value_copy);
  }
  auto it = index_.find(key);
  if (it == index_.end()) {
    index_.insert(Append(key, value));
    return absl::nullopt;
  }
  uint32_t old = *it;
  absl::string_view old_value = ValueAt(old);
  std::string previous(old_value);
  if (old_value == value) return previous;
  // The new record may reallocate the arena: take the old one's size first.
  size_t old_bytes = RecordBytes(key, old_value);
  index_.erase(it);
  MarkDead(old);
  index_.insert(Append(key, value));
  garbage_bytes_ += old_bytes;
  MaybeCompact();
  return previous;
}

absl::optional<std::string> StringTable::Erase(absl::string_view key) {
  auto it = index_.find(key);
  if (it == index_.end()) return absl::nullopt;
  std::string previous(ValueAt(*it));
  garbage_bytes_ += RecordBytes(key, previous);
  uint32_t offset = *it;
  index_.erase(it);
  MarkDead(offset);
  MaybeCompact();
  return previous;
}

absl::optional<absl::string_view> StringTable::Find(absl::string_view key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return absl::nullopt;
  return ValueAt(*it);
}

void StringTable::MarkDead(uint32_t offset) {
  uint16_t length = LengthAt(arena_->data() + offset) | kDead;
  std::memcpy(arena_->data() + offset, &length, sizeof length);
}

absl::optional<StringTable::Entry> StringTable::FindEntry(absl::string_view key,
                                                          uint32_t* cursor) const {
  const std::string& arena = *arena_;
  size_t at = *cursor;
  if (at < arena.size() && IsLive(arena, at) && KeyIn(arena, at) == key) {
    *cursor = static_cast<uint32_t>(at + RecordBytesAt(arena, at));
    return Entry{static_cast<uint32_t>(at), ValueIn(arena, at)};
  }
  absl::optional<Entry> found = FindEntry(key);
  if (found) *cursor = static_cast<uint32_t>(found->id + RecordBytesAt(arena, found->id));
  return found;
}

absl::optional<StringTable::Entry> StringTable::FindEntry(absl::string_view key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return absl::nullopt;
  return Entry{*it, ValueAt(*it)};
}

void StringTable::Reserve(size_t entries, size_t bytes) {
  index_.reserve(entries);
  arena_->reserve(bytes + entries * kHeaderBytes);
}

void StringTable::MaybeCompact() {
  size_t live = arena_->size() - garbage_bytes_;
  if (garbage_bytes_ < kMinGarbageToCompact || garbage_bytes_ < live) return;
  StringTable fresh;
  fresh.Reserve(size(), live);
  ForEach([&fresh](absl::string_view key, absl::string_view value) {
    fresh.index_.insert(fresh.Append(key, value));
  });
  *this = std::move(fresh);
}

std::vector<std::pair<absl::string_view, absl::string_view>> StringTable::Sorted() const {
  std::vector<std::pair<absl::string_view, absl::string_view>> out;
  out.reserve(size());
  ForEach([&out](absl::string_view key, absl::string_view value) { out.emplace_back(key, value); });
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

bool operator==(const StringTable& a, const StringTable& b) {
  if (a.size() != b.size()) return false;
  for (uint32_t offset : a.index_) {
    absl::optional<absl::string_view> other = b.Find(a.KeyAt(offset));
    if (!other || *other != a.ValueAt(offset)) return false;
  }
  return true;
}

size_t StringTable::MemoryBytes() const {
  // flat_hash_set: one slot and one control byte per bucket.
  return arena_->capacity() + index_.capacity() * (sizeof(uint32_t) + 1);
}

}  // namespace hawk::model

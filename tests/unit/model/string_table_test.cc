#include "agent/model/string_table.h"

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::model {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

using Entries = std::vector<std::pair<absl::string_view, absl::string_view>>;

// Every entry through ForEach, as an ordered map (to compare with a reference).
std::map<std::string, std::string> Contents(const StringTable& table) {
  std::map<std::string, std::string> out;
  table.ForEach([&out](absl::string_view key, absl::string_view value) {
    EXPECT_TRUE(out.emplace(key, value).second) << "key listed twice: " << key;
  });
  return out;
}

// Checks `table` against `reference` through every read path.
void ExpectHolds(const StringTable& table, const std::map<std::string, std::string>& reference) {
  EXPECT_EQ(table.size(), reference.size());
  EXPECT_EQ(table.empty(), reference.empty());
  EXPECT_EQ(Contents(table), reference);
  for (const auto& [key, value] : reference) {
    absl::optional<absl::string_view> found = table.Find(key);
    ASSERT_TRUE(found.has_value()) << key;
    EXPECT_EQ(*found, value) << key;
  }
  std::vector<std::pair<absl::string_view, absl::string_view>> sorted = table.Sorted();
  ASSERT_EQ(sorted.size(), reference.size());
  auto it = reference.begin();
  for (const auto& [key, value] : sorted) {
    EXPECT_EQ(key, it->first);
    EXPECT_EQ(value, it->second);
    ++it;
  }
}

TEST(StringTableTest, SetReplaceEraseFind) {
  StringTable table;
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.Find("a"), absl::nullopt);
  EXPECT_EQ(table.Set("a", "1"), absl::nullopt);  // inserted
  EXPECT_EQ(table.Set("b", "2"), absl::nullopt);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.Find("a"), absl::string_view("1"));
  EXPECT_TRUE(table.Contains("b"));
  EXPECT_FALSE(table.Contains("c"));

  EXPECT_EQ(table.Set("a", "one"), "1");  // replaced: the previous value
  EXPECT_EQ(table.Find("a"), absl::string_view("one"));
  EXPECT_EQ(table.Set("a", "one"), "one");  // the same value again
  EXPECT_EQ(table.size(), 2u);

  EXPECT_EQ(table.Erase("a"), "one");
  EXPECT_EQ(table.Erase("a"), absl::nullopt);
  EXPECT_EQ(table.Erase("never"), absl::nullopt);
  EXPECT_FALSE(table.Contains("a"));
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Set("a", "again"), absl::nullopt);  // absent after the erase
  ExpectHolds(table, {{"a", "again"}, {"b", "2"}});
}

TEST(StringTableTest, HoldsAnyBytesUpToTheLimit) {
  StringTable table;
  std::string nul("a\0b", 3);
  std::string max_key(StringTable::kMaxBytes, 'k');
  std::string max_value(StringTable::kMaxBytes, 'v');
  table.Set("", "empty key");
  table.Set("empty value", "");
  table.Set(nul, nul);
  table.Set("a", "");  // a prefix of another key is another key
  table.Set(max_key, max_value);
  table.Set("\xff\xfe", "é 日本 😀");
  EXPECT_EQ(table.Find(""), absl::string_view("empty key"));
  EXPECT_EQ(table.Find("empty value"), absl::string_view(""));
  EXPECT_EQ(table.Find(nul), absl::string_view(nul));
  EXPECT_EQ(table.Find("a"), absl::string_view(""));
  EXPECT_EQ(table.Find(absl::string_view("a\0", 2)), absl::nullopt);
  EXPECT_EQ(table.Find(max_key), absl::string_view(max_value));
  EXPECT_EQ(table.Find(max_key.substr(1)), absl::nullopt);
  ExpectHolds(table, {{"", "empty key"},
                      {"empty value", ""},
                      {nul, nul},
                      {"a", ""},
                      {max_key, max_value},
                      {"\xff\xfe", "é 日本 😀"}});
}

TEST(StringTableTest, SortedIsByteOrder) {
  StringTable table;
  for (absl::string_view key : {"b", "\xc3\xa9", "a", "B", "", "ab", "a b", "\x01"}) {
    table.Set(key, absl::StrCat("v", key));
  }
  // Unsigned bytes: 0xc3 sorts after every ASCII byte.
  EXPECT_THAT(table.Sorted(), ElementsAre(Pair("", "v"), Pair("\x01", "v\x01"), Pair("B", "vB"),
                                          Pair("a", "va"), Pair("a b", "va b"), Pair("ab", "vab"),
                                          Pair("b", "vb"), Pair("\xc3\xa9", "v\xc3\xa9")));
  EXPECT_THAT(StringTable().Sorted(), ElementsAre());
}

TEST(StringTableTest, ViewsPointIntoTheTable) {
  StringTable table;
  table.Set("key", "value");
  absl::optional<absl::string_view> value = table.Find("key");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, "value");
  // Views stay valid until the next mutation: reading through them again is fine.
  Entries sorted = table.Sorted();
  EXPECT_EQ(sorted[0].first.data(), table.Sorted()[0].first.data());
  EXPECT_EQ(*value, "value");
  // Copied out, they survive mutations.
  std::string copied(*value);
  for (int i = 0; i < 1000; ++i) table.Set(absl::StrCat("k", i), "x");
  EXPECT_EQ(table.Find("key"), absl::string_view(copied));
}

TEST(StringTableTest, CopiesAreIndependent) {
  StringTable a;
  for (int i = 0; i < 100; ++i) a.Set(absl::StrCat("k", i), absl::StrCat("v", i));
  a.Erase("k7");
  a.Set("k8", "replaced");
  StringTable b(a);
  EXPECT_EQ(a, b);
  EXPECT_EQ(Contents(a), Contents(b));
  b.Set("k1", "only in b");
  b.Erase("k2");
  EXPECT_EQ(a.Find("k1"), absl::string_view("v1"));
  EXPECT_TRUE(a.Contains("k2"));
  EXPECT_FALSE(a == b);

  StringTable c;
  c.Set("x", "y");
  c = a;  // copy-assign over an existing table
  EXPECT_EQ(c, a);
  EXPECT_FALSE(c.Contains("x"));
  c.Set("new", "1");
  EXPECT_FALSE(a.Contains("new"));
  StringTable& alias = c;
  c = alias;  // self-assignment keeps the content
  EXPECT_EQ(c.size(), a.size() + 1);
  EXPECT_EQ(c.Find("new"), absl::string_view("1"));
}

// The index's hasher points at the arena: a moved table must keep finding its keys, and the
// moved-from one must be a usable empty table.
TEST(StringTableTest, MovesKeepTheIndexWorking) {
  std::map<std::string, std::string> reference;
  StringTable a;
  for (int i = 0; i < 1000; ++i) {
    std::string key = absl::StrCat("key-", i), value = absl::StrCat("value-", i * 7);
    a.Set(key, value);
    reference[key] = value;
  }
  StringTable b(std::move(a));
  ExpectHolds(b, reference);
  // The moved-to table keeps working through mutations (which rehash its index).
  for (int i = 1000; i < 3000; ++i) {
    std::string key = absl::StrCat("key-", i);
    b.Set(key, "x");
    reference[key] = "x";
  }
  ExpectHolds(b, reference);
  // The moved-from table is empty and usable (a fresh arena and index).
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the documented state
  EXPECT_EQ(a.Find("key-1"), absl::nullopt);
  a.Set("fresh", "1");
  EXPECT_EQ(a.Find("fresh"), absl::string_view("1"));
  EXPECT_EQ(a.size(), 1u);

  StringTable c;
  c.Set("old", "gone");
  c = std::move(b);
  EXPECT_FALSE(c.Contains("old"));
  ExpectHolds(c, reference);
  b.Set("b again", "2");  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.size(), 1u);
  EXPECT_EQ(b.Find("b again"), absl::string_view("2"));

  std::swap(a, c);
  ExpectHolds(a, reference);
  EXPECT_EQ(c.Find("fresh"), absl::string_view("1"));
}

// Maps and ACLs live in a flat_hash_map of tables, which moves every table when it grows.
TEST(StringTableTest, TablesInAGrowingHashMapKeepWorking) {
  absl::flat_hash_map<std::string, StringTable> tables;
  std::vector<const void*> first_slots;
  for (int t = 0; t < 200; ++t) {
    StringTable& table = tables[absl::StrCat("/map-", t)];
    for (int i = 0; i < 20; ++i) table.Set(absl::StrCat("k", i), absl::StrCat(t, "/", i));
  }
  tables.rehash(4096);  // move every table once more
  ASSERT_EQ(tables.size(), 200u);
  for (int t = 0; t < 200; ++t) {
    StringTable& table = tables.at(absl::StrCat("/map-", t));
    ASSERT_EQ(table.size(), 20u);
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(table.Find(absl::StrCat("k", i)), absl::string_view(absl::StrCat(t, "/", i)));
    }
    // A mutation after the move (the index rehashes through the hasher's arena pointer).
    for (int i = 20; i < 100; ++i) table.Set(absl::StrCat("k", i), "late");
    EXPECT_EQ(table.Find("k99"), absl::string_view("late"));
    EXPECT_EQ(table.Find("k0"), absl::string_view(absl::StrCat(t, "/0")));
  }
  // A copy of the whole map: every table copied with its own arena.
  absl::flat_hash_map<std::string, StringTable> copy = tables;
  tables.clear();
  EXPECT_EQ(copy.at("/map-3").Find("k5"), absl::string_view("3/5"));
}

// Replacing and erasing leave garbage in the arena; a rewrite keeps it bounded and keeps the
// content.
TEST(StringTableTest, CompactionAfterHeavyChurnKeepsTheContent) {
  std::mt19937 rng(7);
  StringTable table;
  std::map<std::string, std::string> reference;
  auto value_of = [&](int round) { return absl::StrCat(std::string(80, 'v'), round); };
  for (int i = 0; i < 2000; ++i) {
    table.Set(absl::StrCat("key-", i), value_of(0));
    reference[absl::StrCat("key-", i)] = value_of(0);
  }
  size_t live_bytes = 0;
  for (const auto& [key, value] : reference) live_bytes += 4 + key.size() + value.size();
  size_t max_memory = 0;
  for (int round = 1; round <= 100; ++round) {
    for (int n = 0; n < 2000; ++n) {
      std::string key = absl::StrCat("key-", rng() % 2500);
      if (rng() % 5 == 0) {
        EXPECT_EQ(table.Erase(key).has_value(), reference.erase(key) == 1);
      } else {
        table.Set(key, value_of(round));
        reference[key] = value_of(round);
      }
    }
    max_memory = std::max(max_memory, table.MemoryBytes());
    if (round % 10 == 0) ExpectHolds(table, reference);
  }
  ExpectHolds(table, reference);
  // About 20 MB went through the arena; it never held more than a small multiple of what is
  // live (garbage is rewritten once it outweighs the live bytes).
  EXPECT_LT(max_memory, 6 * live_bytes + (256 << 10)) << "live " << live_bytes;
}

TEST(StringTableTest, EqualityIgnoresTheLayout) {
  StringTable a, b;
  for (int i = 0; i < 500; ++i) a.Set(absl::StrCat("k", i), absl::StrCat("v", i));
  // The same entries, inserted in reverse order after churn that leaves garbage behind.
  for (int i = 0; i < 800; ++i) b.Set(absl::StrCat("k", i), "junk");
  for (int i = 799; i >= 500; --i) b.Erase(absl::StrCat("k", i));
  for (int i = 499; i >= 0; --i) b.Set(absl::StrCat("k", i), absl::StrCat("v", i));
  EXPECT_EQ(a, b);
  EXPECT_EQ(b, a);
  StringTable reserved;
  reserved.Reserve(10000, 1 << 20);
  for (int i = 0; i < 500; ++i) reserved.Set(absl::StrCat("k", i), absl::StrCat("v", i));
  EXPECT_EQ(a, reserved);

  b.Set("k3", "other");
  EXPECT_FALSE(a == b);  // a value differs
  b.Set("k3", "v3");
  EXPECT_EQ(a, b);
  b.Set("extra", "");
  EXPECT_FALSE(a == b);  // a superset
  EXPECT_FALSE(b == a);
  b.Erase("extra");
  b.Erase("k0");
  b.Set("k0 ", "v0");  // same size, another key
  EXPECT_FALSE(a == b);
  EXPECT_EQ(StringTable(), StringTable());
  StringTable emptied;
  emptied.Set("x", "y");
  emptied.Erase("x");
  EXPECT_EQ(emptied, StringTable());
}

// 100,000 entries of about 30 bytes cost about their bytes plus a 4-byte slot each (a
// flat_hash_map<std::string, std::string> would spend about 11 MB).
TEST(StringTableTest, MemoryIsRoughlyProportionalToTheBytes) {
  StringTable table;
  EXPECT_LT(table.MemoryBytes(), 1024u);
  size_t text_bytes = 0;
  for (int i = 0; i < 100000; ++i) {
    std::string key = absl::StrCat("host-", 100000 + i, ".example.com");  // 22 bytes
    std::string value = absl::StrCat("be_", i % 1000);                    // 4 to 6 bytes
    text_bytes += key.size() + value.size();
    table.Set(key, value);
  }
  EXPECT_EQ(table.size(), 100000u);
  EXPECT_GT(text_bytes, 2'700'000u);
  EXPECT_LT(table.MemoryBytes(), 5'000'000u);
  EXPECT_GT(table.MemoryBytes(), text_bytes);
  // Reserved up front, the arena holds exactly the records.
  StringTable reserved;
  reserved.Reserve(100000, text_bytes);
  table.ForEach([&](absl::string_view k, absl::string_view v) { reserved.Set(k, v); });
  EXPECT_LT(reserved.MemoryBytes(), text_bytes + 100000 * 4 + 800'000);
  EXPECT_EQ(reserved, table);
}

}  // namespace
}  // namespace hawk::model

#include "agent/parse/maps.h"

#include <iterator>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::parse {
namespace {

// Whole tables collected from the visitors hawk uses, for readable assertions.
struct MapEntry {
  std::string ref;    // "0x557909023000": `#<ref>` names the entry in `set/del map`
  std::string key;    // the first word
  std::string value;  // the rest of the line, may be empty or hold spaces
};

struct AclEntry {
  std::string ref;
  std::string pattern;  // the rest of the line
};

absl::StatusOr<std::vector<MapEntry>> ParseMapEntries(absl::string_view reply) {
  std::vector<MapEntry> entries;
  absl::Status status = ForEachMapEntry(
      reply, [&](absl::string_view ref, absl::string_view key, absl::string_view value) {
        entries.push_back(MapEntry{std::string(ref), std::string(key), std::string(value)});
      });
  if (!status.ok()) return status;
  return entries;
}

absl::StatusOr<std::vector<AclEntry>> ParseAclEntries(absl::string_view reply) {
  std::vector<AclEntry> entries;
  absl::Status status = ForEachAclEntry(reply, [&](absl::string_view ref, absl::string_view p) {
    entries.push_back(AclEntry{std::string(ref), std::string(p)});
  });
  if (!status.ok()) return status;
  return entries;
}

using testing::Endings;
using ::testing::HasSubstr;
using testing::kVersions;
using testing::ReadFixture;

TEST(MapsTest, MapListFixtures) {
  // The map's unique id depends on how many pattern references came before it.
  const int ids[] = {4, 6, 6, 6};
  static_assert(std::size(ids) == std::size(kVersions));
  for (size_t v = 0; v < std::size(kVersions); ++v) {
    for (const std::string& reply :
         Endings(ReadFixture(kVersions[v], "worker_show_map_list.txt"))) {
      SCOPED_TRACE(absl::StrCat(kVersions[v], " ending ", reply.size()));
      absl::StatusOr<std::vector<PatternRefInfo>> list = ParseMapList(reply);
      ASSERT_TRUE(list.ok()) << list.status();
      ASSERT_EQ(list->size(), 1u);
      const PatternRefInfo& map = (*list)[0];
      EXPECT_EQ(map.id, ids[v]);
      EXPECT_EQ(map.file, "/etc/haproxy/hosts.map");
      EXPECT_EQ(map.description,
                "pattern loaded from file '/etc/haproxy/hosts.map' used by map at file "
                "'/etc/haproxy/h.cfg' line 13");
      EXPECT_EQ(map.curr_ver, 0);
      EXPECT_EQ(map.next_ver, 0);
      EXPECT_EQ(map.entry_cnt, 2);
    }
  }
}

TEST(MapsTest, AclListFixtures) {
  // 2.6 lists two httpclient ACLs, 3.x four.
  const size_t counts[] = {4, 6, 6, 6};
  static_assert(std::size(counts) == std::size(kVersions));
  for (size_t v = 0; v < std::size(kVersions); ++v) {
    SCOPED_TRACE(kVersions[v]);
    absl::StatusOr<std::vector<PatternRefInfo>> list =
        ParseAclList(ReadFixture(kVersions[v], "worker_show_acl_list.txt"));
    ASSERT_TRUE(list.ok()) << list.status();
    ASSERT_EQ(list->size(), counts[v]);
    EXPECT_EQ((*list)[0].id, 0);
    EXPECT_EQ((*list)[0].file, "/etc/haproxy/blocked.acl");
    EXPECT_EQ((*list)[0].entry_cnt, 2);
    // An inline ACL has no file.
    EXPECT_EQ((*list)[1].id, 1);
    EXPECT_EQ((*list)[1].file, "");
    EXPECT_EQ((*list)[1].description, "acl 'src' file '/etc/haproxy/h.cfg' line 11");
    EXPECT_EQ((*list)[1].entry_cnt, 0);
    EXPECT_EQ((*list)[2].description, "acl 'var' file 'httpclient' line 0");
    EXPECT_EQ((*list)[2].entry_cnt, 1);
  }
}

TEST(MapsTest, MapEntriesFixtures) {
  for (absl::string_view version : kVersions) {
    for (const std::string& reply : Endings(ReadFixture(version, "worker_show_map_entries.txt"))) {
      SCOPED_TRACE(absl::StrCat(version, " ending ", reply.size()));
      absl::StatusOr<std::vector<MapEntry>> entries = ParseMapEntries(reply);
      ASSERT_TRUE(entries.ok()) << entries.status();
      ASSERT_EQ(entries->size(), 2u);
      EXPECT_EQ((*entries)[0].key, "a.example.com");
      EXPECT_EQ((*entries)[0].value, "be_app");
      EXPECT_EQ((*entries)[1].key, "b.example.com");
      EXPECT_EQ((*entries)[1].value, "be_other");
      EXPECT_THAT((*entries)[0].ref, ::testing::StartsWith("0x"));
    }
  }
  absl::StatusOr<std::vector<MapEntry>> two_six =
      ParseMapEntries(ReadFixture("2.6", "worker_show_map_entries.txt"));
  ASSERT_TRUE(two_six.ok());
  EXPECT_EQ((*two_six)[0].ref, "0x560517028810");
}

TEST(MapsTest, MapEntryValues) {
  absl::StatusOr<std::vector<MapEntry>> entries =
      ParseMapEntries("0x1 k value with  spaces \n0x2 only_key\n0x3 k2 \n0xABCdef k3 v3\n\n");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].value, "value with  spaces ");  // the rest of the line, as is
  EXPECT_EQ((*entries)[1].key, "only_key");
  EXPECT_EQ((*entries)[1].value, "");
  EXPECT_EQ((*entries)[2].value, "");
  EXPECT_EQ((*entries)[3].ref, "0xABCdef");
  absl::StatusOr<std::vector<MapEntry>> empty = ParseMapEntries("\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(MapsTest, AclEntries) {
  absl::StatusOr<std::vector<AclEntry>> entries =
      ParseAclEntries("0x55d0c1f2a010 10.0.0.0/8\n0x55d0c1f2a0a0 a b\n\n");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].ref, "0x55d0c1f2a010");
  EXPECT_EQ((*entries)[0].pattern, "10.0.0.0/8");
  EXPECT_EQ((*entries)[1].pattern, "a b");
}

TEST(MapsTest, ListWithoutVersionFields) {
  absl::StatusOr<std::vector<PatternRefInfo>> list =
      ParseMapList("# id (file) description\n-1 (/x (1).map) loaded from somewhere\n2 (y)\n");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, -1);
  EXPECT_EQ((*list)[0].file, "/x (1).map");
  EXPECT_EQ((*list)[0].description, "loaded from somewhere");
  EXPECT_EQ((*list)[0].curr_ver, -1);
  EXPECT_EQ((*list)[0].entry_cnt, -1);
  EXPECT_EQ((*list)[1].file, "y");
  EXPECT_EQ((*list)[1].description, "");
}

TEST(MapsTest, ListAfterCommit) {
  absl::StatusOr<std::vector<PatternRefInfo>> list = ParseMapList(
      "# id (file) description\n"
      "6 (/etc/haproxy/hosts.map) pattern loaded from file '/etc/haproxy/hosts.map' used by map "
      "at file '/etc/haproxy/h.cfg' line 13. curr_ver=3 next_ver=3 entry_cnt=1000 new_thing=x\n");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ((*list)[0].curr_ver, 3);
  EXPECT_EQ((*list)[0].next_ver, 3);
  EXPECT_EQ((*list)[0].entry_cnt, 1000);
}

TEST(MapsTest, Errors) {
  struct Bad {
    std::string reply;
    std::string message;
  };
  const std::vector<Bad> lists = {
      {"", "empty reply"},
      {"4 (/f) d\n", "header"},
      {"Unknown command, but maybe one of the following ones is a better match:\n", "header"},
      {"# id (file) description\nx (/f) d\n", "expected an id"},
      {"# id (file) description\n4\n", "expected an id"},
      {"# id (file) description\n99999999999 (/f) d\n", "expected an id"},
      {"# id (file) description\n4 /f d\n", "expected \"(file)\""},
      {"# id (file) description\n4 (/f d\n", "expected \"(file)\""},
      {"# id (file) description\n4 (/f) d. curr_ver=x next_ver=0\n", "curr_ver"},
      {"# id (file) description\n4 (/f) d. curr_ver=0 entry_cnt=-1\n", "entry_cnt"},
  };
  for (const Bad& bad : lists) {
    SCOPED_TRACE(bad.reply);
    absl::StatusOr<std::vector<PatternRefInfo>> list = ParseMapList(bad.reply);
    ASSERT_FALSE(list.ok());
    EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(list.status().message(), HasSubstr(bad.message));
    EXPECT_THAT(list.status().message(), HasSubstr("show map"));
  }
  EXPECT_THAT(ParseAclList("").status().message(), HasSubstr("show acl"));

  const std::vector<Bad> entries = {
      {"Unknown map identifier. Please use #<id> or <file>.\n\n", "line 1"},
      {"0x key value\n", "0x"},
      {"0xzz key value\n", "0x"},
      {"0x12345678901234567 key value\n", "0x"},
      {"0x1\n", "expected a key"},
      {"0x1  value\n", "expected a key"},
      {"0x1 k v\n\n0x2 k v\n", "empty line"},
      {"key value\n", "0x"},
  };
  for (const Bad& bad : entries) {
    SCOPED_TRACE(bad.reply);
    absl::StatusOr<std::vector<MapEntry>> parsed = ParseMapEntries(bad.reply);
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.status().message(), HasSubstr(bad.message));
    EXPECT_THAT(parsed.status().message(), HasSubstr("show map <map>"));
  }
  EXPECT_THAT(ParseAclEntries("0x1\n").status().message(), HasSubstr("expected a pattern"));
  EXPECT_THAT(
      ParseAclEntries("Unknown ACL identifier. Please use #<id> or <file>.\n").status().message(),
      HasSubstr("show acl <acl>"));
}

}  // namespace
}  // namespace hawk::parse

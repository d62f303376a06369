#include "agent/plan/table_file.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::plan {
namespace {

using ::testing::HasSubstr;

model::StringTable Table(std::initializer_list<std::pair<std::string, std::string>> entries) {
  model::StringTable table;
  for (const auto& [key, value] : entries) table.Set(key, value);
  return table;
}

TEST(TableFileTest, MapLinesAreSortedKeyThenValue) {
  auto file = RenderTableFile(
      /*acl=*/false, Table({{"b.example.com", "be_b"}, {"a.example.com", "be a;x\\y"}, {"e", ""}}));
  ASSERT_TRUE(file.ok()) << file.status();
  // The value is the rest of the line: inner blanks, ';' and backslashes go as they are; an empty
  // value is a line holding the key alone.
  EXPECT_EQ(*file, "a.example.com be a;x\\y\nb.example.com be_b\ne\n");
}

TEST(TableFileTest, AclLinesArePatterns) {
  auto file =
      RenderTableFile(/*acl=*/true, Table({{"10.0.0.0/8", ""}, {"a pattern with blanks ", ""}}));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file, "10.0.0.0/8\na pattern with blanks \n");
}

TEST(TableFileTest, AnEmptyTableIsAnEmptyFile) {
  auto file = RenderTableFile(/*acl=*/false, model::StringTable());
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(*file, "");
}

TEST(TableFileTest, EntriesTheReaderWouldChangeAreRefusedByName) {
  struct Case {
    bool acl;
    std::string key, value, reason;
  } cases[] = {
      {false, "#comment", "v", "comment"},
      {false, "two words", "v", "the key ends at a blank"},
      {false, "tab\tkey", "v", "the key ends at a blank"},
      {false, " lead", "v", "leading blanks"},
      {false, "k", " v", "blanks around the value"},
      {false, "k", "v\t", "blanks around the value"},
      {false, "k", "line\nbreak", "line break"},
      {false, "k", "carriage\rreturn", "line break"},
      {true, "#10.0.0.1", "", "comment"},
      {true, "\tpattern", "", "leading blanks"},
      {true, "pat\ntern", "", "line break"},
  };
  for (const Case& c : cases) {
    auto file = RenderTableFile(c.acl, Table({{"fine", ""}, {c.key, c.value}}));
    ASSERT_FALSE(file.ok()) << c.key;
    EXPECT_THAT(file.status().message(), HasSubstr(c.reason)) << c.key;
    EXPECT_THAT(file.status().message(), HasSubstr(c.acl ? "ACL file" : "map file"));
  }
  auto named = RenderTableFile(false, Table({{"two words", "v"}}));
  EXPECT_THAT(named.status().message(), HasSubstr("key \"two words\""));
}

}  // namespace
}  // namespace hawk::plan

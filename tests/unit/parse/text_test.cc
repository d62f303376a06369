#include "agent/parse/text.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::parse::internal {
namespace {

using ::testing::HasSubstr;

TEST(TextTest, SplitReplyLinesAcceptsEveryEnding) {
  for (absl::string_view reply : {"a\nb\n\n", "a\nb\n", "a\nb"}) {
    absl::StatusOr<std::vector<Line>> lines = SplitReplyLines("t", reply);
    ASSERT_TRUE(lines.ok()) << lines.status();
    ASSERT_EQ(lines->size(), 2u);
    EXPECT_EQ((*lines)[0].text, "a");
    EXPECT_EQ((*lines)[0].number, 1u);
    EXPECT_EQ((*lines)[1].text, "b");
    EXPECT_EQ((*lines)[1].number, 2u);
  }
  for (absl::string_view empty : {"", "\n", "\n\n\n"}) {
    absl::StatusOr<std::vector<Line>> lines = SplitReplyLines("t", empty);
    ASSERT_TRUE(lines.ok());
    EXPECT_TRUE(lines->empty());
  }
}

TEST(TextTest, SplitReplyLinesRejects) {
  EXPECT_THAT(SplitReplyLines("t", "a\n\nb\n").status().message(),
              HasSubstr("t: line 2 \"\": unexpected empty line"));
  EXPECT_THAT(SplitReplyLines("t", "\na\n").status().message(), HasSubstr("line 1"));
  std::string long_line(kMaxLineBytes + 1, 'x');
  EXPECT_THAT(SplitReplyLines("t", long_line).status().message(), HasSubstr("over the limit"));
  std::string huge(kMaxReplyBytes + 1, '\n');
  EXPECT_THAT(SplitReplyLines("t", huge).status().message(), HasSubstr("over the limit"));
}

TEST(TextTest, Quote) {
  EXPECT_EQ(Quote("Can't \"x\" \\ \t\x01\xff"), "\"Can't \\\"x\\\" \\\\ \\t\\x01\\xff\"");
  std::string quoted = Quote(std::string(1000, 'a'));
  EXPECT_LT(quoted.size(), 200u);
  EXPECT_THAT(quoted, HasSubstr("...\""));
}

TEST(TextTest, Numbers) {
  int64_t v = 0;
  EXPECT_TRUE(ParseUnsigned("0", &v));
  EXPECT_TRUE(ParseUnsigned("999999999999999999", &v));
  EXPECT_EQ(v, 999999999999999999);
  for (absl::string_view bad :
       {"", "-1", "+1", " 1", "1 ", "0x1", "1e3", "9999999999999999999", "1.0"}) {
    EXPECT_FALSE(ParseUnsigned(bad, &v)) << bad;
  }
  EXPECT_TRUE(ParseSigned("-12", &v));
  EXPECT_EQ(v, -12);
  EXPECT_FALSE(ParseSigned("-", &v));
  EXPECT_FALSE(ParseSigned("--1", &v));
  int i = 0;
  EXPECT_TRUE(ParseUnsignedInt("2147483647", &i));
  EXPECT_FALSE(ParseUnsignedInt("2147483648", &i));
  EXPECT_TRUE(ParseSignedInt("-2147483648", &i));
  EXPECT_EQ(i, -2147483647 - 1);
  EXPECT_FALSE(ParseSignedInt("-2147483649", &i));
}

TEST(TextTest, Durations) {
  EXPECT_EQ(ParseDuration("0d00h01m52s"), 112);
  EXPECT_EQ(ParseDuration("1d02h03m04s"), 93784);
  EXPECT_EQ(ParseDuration("0s"), 0);
  EXPECT_EQ(ParseDuration("1m12s"), 72);
  EXPECT_EQ(ParseDuration("3d4h"), 3 * 86400 + 4 * 3600);
  EXPECT_EQ(ParseDuration("2h"), 7200);
  EXPECT_EQ(ParseDuration("10000000d"), int64_t{10000000} * 86400);
  for (absl::string_view bad : {"", "?", "s", "1", "1x", "1s1m", "1d1d", "-1s", "1 s", "1s ",
                                "10000001d", "99999999999999999999d", "0d00h00m00s0s"}) {
    EXPECT_EQ(ParseDuration(bad), absl::nullopt) << bad;
  }
}

TEST(TextTest, Pointers) {
  EXPECT_TRUE(IsPointer("0x5579090d6eb0"));
  EXPECT_TRUE(IsPointer("0xABCDEF0123456789"));
  for (absl::string_view bad : {"", "0x", "5579", "0x12345678901234567", "0xg", "(nil)"}) {
    EXPECT_FALSE(IsPointer(bad)) << bad;
  }
}

TEST(TextTest, SplitWords) {
  EXPECT_THAT(SplitWords("  a \t b  c\t"), ::testing::ElementsAre("a", "b", "c"));
  EXPECT_TRUE(SplitWords("   ").empty());
}

}  // namespace
}  // namespace hawk::parse::internal

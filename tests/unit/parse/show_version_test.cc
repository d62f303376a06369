#include "agent/parse/show_version.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::parse {
namespace {

using testing::Endings;
using testing::ReadFixture;

TEST(ShowVersionTest, RecordedVersionsOfEveryRelease) {
  struct Case {
    const char* version;
    const char* expected;
    VersionNumbers numbers;
  };
  const std::vector<Case> cases = {
      {"2.6", "2.6.12-1+deb12u4", {2, 6, 12}},
      {"3.0", "3.0.11-1+deb13u4", {3, 0, 11}},
      {"3.2", "3.2.26-1", {3, 2, 26}},
      {"3.4", "3.4.7-1", {3, 4, 7}},
  };
  for (const Case& c : cases) {
    for (const std::string& reply : Endings(ReadFixture(c.version, "show_version.txt"))) {
      absl::string_view version = absl::StripAsciiWhitespace(reply);
      EXPECT_EQ(version, c.expected);
      absl::StatusOr<VersionNumbers> numbers = ParseVersionNumbers(version);
      ASSERT_TRUE(numbers.ok()) << numbers.status();
      EXPECT_EQ(numbers->major, c.numbers.major);
      EXPECT_EQ(numbers->minor, c.numbers.minor);
      EXPECT_EQ(numbers->patch, c.numbers.patch);
    }
  }
}

TEST(ShowVersionTest, Numbers) {
  absl::StatusOr<VersionNumbers> dev = ParseVersionNumbers("3.5-dev5");
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->major, 3);
  EXPECT_EQ(dev->minor, 5);
  EXPECT_EQ(dev->patch, 0);
  for (absl::string_view bad : {"", "3", "3.", ".3", "3..4", "3.4.5.6", "x3.4", "99999999999.1",
                                "3.4.99999999999999999999"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ParseVersionNumbers(bad).ok());
  }
  EXPECT_TRUE(VersionLess({2, 6, 12}, {3, 0, 0}));
  EXPECT_TRUE(VersionLess({3, 0, 0}, {3, 0, 1}));
  EXPECT_FALSE(VersionLess({3, 4, 0}, {3, 4, 0}));
  EXPECT_FALSE(VersionLess({3, 10, 0}, {3, 4, 0}));
}

}  // namespace
}  // namespace hawk::parse

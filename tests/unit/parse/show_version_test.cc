#include "agent/parse/show_version.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::parse {
namespace {

using testing::Endings;
using ::testing::HasSubstr;
using testing::ReadFixture;

TEST(ShowVersionTest, Fixtures) {
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
      absl::StatusOr<std::string> version = ParseShowVersion(reply);
      ASSERT_TRUE(version.ok()) << version.status();
      EXPECT_EQ(*version, c.expected);
      absl::StatusOr<VersionNumbers> numbers = ParseVersionNumbers(*version);
      ASSERT_TRUE(numbers.ok()) << numbers.status();
      EXPECT_EQ(numbers->major, c.numbers.major);
      EXPECT_EQ(numbers->minor, c.numbers.minor);
      EXPECT_EQ(numbers->patch, c.numbers.patch);
    }
  }
}

TEST(ShowVersionTest, TrimsSpaces) {
  absl::StatusOr<std::string> version = ParseShowVersion("  3.5-dev5 \n\n");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, "3.5-dev5");
}

TEST(ShowVersionTest, Errors) {
  for (absl::string_view bad : {"", "\n\n", "   \n", "Unknown command.\n", "3.4.0\n3.4.1\n",
                                "3.4 0\n", "v3.4\n", "3.4\x01\n"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<std::string> version = ParseShowVersion(bad);
    ASSERT_FALSE(version.ok());
    EXPECT_EQ(version.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(version.status().message(), HasSubstr("show version"));
  }
  EXPECT_FALSE(ParseShowVersion(std::string(200, '3')).ok());
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

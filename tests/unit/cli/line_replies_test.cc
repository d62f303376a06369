// Splitting the reply block of one `@@!<pid>` line into its commands' replies, over what 3.2.26
// and 3.4.7 print (tests/fixtures/haproxy-3.{2,4}/atat_line.txt) and the ways a block can end.

#include "agent/cli/line_replies.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::cli {
namespace {

using ::testing::ElementsAre;

TEST(LineRepliesTest, EachCommandEndsWithItsEmptyLine) {
  absl::StatusOr<std::vector<std::string>> r =
      SplitLineReplies("\nNo such server.\n\n11 (initial 1)\n\n", 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ElementsAre("\n", "No such server.\n\n", "11 (initial 1)\n\n"));
}

TEST(LineRepliesTest, MultiLineRepliesStayWhole) {
  absl::StatusOr<std::vector<std::string>> r = SplitLineReplies("Name: HAProxy\nPid: 42\n\n\n", 2);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(*r, ElementsAre("Name: HAProxy\nPid: 42\n\n", "\n"));
}

TEST(LineRepliesTest, ABlockThatEndsEarlyGivesOnlyTheCompleteReplies) {
  EXPECT_THAT(*SplitLineReplies("\nNo such server.\n\n", 4),
              ElementsAre("\n", "No such server.\n\n"));
  // A last reply without its empty line was cut short: left out.
  EXPECT_THAT(*SplitLineReplies("\n11 (initial", 2), ElementsAre("\n"));
  EXPECT_THAT(*SplitLineReplies("\n11 (initial 1)\n", 2), ElementsAre("\n"));
  EXPECT_TRUE(SplitLineReplies("", 3)->empty());
}

TEST(LineRepliesTest, MoreThanItsCommandsIsDataLoss) {
  EXPECT_EQ(SplitLineReplies("\n\n\n", 2).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(SplitLineReplies("\n\nextra", 2).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(SplitLineReplies("\n\n", 2).ok());
}

}  // namespace
}  // namespace hawk::cli

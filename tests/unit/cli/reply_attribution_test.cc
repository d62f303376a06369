// Which command a reply answers (cli/reply_attribution.h), without a socket: one reply per
// command, one block per `@@!<pid>` line, and what a master error does to the commands behind.

#include "agent/cli/reply_attribution.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::cli {
namespace {

using ::testing::HasSubstr;

struct Batch {
  std::vector<Command> commands;
  std::vector<Segment> segments;
  std::vector<CommandResult> results;
  size_t next = 0;

  Batch(std::vector<Command> batch, Dialect dialect)
      : commands(std::move(batch)),
        segments(Segments(commands, dialect)),
        results(commands.size(), absl::UnknownError("no reply yet")) {}
  bool Feed(std::string text) {
    return AttributeReply(commands, segments, std::move(text), &next, &results);
  }
};

TEST(ReplyAttributionTest, OneReplyPerCommandInOrder) {
  Batch run({Command::ForWorker(7, "get weight be/s"), Command::Master("show version")},
            Dialect::kMaster);
  EXPECT_FALSE(run.Feed("20 (initial 50)\n"));
  EXPECT_EQ(run.next, 1u);
  EXPECT_FALSE(run.Feed("3.4.0\n"));
  EXPECT_EQ(run.next, 2u);
  EXPECT_EQ(*run.results[0], "20 (initial 50)\n");
  EXPECT_EQ(*run.results[1], "3.4.0\n");
}

TEST(ReplyAttributionTest, AMasterErrorFailsTheCommandsBehindIt) {
  Batch run({Command::ForWorker(999, "show info"), Command::ForWorker(7, "show info")},
            Dialect::kMaster);
  EXPECT_TRUE(run.Feed("Can't find the target PID matching the prefix '@!999'\n"));
  EXPECT_EQ(run.next, 2u);
  EXPECT_TRUE(absl::IsNotFound(run.results[0].status()));
  EXPECT_THAT(std::string(run.results[0].status().message()), HasSubstr("`@!999 show info`"));
  EXPECT_TRUE(absl::IsUnavailable(run.results[1].status()));
  EXPECT_THAT(std::string(run.results[1].status().message()),
              HasSubstr("the master discards the commands sent after a failed one"));
  // The last command of the batch: nothing behind it, the connection stays usable.
  Batch last({Command::ForWorker(999, "show info")}, Dialect::kMaster);
  EXPECT_FALSE(last.Feed("Can't find the target PID matching the prefix '@!999'\n"));
  EXPECT_TRUE(absl::IsNotFound(last.results[0].status()));
}

TEST(ReplyAttributionTest, AWholeLinesBlockSplitsIntoItsCommands) {
  Batch run({Command::ForWorker(7, "set weight be/s 3"), Command::ForWorker(7, "get weight be/s"),
             Command::Master("show version")},
            Dialect::kMasterWholeLines);
  ASSERT_TRUE(run.segments[0].whole);
  EXPECT_FALSE(run.Feed("\n20 (initial 50)\n\n"));
  EXPECT_EQ(run.next, 2u);
  EXPECT_EQ(*run.results[0], "\n");
  EXPECT_EQ(*run.results[1], "20 (initial 50)\n\n");
  EXPECT_FALSE(run.Feed("3.4.0\n"));
  EXPECT_EQ(*run.results[2], "3.4.0\n");
}

TEST(ReplyAttributionTest, AWholeLinesBlockWithMoreThanItsCommandsPoisonsTheConnection) {
  Batch run(
      {Command::ForWorker(7, "set weight be/s 3"), Command::ForWorker(7, "set weight be/s 4")},
      Dialect::kMasterWholeLines);
  EXPECT_TRUE(run.Feed("\n\n\n"));
  EXPECT_EQ(run.next, 2u);
  EXPECT_THAT(std::string(run.results[0].status().message()), HasSubstr("no usable reply"));
}

TEST(ReplyAttributionTest, AWholeLineTheMasterRefusesFailsEveryCommandOfIt) {
  Batch run({Command::ForWorker(999, "set weight be/s 3"),
             Command::ForWorker(999, "get weight be/s"), Command::Master("show version")},
            Dialect::kMasterWholeLines);
  EXPECT_TRUE(run.Feed("Can't find the target PID matching the prefix '@@!999'\n"));
  EXPECT_EQ(run.next, 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(absl::IsNotFound(run.results[i].status())) << i;
    EXPECT_THAT(std::string(run.results[i].status().message()),
                HasSubstr("(in one `@@!999` line)"));
  }
  EXPECT_THAT(std::string(run.results[2].status().message()),
              HasSubstr("not sent: an earlier line of the batch failed"));
}

}  // namespace
}  // namespace hawk::cli

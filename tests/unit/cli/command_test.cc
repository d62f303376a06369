#include "agent/cli/command.h"

#include <string>

#include "gtest/gtest.h"

namespace hawk::cli {
namespace {

TEST(CommandTest, ForWorkerPrefixesEveryCommand) {
  EXPECT_EQ(ForWorker(4242, "show info").line, "@!4242 show info");
  EXPECT_EQ(Serialize(ForWorker(4242, "show info")), "@!4242 show info\n");
}

TEST(CommandTest, PayloadIsFramedWithTheBareMarkerAndAnEmptyLine) {
  Command c = ForWorkerWithPayload(7, "add map @3 /m.map", {"k1 v 1", "k2 v2"});
  EXPECT_TRUE(ValidateCommand(c).ok());
  EXPECT_EQ(Serialize(c), "@!7 add map @3 /m.map <<\nk1 v 1\nk2 v2\n\n");
}

// Anything that would make the master see a second command is refused.
TEST(CommandTest, HostileLinesAreRejected) {
  const char* hostile[] = {
      "@!1 set server be/s addr 1.2.3.4; shutdown sessions server be/s",
      "@!1 show info\nreload",
      "@!1 show info\rreload",
      "@!1 show info \\",
      "@!1 add map /m.map <<",
      "@!1 add map /m.map <<EOF",
  };
  for (const char* line : hostile) {
    EXPECT_FALSE(ValidateCommand(Command::Master(line)).ok()) << line;
  }
  EXPECT_FALSE(ValidateCommand(Command::Master(std::string("@!1 show\0info", 13))).ok());
  EXPECT_FALSE(ValidateCommand(Command::Master("")).ok());
}

TEST(CommandTest, EscapedSemicolonIsOneCommand) {
  EXPECT_TRUE(ValidateCommand(Command::Master("@!1 set map /m.map k v\\;x")).ok());
  EXPECT_TRUE(ValidateCommand(Command::Master("@!1 set map /m.map k\\\\ v")).ok());
}

TEST(CommandTest, SizeLimits) {
  std::string line = "@!1 show info " + std::string(kMaxLineBytes, 'a');
  EXPECT_FALSE(ValidateCommand(Command::Master(line)).ok());
  std::vector<std::string> payload(2000, "key value");
  EXPECT_FALSE(ValidateCommand(ForWorkerWithPayload(1, "add map /m", payload)).ok());
  EXPECT_FALSE(ValidateCommand(ForWorkerWithPayload(1, "add map /m", {"ok", ""})).ok());
  EXPECT_FALSE(ValidateCommand(ForWorkerWithPayload(1, "add map /m", {"a\nb"})).ok());
}

TEST(CommandTest, EscapeWord) {
  EXPECT_EQ(*EscapeWord("a b;c\\d\te"), "a\\ b\\;c\\\\d\\\te");
  EXPECT_FALSE(EscapeWord("a\nb").ok());
  EXPECT_FALSE(EscapeWord(std::string("a\0b", 3)).ok());
  std::string escaped = *EscapeWord("x; reload");
  EXPECT_TRUE(ValidateCommand(Command::Master("@!1 set map /m k " + escaped)).ok());
}

}  // namespace
}  // namespace hawk::cli

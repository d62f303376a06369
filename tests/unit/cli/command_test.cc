#include "agent/cli/command.h"

#include <string>

#include "absl/strings/escaping.h"
#include "agent/cli/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::cli {
namespace {

using ::testing::HasSubstr;

// A command is data: the worker it goes to and its text; the encoder (wire.h) addresses it.
TEST(CommandTest, FactoriesKeepTheTargetOutOfTheText) {
  Command master = Command::Master("show proc");
  EXPECT_EQ(master.pid, 0);
  EXPECT_EQ(master.text, "show proc");
  Command info = Command::ForWorker(4242, "show info");
  EXPECT_EQ(info.pid, 4242);
  EXPECT_EQ(info.text, "show info");
  EXPECT_TRUE(info.payload.empty());
  EXPECT_FALSE(info.closes_connection);
  Command c = Command::ForWorkerWithPayload(7, "add map @3 /m.map", "k1 v 1\nk2 v2\n");
  EXPECT_EQ(c.pid, 7);
  EXPECT_EQ(c.text, "add map @3 /m.map");
  EXPECT_EQ(c.payload, "k1 v 1\nk2 v2\n");
  EXPECT_TRUE(ValidateCommand(c).ok());
  EXPECT_EQ(c.payload_lines(), 2u);
}

TEST(CommandTest, PayloadLinesCountsTheLineEnds) {
  EXPECT_EQ(Command::ForWorker(1, "show info").payload_lines(), 0u);
  EXPECT_EQ(Command::ForWorkerWithPayload(1, "add acl /a", "p\n").payload_lines(), 1u);
  // Payload lines are never unescaped: spaces, tabs, ';' and backslashes are bytes of the line.
  Command c = Command::ForWorkerWithPayload(1, "add map /m", "a b;c\\ d\te\nx\n");
  EXPECT_TRUE(ValidateCommand(c).ok());
  EXPECT_EQ(c.payload_lines(), 2u);
}

// Anything that would make the master see a second command is refused.
TEST(CommandTest, HostileLinesAreRejected) {
  const char* hostile[] = {
      "set server be/s addr 1.2.3.4; shutdown sessions server be/s", "show info\nreload",
      "show info\rreload", "show info \\", "add map /m.map <<", "add map /m.map <<EOF",
      // Lines that open a payload on some version without a payload attached: the master and
      // the worker would then take the next lines (hawk's next commands) as payload.
      "show map /tmp/x<<",     // 2.6: a line that ends with "<<"
      "set map /m k v<<",      // 2.6
      "add acl /a foo\\ <<x",  // 3.x worker: the last word after a blank, escaped or not
      "add acl /a <<\\ x",     // 3.x master: the last word, escapes respected
      "add acl /a <<\t",       // 3.x master: trailing blanks are skipped
      "add acl /a <<  ",
      "<<",  // a whole text that opens a payload
  };
  for (const char* line : hostile) {
    EXPECT_FALSE(ValidateCommand(Command::ForWorker(1, line)).ok()) << line;
    EXPECT_FALSE(ValidateCommand(Command::Master(line)).ok()) << line;
  }
  EXPECT_FALSE(ValidateCommand(Command::ForWorker(1, std::string("show\0info", 9))).ok());
  EXPECT_FALSE(ValidateCommand(Command::Master("")).ok());
  EXPECT_FALSE(ValidateCommand(Command::ForWorker(1, "")).ok());
}

TEST(CommandTest, EscapedSemicolonIsOneCommand) {
  EXPECT_TRUE(ValidateCommand(Command::ForWorker(1, "set map /m.map k v\\;x")).ok());
  EXPECT_TRUE(ValidateCommand(Command::ForWorker(1, "set map /m.map k\\\\ v")).ok());
}

TEST(CommandTest, SizeLimits) {
  std::string line = "show info " + std::string(kMaxLineBytes, 'a');
  EXPECT_FALSE(ValidateCommand(Command::ForWorker(1, line)).ok());
  // The master's line counts the `@!<pid> ` prefix: a text that fits alone is refused with it.
  std::string at_line_limit(kMaxLineBytes, 'a');
  EXPECT_TRUE(ValidateCommand(Command::Master(at_line_limit)).ok());
  at_line_limit.resize(kMaxLineBytes - 4);  // "@!1 " + text: exactly kMaxLineBytes
  EXPECT_TRUE(ValidateCommand(Command::ForWorker(1, at_line_limit)).ok());
  EXPECT_FALSE(ValidateCommand(Command::ForWorker(12, at_line_limit)).ok());
  std::string payload;
  for (int i = 0; i < 2000; ++i) payload += "key value\n";
  EXPECT_FALSE(ValidateCommand(Command::ForWorkerWithPayload(1, "add map /m", payload)).ok());

  // The limit counts every byte written to the master: the line, " <<\n", the payload and the
  // empty line.
  const std::string command = "add map /m";
  size_t overhead =
      CommandBytes(Command::ForWorkerWithPayload(1, command, "\n"), Dialect::kMaster).size() - 1;
  std::string fits(kMaxCommandWithPayloadBytes - overhead - 1, 'k');
  fits.push_back('\n');
  Command at_limit = Command::ForWorkerWithPayload(1, command, fits);
  EXPECT_EQ(CommandBytes(at_limit, Dialect::kMaster).size(), kMaxCommandWithPayloadBytes);
  EXPECT_TRUE(ValidateCommand(at_limit).ok()) << ValidateCommand(at_limit);
  absl::Status over = ValidateCommand(Command::ForWorkerWithPayload(1, command, "k" + fits));
  EXPECT_FALSE(over.ok());
  EXPECT_THAT(std::string(over.message()), HasSubstr("split it inside one transaction"));
}

// A payload is LF-ended lines, none empty, without CR or NUL: anything else would end the
// payload early or run its tail as commands.
TEST(CommandTest, MalformedPayloadsAreRejected) {
  struct Case {
    std::string payload;
    const char* why;
  };
  const Case cases[] = {
      {"ok\n\n", "empty"},
      {"\nok\n", "empty"},
      {"\n", "empty"},
      {"a\n\nreload\n", "empty"},
      {"ok", "does not end its last line with LF"},
      {"ok\nshow proc", "does not end its last line with LF"},
      {"a\rb\n", "line break"},
      {"a\r\n", "line break"},
      {std::string("a\0b\n", 4), "NUL"},
  };
  for (const Case& c : cases) {
    absl::Status status =
        ValidateCommand(Command::ForWorkerWithPayload(1, "add map /m", c.payload));
    EXPECT_FALSE(status.ok()) << absl::CEscape(c.payload);
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.why)) << absl::CEscape(c.payload);
  }
  // The line itself is checked as without a payload.
  EXPECT_FALSE(
      ValidateCommand(Command::ForWorkerWithPayload(1, "add map /m; reload", "k v\n")).ok());
  EXPECT_FALSE(ValidateCommand(Command::ForWorkerWithPayload(1, "add map /m <<", "k v\n")).ok());
}

TEST(CommandTest, EscapeWord) {
  EXPECT_EQ(*EscapeWord("a b;c\\d\te"), "a\\ b\\;c\\\\d\\\te");
  EXPECT_FALSE(EscapeWord("a\nb").ok());
  EXPECT_FALSE(EscapeWord(std::string("a\0b", 3)).ok());
  std::string escaped = *EscapeWord("x; reload");
  EXPECT_TRUE(ValidateCommand(Command::ForWorker(1, "set map /m k " + escaped)).ok());
}

// '<' is escaped (HAProxy drops the backslash before any byte but a backslash), so no value can
// end a line with "<<" or start its last word with "<<", on any version.
TEST(CommandTest, EscapedValuesNeverOpenAPayload) {
  EXPECT_EQ(*EscapeWord("v<<"), "v\\<\\<");
  for (const char* value : {"v<<", "<<", "<<EOF", "a <<", "a\t<<x", "<< ", "x<<<"}) {
    std::string escaped = *EscapeWord(value);
    EXPECT_TRUE(ValidateCommand(Command::ForWorker(1, "set map /m k " + escaped)).ok()) << value;
    EXPECT_TRUE(ValidateCommand(Command::ForWorker(1, "add acl /a " + escaped)).ok()) << value;
  }
}

}  // namespace
}  // namespace hawk::cli

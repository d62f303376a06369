// The bytes hawk writes (cli/wire.h), read back as each HAProxy version would
// (tests/support/haproxy_cli_reader.h): exactly the commands meant, in every dialect.

#include "agent/cli/wire.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/haproxy_cli_reader.h"

namespace hawk::cli {
namespace {

using ::hawk::testing::CliVersion;
using ::hawk::testing::ReadCommand;
using ::hawk::testing::ReadMasterConnection;
using ::hawk::testing::ReadResult;
using ::hawk::testing::ReadWorkerSocket;
using ::hawk::testing::WorkerWords;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr CliVersion kVersions[] = {CliVersion::k2_6, CliVersion::k3_0, CliVersion::k3_4};

// What `command` means: its pid, the words of its line as a worker reads them, its payload.
ReadCommand Meant(const Command& command, Dialect dialect) {
  ReadCommand meant;
  if (dialect != Dialect::kWorkerSocket) meant.pid = command.pid;
  meant.words = WorkerWords(command.text);
  meant.has_payload = !command.payload.empty();
  meant.payload = command.payload;
  return meant;
}

TEST(WireTest, EveryDialectReadsBackTheCommandsMeant) {
  std::vector<Command> commands = {
      Command::ForWorker(7, "set server be/s1 addr 10.0.0.1 port 80"),
      Command::ForWorker(7, "set map /m k\\;x v\\ \\<\\<"),
      Command::ForWorkerWithPayload(7, "add map @3 /m", "k1 v 1\nk2 <<v2\n"),
      Command::ForWorker(7, "commit map @3 /m"),
      Command::ForWorker(8, "add acl /a \\<\\<x"),
      Command::ForWorker(8, "show info"),
  };
  for (CliVersion version : kVersions) {
    for (Dialect dialect : {Dialect::kMaster, Dialect::kMasterWholeLines}) {
      bool whole = dialect == Dialect::kMasterWholeLines;
      if (whole && version != CliVersion::k3_4) continue;
      SCOPED_TRACE(absl::StrCat("version ", static_cast<int>(version), whole ? ", @@ lines" : ""));
      ReadResult read = ReadMasterConnection(BatchBytes(commands, dialect), version);
      ASSERT_TRUE(read.ok()) << read.error;
      std::vector<ReadCommand> meant;
      for (const Command& c : commands) meant.push_back(Meant(c, dialect));
      EXPECT_EQ(read.commands, meant);
    }
    std::vector<Command> one_worker(commands.begin(), commands.begin() + 4);
    ReadResult local = ReadWorkerSocket(BatchBytes(one_worker, Dialect::kWorkerSocket), version);
    ASSERT_TRUE(local.ok()) << local.error;
    std::vector<ReadCommand> meant;
    for (const Command& c : one_worker) meant.push_back(Meant(c, Dialect::kWorkerSocket));
    EXPECT_EQ(local.commands, meant);
  }
  EXPECT_THAT(WorkerWords("set map /m k\\;x v\\ \\<\\< a\\\\b"),
              ElementsAre("set", "map", "/m", "k;x", "v <<", "a\\b"));
}

// The reader knows the lines ValidateCommand refuses for what they do on each version (the
// reference cases: 2.6 takes `show map /tmp/x<<` as opening a payload).
TEST(WireTest, TheReaderSeesEachVersionsPayloadOpeners) {
  struct Case {
    std::string line;
    bool desync_2_6, desync_3_0, desync_3_4;
  };
  const Case cases[] = {
      {"show map /tmp/x<<", true, false, false},
      {"add acl /a foo\\ <<x", false, true, true},  // only the 3.x worker: a blank, escaped
      {"add acl /a <<x", false, true, true},
      {"add acl /a \\<\\<x", false, false, false},
      {"set map /m k v\\<\\<", false, false, false},
  };
  for (const Case& c : cases) {
    for (CliVersion version : kVersions) {
      bool desync = version == CliVersion::k2_6   ? c.desync_2_6
                    : version == CliVersion::k3_0 ? c.desync_3_0
                                                  : c.desync_3_4;
      Command command = Command::ForWorker(1, c.line);
      ReadResult read = ReadMasterConnection(
          BatchBytes({command, Command::ForWorker(1, "show info")}, Dialect::kMaster), version);
      bool as_meant = read.ok() && read.commands.size() == 2 && !read.commands[0].has_payload;
      EXPECT_EQ(!as_meant, desync)
          << c.line << " on " << static_cast<int>(version) << ": " << read.error;
      EXPECT_EQ(ValidateCommand(command).ok(),
                !desync && !c.desync_2_6 && !c.desync_3_0 && !c.desync_3_4)
          << c.line;
    }
  }
  std::string payload_unended =
      CommandBytes(Command::ForWorkerWithPayload(1, "add map @1 /m", "k v\n"), Dialect::kMaster);
  payload_unended.pop_back();  // the empty line that ends the payload
  ReadResult unended = ReadMasterConnection(payload_unended, CliVersion::k3_4);
  EXPECT_FALSE(unended.ok());
  EXPECT_THAT(unended.error, HasSubstr("never ends"));
}

// The bytes of each dialect, exactly: the master's `@!<pid>` per command, its `@@!<pid>` whole
// lines, and a worker's own socket without any prefix.
TEST(WireTest, EachDialectAddressesTheSameBatchItsOwnWay) {
  std::vector<Command> batch = {
      Command::Master("show proc"),
      Command::ForWorker(7, "set weight be/s 3"),
      Command::ForWorker(7, "get weight be/s"),
      Command::ForWorkerWithPayload(7, "add map @3 /m", "k v\n"),
      Command::ForWorker(7, "commit map @3 /m"),
      Command::ForWorker(8, "show info"),
  };
  EXPECT_EQ(BatchBytes(batch, Dialect::kMaster),
            "show proc\n@!7 set weight be/s 3\n@!7 get weight be/s\n"
            "@!7 add map @3 /m <<\nk v\n\n@!7 commit map @3 /m\n@!8 show info\n");
  EXPECT_EQ(BatchBytes(batch, Dialect::kMasterWholeLines),
            "show proc\n@@!7 set weight be/s 3; get weight be/s\n"
            "@!7 add map @3 /m <<\nk v\n\n@!7 commit map @3 /m\n@!8 show info\n");
  EXPECT_EQ(BatchBytes(batch, Dialect::kWorkerSocket),
            "show proc\nset weight be/s 3\nget weight be/s\n"
            "add map @3 /m <<\nk v\n\ncommit map @3 /m\nshow info\n");
  // The segments: a whole line is alone in flight; a run of one command stays an `@!` line.
  std::vector<Segment> segments = Segments(batch, Dialect::kMasterWholeLines);
  ASSERT_EQ(segments.size(), 5u);
  EXPECT_FALSE(segments[0].whole);
  EXPECT_EQ(segments[0].end, 1u);
  EXPECT_TRUE(segments[1].whole);
  EXPECT_EQ(segments[1].pid, 7);
  EXPECT_EQ(segments[1].begin, 1u);
  EXPECT_EQ(segments[1].end, 3u);
  for (size_t i = 2; i < segments.size(); ++i) {
    EXPECT_FALSE(segments[i].whole) << i;
    EXPECT_EQ(segments[i].begin, i + 1);
  }
  for (Dialect dialect : {Dialect::kMaster, Dialect::kWorkerSocket}) {
    std::vector<Segment> pipelined = Segments(batch, dialect);
    ASSERT_EQ(pipelined.size(), 1u);
    EXPECT_FALSE(pipelined[0].whole);
    EXPECT_EQ(pipelined[0].end, batch.size());
  }
}

// Payload commands, commands that close the connection and the master's own commands never go
// in a whole line; runs for different workers are different lines.
TEST(WireTest, WholeLinesTakeOnlyPlainCommandsForOneWorker) {
  Command reload = Command::Master("reload");
  reload.closes_connection = true;
  Command closing = Command::ForWorker(7, "show info");
  closing.closes_connection = true;
  std::vector<Command> batch = {
      Command::ForWorker(7, "a"),
      Command::ForWorker(7, "b"),
      Command::ForWorker(8, "c"),
      Command::ForWorker(8, "d"),
      closing,
      Command::ForWorker(8, "e"),
      Command::ForWorker(8, "f"),
      reload,
  };
  EXPECT_EQ(BatchBytes(batch, Dialect::kMasterWholeLines),
            "@@!7 a; b\n@@!8 c; d\n@!7 show info\n@@!8 e; f\nreload\n");
  std::vector<Segment> segments = Segments(batch, Dialect::kMasterWholeLines);
  ASSERT_EQ(segments.size(), 5u);
  EXPECT_EQ(segments[2].begin, 4u);  // `closing` and `reload` each pipelined
  EXPECT_FALSE(segments[2].whole);
  EXPECT_EQ(segments[4].begin, 7u);
  EXPECT_FALSE(segments[4].whole);
  EXPECT_EQ(CommandBytes(reload, Dialect::kMasterWholeLines), "reload\n");
}

// A whole line holds at most kMaxLineBytes (`@@!<pid> ` included, LF not): the next command
// starts a new line at exactly the byte it would overflow.
TEST(WireTest, WholeLinesSplitAtMaxLineBytes) {
  const std::string prefix = "@@!7 ";
  const std::string text(98, 'x');  // with "; ", 100 bytes a command after the first
  std::vector<Command> batch;
  const size_t per_line = 1 + (kMaxLineBytes - prefix.size() - text.size()) / (text.size() + 2);
  for (size_t i = 0; i < 2 * per_line + 1; ++i) batch.push_back(Command::ForWorker(7, text));
  std::vector<Segment> segments = Segments(batch, Dialect::kMasterWholeLines);
  ASSERT_EQ(segments.size(), 3u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_TRUE(segments[s].whole);
    EXPECT_EQ(segments[s].end - segments[s].begin, per_line);
    std::string line = SegmentBytes(batch, segments[s], Dialect::kMasterWholeLines);
    EXPECT_EQ(line.size(), prefix.size() + per_line * text.size() + (per_line - 1) * 2 + 1);
    EXPECT_LE(line.size() - 1, kMaxLineBytes);
    EXPECT_GT(line.size() - 1 + 2 + text.size(), kMaxLineBytes);  // one more would not fit
  }
  EXPECT_FALSE(segments[2].whole);  // the last command alone: an `@!7` line
  EXPECT_EQ(SegmentBytes(batch, segments[2], Dialect::kMasterWholeLines), "@!7 " + text + "\n");

  // Exactly at the limit joins; one byte more does not.
  std::string first(kMaxLineBytes - prefix.size() - 3, 'a');  // + "; b" = kMaxLineBytes
  std::vector<Command> exact = {Command::ForWorker(7, first), Command::ForWorker(7, "b")};
  EXPECT_EQ(Segments(exact, Dialect::kMasterWholeLines).size(), 1u);
  exact[0].text.push_back('a');
  std::vector<Segment> split = Segments(exact, Dialect::kMasterWholeLines);
  ASSERT_EQ(split.size(), 2u);  // two runs of one command each: `@!7` lines
  EXPECT_FALSE(split[0].whole);
  EXPECT_FALSE(split[1].whole);
  EXPECT_EQ(BatchBytes(exact, Dialect::kMasterWholeLines),
            absl::StrCat("@!7 ", exact[0].text, "\n@!7 b\n"));
}

TEST(WireTest, TheMastersLineNamesTheWorker) {
  EXPECT_EQ(MasterLine(Command::ForWorker(4242, "show info")), "@!4242 show info");
  EXPECT_EQ(MasterLine(Command::Master("show proc")), "show proc");
  EXPECT_EQ(MasterLineBytes(Command::ForWorker(4242, "show info")),
            std::string("@!4242 show info").size());
  EXPECT_EQ(MasterLineBytes(Command::Master("show proc")), 9u);
  Command payload = Command::ForWorkerWithPayload(7, "add map @3 /m.map", "k1 v 1\nk2 v2\n");
  EXPECT_EQ(CommandBytes(payload, Dialect::kMaster), "@!7 add map @3 /m.map <<\nk1 v 1\nk2 v2\n\n");
  EXPECT_EQ(CommandBytes(payload, Dialect::kWorkerSocket),
            "add map @3 /m.map <<\nk1 v 1\nk2 v2\n\n");
}

// The version rule: `@@!<pid>` lines from 3.2 on, one command per line before and for a version
// that does not parse.
TEST(WireTest, MasterDialectForVersion) {
  EXPECT_EQ(MasterDialectFor("2.6.12-1+deb12u4"), Dialect::kMaster);
  EXPECT_EQ(MasterDialectFor("3.0.11"), Dialect::kMaster);
  EXPECT_EQ(MasterDialectFor("3.1.99"), Dialect::kMaster);
  EXPECT_EQ(MasterDialectFor("3.2.0"), Dialect::kMasterWholeLines);
  EXPECT_EQ(MasterDialectFor("3.2.26"), Dialect::kMasterWholeLines);
  EXPECT_EQ(MasterDialectFor("3.4.0-64a335366"), Dialect::kMasterWholeLines);
  EXPECT_EQ(MasterDialectFor("3.5-dev5"), Dialect::kMasterWholeLines);
  EXPECT_EQ(MasterDialectFor("x"), Dialect::kMaster);
  EXPECT_EQ(MasterDialectFor(""), Dialect::kMaster);
}

}  // namespace
}  // namespace hawk::cli

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
ReadCommand Meant(const Command& command, bool worker_socket) {
  ReadCommand meant;
  absl::string_view rest = command.line;
  int pid = 0;
  if (SplitWorkerPrefix(command.line, &pid, &rest) && !worker_socket) meant.pid = pid;
  meant.words = WorkerWords(rest);
  meant.has_payload = !command.payload.empty();
  meant.payload = command.payload;
  return meant;
}

std::string Bytes(const std::vector<Command>& commands, bool whole_lines, bool worker_socket) {
  std::string bytes;
  for (const Segment& segment : Segments(commands, whole_lines)) {
    bytes += SegmentBytes(commands, segment, worker_socket);
  }
  return bytes;
}

TEST(WireTest, EveryDialectReadsBackTheCommandsMeant) {
  std::vector<Command> commands = {
      ForWorker(7, "set server be/s1 addr 10.0.0.1 port 80"),
      ForWorker(7, "set map /m k\\;x v\\ \\<\\<"),
      ForWorkerWithPayload(7, "add map @3 /m", "k1 v 1\nk2 <<v2\n"),
      ForWorker(7, "commit map @3 /m"),
      ForWorker(8, "add acl /a \\<\\<x"),
      ForWorker(8, "show info"),
  };
  for (CliVersion version : kVersions) {
    for (bool whole : {false, true}) {
      if (whole && version != CliVersion::k3_4) continue;
      SCOPED_TRACE(absl::StrCat("version ", static_cast<int>(version), whole ? ", @@ lines" : ""));
      ReadResult read = ReadMasterConnection(Bytes(commands, whole, false), version);
      ASSERT_TRUE(read.ok()) << read.error;
      std::vector<ReadCommand> meant;
      for (const Command& c : commands) meant.push_back(Meant(c, false));
      EXPECT_EQ(read.commands, meant);
    }
    std::vector<Command> one_worker(commands.begin(), commands.begin() + 4);
    ReadResult local = ReadWorkerSocket(Bytes(one_worker, false, true), version);
    ASSERT_TRUE(local.ok()) << local.error;
    std::vector<ReadCommand> meant;
    for (const Command& c : one_worker) meant.push_back(Meant(c, true));
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
      {"@!1 show map /tmp/x<<", true, false, false},
      {"@!1 add acl /a foo\\ <<x", false, true, true},  // only the 3.x worker: a blank, escaped
      {"@!1 add acl /a <<x", false, true, true},
      {"@!1 add acl /a \\<\\<x", false, false, false},
      {"@!1 set map /m k v\\<\\<", false, false, false},
  };
  for (const Case& c : cases) {
    for (CliVersion version : kVersions) {
      bool desync = version == CliVersion::k2_6   ? c.desync_2_6
                    : version == CliVersion::k3_0 ? c.desync_3_0
                                                  : c.desync_3_4;
      ReadResult read = ReadMasterConnection(c.line + "\n@!1 show info\n", version);
      bool as_meant = read.ok() && read.commands.size() == 2 && !read.commands[0].has_payload;
      EXPECT_EQ(!as_meant, desync)
          << c.line << " on " << static_cast<int>(version) << ": " << read.error;
      EXPECT_EQ(ValidateCommand(Command::Master(c.line)).ok(),
                !desync && !c.desync_2_6 && !c.desync_3_0 && !c.desync_3_4)
          << c.line;
    }
  }
  ReadResult unended = ReadMasterConnection("@!1 add map @1 /m <<\nk v\n", CliVersion::k3_4);
  EXPECT_FALSE(unended.ok());
  EXPECT_THAT(unended.error, HasSubstr("never ends"));
}

}  // namespace
}  // namespace hawk::cli

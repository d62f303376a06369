// hawk's command line: help, bad flags, bad values.

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "agent/base/build_info.h"
#include "gtest/gtest.h"
#include "tests/integration/hawk_harness.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace hawk::testing {
namespace {

TEST(BinaryTest, HelpListsTheFlagsAndSucceeds) {
  TempDir dir;
  // Every spelling of abseil's help flags: asking for help is not an error.
  for (const char* help : {"--help", "--helpfull", "--helpshort", "--help=listen", "-help"}) {
    RunResult run = RunHawk(dir, {help});
    EXPECT_EQ(run.exit_code, 0) << help << ": " << run.output;
    for (const char* flag :
         {"--master-socket", "--listen", "--probe-listen", "--poll-interval", "--worker-socket"}) {
      EXPECT_NE(run.output.find(flag), std::string::npos)
          << flag << " missing from " << help << ":\n"
          << run.output;
    }
  }
}

// hawk's own version (the one hawk_build_info reports) and commit, not abseil's default text
// ("hawk" and "Debug build (NDEBUG not #defined)", Debian's abseil being built without NDEBUG).
TEST(BinaryTest, VersionNamesHawksVersionAndCommit) {
  TempDir dir;
  EXPECT_EQ(base::BuildVersion(), HAWK_PROJECT_VERSION);
  EXPECT_FALSE(base::BuildCommit().empty());
  const std::string expected =
      "hawk " HAWK_PROJECT_VERSION " (commit " + std::string(base::BuildCommit()) + ")\n";
  for (const char* version : {"--version", "-version", "--version=true"}) {
    RunResult run = RunHawk(dir, {version});
    EXPECT_EQ(run.exit_code, 0) << version << ": " << run.output;
    EXPECT_EQ(run.output, expected) << version;
    EXPECT_FALSE(absl::StrContains(run.output, "Debug build")) << run.output;
  }
  // --help names it too.
  RunResult help = RunHawk(dir, {"--help"});
  EXPECT_TRUE(absl::StartsWith(help.output, base::VersionLine() + ": ")) << help.output;
}

TEST(BinaryTest, BadInputGetsAClearMessageAndANonZeroExit) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"--bogus"}, "bogus"},
      {{"--listen", "unix:/tmp/x.sock"}, "--master-socket is required"},
      {{"--master-socket", "/tmp/m.sock"}, "--listen"},
      {{"--master-socket", "/tmp/m.sock", "--listen", "tcp:localhost:80"}, "numeric"},
      {{"--master-socket", "/tmp/m.sock", "--listen", "unix:/tmp/x.sock", "--poll-interval", "1ms"},
       "--poll-interval"},
      {{"--master-socket", "/tmp/m.sock", "--listen", "unix:/nonexistent-dir/x.sock"},
       "nonexistent-dir"},
      // Above the journal's own limit, records a default hawk could not read back.
      {{"--master-socket", "/tmp/m.sock", "--listen", "unix:/tmp/x.sock",
        "--state-max-record-bytes", "67108865"},
       "--state-max-record-bytes must be between 1024 and 67108864, got 67108865"},
      {{"--master-socket", "/tmp/m.sock", "--listen", "unix:/tmp/x.sock",
        "--state-max-record-bytes", "1023"},
       "--state-max-record-bytes must be between 1024 and 67108864, got 1023"},
      // After `--` nothing is a flag (nor rewritten): hawk takes no other argument.
      {{"--master-socket", "/tmp/m.sock", "--listen", "unix:/tmp/x.sock", "--", "--poll-interval"},
       "unexpected argument \"--poll-interval\""},
      {{"--master-socket", "/tmp/m.sock", "--listen", "unix:/tmp/x.sock", "extra"},
       "unexpected argument \"extra\""},
  };
  for (const Case& c : cases) {
    RunResult run = RunHawk(dir, c.args);
    EXPECT_NE(run.exit_code, 0) << c.args[0];
    EXPECT_NE(run.output.find(c.message), std::string::npos)
        << "expected \"" << c.message << "\" in: " << run.output;
  }
}

}  // namespace
}  // namespace hawk::testing

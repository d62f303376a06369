#include "agent/parse/reply.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::parse {
namespace {

using testing::Endings;
using ::testing::HasSubstr;
using testing::kVersions;
using testing::ReadFixture;

struct FixtureCase {
  const char* file;
  ReplyCode code;
};

TEST(ReplyTest, MutationFixturesOfEveryVersion) {
  const std::vector<FixtureCase> cases = {
      {"err_no_such_backend.txt", ReplyCode::kNoSuchBackend},
      {"err_no_such_server.txt", ReplyCode::kNoSuchServer},
      {"err_unknown_command.txt", ReplyCode::kUnknownCommand},
      {"err_unknown_pid.txt", ReplyCode::kTargetNotFound},
      {"master_help.txt", ReplyCode::kUnknownCommand},  // what a too-long line gets
      {"ok_add_map.txt", ReplyCode::kEmptySuccess},
      {"ok_set_map.txt", ReplyCode::kEmptySuccess},
      {"ok_set_server_addr_port.txt", ReplyCode::kSuccess},
      {"ok_set_server_state_ready.txt", ReplyCode::kEmptySuccess},
      {"ok_set_weight.txt", ReplyCode::kEmptySuccess},
      {"old_worker_add_server.txt", ReplyCode::kSuccess},
      {"old_worker_set_map.txt", ReplyCode::kEmptySuccess},
      {"old_worker_set_server_refused.txt", ReplyCode::kProxyDisabled},
      // Data, not a mutation reply: unknown non-empty text is an error.
      {"old_worker_show_info.txt", ReplyCode::kOtherError},
      {"old_worker_show_servers_state.txt", ReplyCode::kOtherError},
      {"old_worker_show_sess.txt", ReplyCode::kOtherError},
  };
  for (absl::string_view version : kVersions) {
    for (const FixtureCase& c : cases) {
      for (const std::string& reply : Endings(ReadFixture(version, c.file))) {
        SCOPED_TRACE(absl::StrCat(version, "/", c.file, " ending ", reply.size()));
        ClassifiedReply classified = ClassifyMutationReply(reply);
        EXPECT_EQ(classified.code, c.code) << ReplyCodeName(classified.code);
        EXPECT_EQ(classified.ok(), IsSuccess(c.code));
        EXPECT_EQ(classified.severity, -1);
        EXPECT_EQ(classified.text, absl::StripAsciiWhitespace(reply));
      }
    }
  }
}

TEST(ReplyTest, MasterErrorsOfEveryVersion) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    std::string pid = ReadFixture(version, "err_unknown_pid.txt");
    // Recorded as the master sends it: one line, no blank line after it.
    EXPECT_EQ(pid, "Can't find the target PID matching the prefix '@!999999'\n");
    EXPECT_EQ(ClassifyMasterError(pid), ReplyCode::kTargetNotFound);
    EXPECT_TRUE(ClassifyMasterError(pid).has_value());
    for (const char* file : {"err_no_such_backend.txt", "err_no_such_server.txt",
                             "err_unknown_command.txt", "master_help.txt", "ok_set_weight.txt",
                             "ok_set_server_addr_port.txt", "old_worker_set_server_refused.txt",
                             "show_proc.txt", "worker_show_info.txt", "reload_ok_reply.txt"}) {
      SCOPED_TRACE(file);
      EXPECT_FALSE(ClassifyMasterError(ReadFixture(version, file)).has_value());
    }
  }
}

// Recorded master errors beyond err_unknown_pid.txt: a worker still parsing its config (3.1+), an
// `@@` prefix with an unknown pid, and the `@@!<pid>` line itself on 2.6 and 3.0, which do not know
// `@@`. On 3.2+ the `@@` line reaches the worker and is not a master error.
TEST(ReplyTest, RecordedMasterErrors) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    std::string unknown = ReadFixture(version, "atat_unknown_pid.txt");
    EXPECT_EQ(unknown, "Can't find the target PID matching the prefix '@@!999999'\n");
    EXPECT_EQ(ClassifyMasterError(unknown), ReplyCode::kTargetNotFound);
    std::string line = ReadFixture(version, "atat_line.txt");
    bool since_3_2 = version != "2.6" && version != "3.0";
    EXPECT_EQ(ClassifyMasterError(line).has_value(), !since_3_2) << line;
    EXPECT_FALSE(ClassifyMasterError(ReadFixture(version, "reload_failed_reply.txt")).has_value());
    if (since_3_2) {
      std::string starting = ReadFixture(version, "starting_worker_show_info.txt");
      EXPECT_THAT(starting, ::testing::StartsWith("Can't find the target PID matching the prefix"));
      EXPECT_EQ(ClassifyMasterError(starting), ReplyCode::kTargetNotFound);
      EXPECT_FALSE(
          ClassifyMasterError(ReadFixture(version, "reload_in_progress_reply.txt")).has_value());
    }
  }
}

TEST(ReplyTest, MasterErrorTexts) {
  EXPECT_EQ(ClassifyMasterError("Can't connect to the target CLI!\n"), ReplyCode::kCantConnect);
  EXPECT_EQ(ClassifyMasterError("Permission denied!\n"), ReplyCode::kPermissionDenied);
  EXPECT_EQ(ClassifyMasterError("Permission denied!"), ReplyCode::kPermissionDenied);
  EXPECT_EQ(ClassifyMasterError("Can't find the target PID matching the prefix '@2'\n\n"),
            ReplyCode::kTargetNotFound);
  // Not the master's: the worker's own check has no '!', and a second line means it is not a
  // master error reply.
  EXPECT_EQ(ClassifyMasterError("Permission denied\n\n"), absl::nullopt);
  EXPECT_EQ(ClassifyMasterError("Permission denied!\nmore\n"), absl::nullopt);
  EXPECT_EQ(ClassifyMasterError("Can't find the target PID matching the prefix '"), absl::nullopt);
  EXPECT_EQ(ClassifyMasterError(""), absl::nullopt);
  EXPECT_EQ(ClassifyMasterError("\n"), absl::nullopt);
  EXPECT_EQ(ClassifyMutationReply("Permission denied\n\n").code, ReplyCode::kPermissionDenied);
  EXPECT_EQ(ClassifyMutationReply("Permission denied!\n").code, ReplyCode::kPermissionDenied);
  EXPECT_EQ(ClassifyMutationReply("Can't connect to the target CLI!\n").code,
            ReplyCode::kCantConnect);
}

TEST(ReplyTest, KnownTexts) {
  struct Case {
    const char* reply;
    ReplyCode code;
  };
  const std::vector<Case> cases = {
      {"", ReplyCode::kEmptySuccess},
      {"\n", ReplyCode::kEmptySuccess},
      {"\n\n\n", ReplyCode::kEmptySuccess},
      {"IP changed from '127.0.0.1' to '127.0.0.2' by 'stats socket command'\n\n",
       ReplyCode::kSuccess},
      {"no need to change the addr by 'stats socket command'", ReplyCode::kSuccess},
      {"no need to change the addr, port changed from '5851' to '80' by 'stats socket command'\n",
       ReplyCode::kSuccess},
      {"IP changed from '127.0.0.3' to '127.0.0.4', no need to change the port by 'x'\n\n",
       ReplyCode::kSuccess},
      {"port changed from '80' to '81' by 'stats socket command'\n", ReplyCode::kSuccess},
      {"nothing changed\n\n", ReplyCode::kSuccess},
      {"New server registered.\n\n", ReplyCode::kSuccess},
      {"Server deleted.", ReplyCode::kSuccess},  // 2.6 prints it without LF
      {"Done.\n\n", ReplyCode::kSuccess},
      {"New version created: 3\n\n", ReplyCode::kSuccess},
      {"Proxy is disabled.\n\n", ReplyCode::kProxyDisabled},
      {"No such server.\n\n", ReplyCode::kNoSuchServer},
      {"No such backend.\n\n", ReplyCode::kNoSuchBackend},
      {"Unknown map identifier. Please use #<id> or <file>.\n\n", ReplyCode::kUnknownMap},
      {"Unknown ACL identifier. Please use #<id> or <file>.\n\n", ReplyCode::kUnknownAcl},
      {"Unknown command: 'frobnicate', but maybe one of the following ones is a better match:\n"
       "  help [<command>]                        : list matching or all commands\n\n",
       ReplyCode::kUnknownCommand},
      {"Unknown command. Please enter one of the following commands only:\n  quit\n\n",
       ReplyCode::kUnknownCommand},
      {"The following commands are valid at this level:\n  quit : disconnect\n\n",
       ReplyCode::kUnknownCommand},
      // `del server` and `add server`, as 2.6.12, 3.0.11, 3.2.26 and 3.4.7 answered them (2.6
      // without the blank line).
      {"Server still has connections attached to it, cannot remove it.\n", ReplyCode::kServerInUse},
      {"Backend must use a dynamic load balancing to support dynamic servers.\n\n",
       ReplyCode::kStaticBackend},
      {"Backend does not support dynamic servers : backend 'be_source' uses a non dynamic load "
       "balancing method.\n\n",
       ReplyCode::kStaticBackend},
      {"Already exists a server with the same name in backend.\n\n", ReplyCode::kOtherError},
      // Anything else from a mutating command is an error.
      {"Failed.\n\n", ReplyCode::kOtherError},
      {"Only servers in maintenance mode can be deleted.\n", ReplyCode::kNotInMaintenance},
      {"Trailing garbage in weight string", ReplyCode::kOtherError},
      {"Done. But something else\n\n", ReplyCode::kOtherError},
      {"New version created: x\n\n", ReplyCode::kOtherError},
      {"New version created: \n\n", ReplyCode::kOtherError},
      {"New version created: 99999999999999999999\n\n", ReplyCode::kOtherError},
      // A success message must be the whole reply.
      {"Done.\nNo such server.\n\n", ReplyCode::kOtherError},
      {"IP changed from 'a' to 'b'\nUnknown command: 'x'\n\n", ReplyCode::kOtherError},
      {"20 (initial 50)\n\n", ReplyCode::kOtherError},
      {"\x01\x02\xff", ReplyCode::kOtherError},
      {"[", ReplyCode::kOtherError},
      {"[3]: ", ReplyCode::kOtherError},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reply);
    EXPECT_EQ(ClassifyMutationReply(c.reply).code, c.code)
        << ReplyCodeName(ClassifyMutationReply(c.reply).code);
  }
}

TEST(ReplyTest, SeverityPrefixes) {
  ClassifiedReply error = ClassifyMutationReply("[3]: No such server.\n\n");
  EXPECT_EQ(error.code, ReplyCode::kNoSuchServer);
  EXPECT_EQ(error.severity, 3);
  EXPECT_EQ(error.text, "[3]: No such server.");

  // A warning is still a success.
  ClassifiedReply warning =
      ClassifyMutationReply("[4]: port changed from '80' to '8080' by 'stats socket command'\n\n");
  EXPECT_EQ(warning.code, ReplyCode::kSuccess);
  EXPECT_EQ(warning.severity, 4);

  EXPECT_EQ(ClassifyMutationReply("[3]: Proxy is disabled.\n\n").code, ReplyCode::kProxyDisabled);
  EXPECT_EQ(ClassifyMutationReply("[err]: Proxy is disabled.\n\n").severity, 3);
  EXPECT_EQ(ClassifyMutationReply("[warning]: Done.\n").code, ReplyCode::kSuccess);
  EXPECT_EQ(ClassifyMutationReply("[6]: New server registered.\n\n").code, ReplyCode::kSuccess);
  // Not a severity prefix: left alone.
  ClassifiedReply odd = ClassifyMutationReply("[9]: Done.\n\n");
  EXPECT_EQ(odd.code, ReplyCode::kOtherError);
  EXPECT_EQ(odd.severity, -1);
  EXPECT_EQ(ClassifyMutationReply("[bogus]: Done.\n\n").code, ReplyCode::kOtherError);
  EXPECT_EQ(ClassifyMutationReply("[3]:Done.\n\n").code, ReplyCode::kOtherError);
}

TEST(ReplyTest, ParseNewVersion) {
  for (absl::string_view reply : {"New version created: 7\n\n", "New version created: 7\n",
                                  "New version created: 7", "[4]: New version created: 7\n\n"}) {
    absl::StatusOr<int64_t> version = ParseNewVersion(reply);
    ASSERT_TRUE(version.ok()) << version.status();
    EXPECT_EQ(*version, 7);
  }
  for (absl::string_view bad :
       {"", "\n", "New version created:\n", "New version created: -1\n",
        "New version created: 7 8\n", "New version created: 7\nmore\n",
        "Unknown map identifier. Please use #<id> or <file>.\n\n", "Done.\n"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<int64_t> version = ParseNewVersion(bad);
    ASSERT_FALSE(version.ok());
    EXPECT_EQ(version.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(version.status().message(), HasSubstr("New version created"));
  }
}

// The codes that say the command never reached a worker that could answer it map to a Status;
// every other code is about the object asked for and is Ok (the caller reads it).
TEST(ReplyTest, ReplyCodeStatus) {
  const std::vector<std::pair<ReplyCode, absl::StatusCode>> cases = {
      {ReplyCode::kEmptySuccess, absl::StatusCode::kOk},
      {ReplyCode::kSuccess, absl::StatusCode::kOk},
      {ReplyCode::kProxyDisabled, absl::StatusCode::kOk},
      {ReplyCode::kNoSuchServer, absl::StatusCode::kOk},
      {ReplyCode::kNoSuchBackend, absl::StatusCode::kOk},
      {ReplyCode::kUnknownMap, absl::StatusCode::kOk},
      {ReplyCode::kUnknownAcl, absl::StatusCode::kOk},
      {ReplyCode::kEntryNotFound, absl::StatusCode::kOk},
      {ReplyCode::kKeyNotFound, absl::StatusCode::kOk},
      {ReplyCode::kOtherError, absl::StatusCode::kOk},
      {ReplyCode::kUnknownCommand, absl::StatusCode::kFailedPrecondition},
      {ReplyCode::kTargetNotFound, absl::StatusCode::kNotFound},
      {ReplyCode::kCantConnect, absl::StatusCode::kUnavailable},
      {ReplyCode::kPermissionDenied, absl::StatusCode::kPermissionDenied},
  };
  for (const auto& [code, status_code] : cases) {
    SCOPED_TRACE(ReplyCodeName(code));
    absl::Status status = ReplyCodeStatus(code, "show map: HAProxy replied \"x\"");
    EXPECT_EQ(status.code(), status_code);
    if (!status.ok()) {
      EXPECT_EQ(status.message(), "show map: HAProxy replied \"x\"");
    }
  }
  // Every master error the classifier finds has a Status.
  for (absl::string_view text : {"Can't find the target PID matching the prefix '@!9'\n",
                                 "Can't connect to the target CLI!\n", "Permission denied!\n"}) {
    absl::optional<ReplyCode> code = ClassifyMasterError(text);
    ASSERT_TRUE(code.has_value()) << text;
    EXPECT_FALSE(ReplyCodeStatus(*code, std::string(text)).ok()) << text;
  }
}

TEST(ReplyTest, CodeNames) {
  EXPECT_EQ(ReplyCodeName(ReplyCode::kNoSuchServer), "no_such_server");
  EXPECT_EQ(ReplyCodeName(ReplyCode::kOtherError), "other_error");
  EXPECT_TRUE(IsSuccess(ReplyCode::kEmptySuccess));
  EXPECT_FALSE(IsSuccess(ReplyCode::kProxyDisabled));
}

}  // namespace
}  // namespace hawk::parse

#include "agent/parse/reload.h"

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
using ::testing::StartsWith;

TEST(ReloadTest, TwoSixAnswersNothing) {
  for (const char* file : {"reload_ok_reply.txt", "reload_failed_reply.txt"}) {
    std::string reply = ReadFixture("2.6", file);
    EXPECT_EQ(reply, "");
    absl::StatusOr<ReloadReply> parsed = ParseReloadReply(reply);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->status, ReloadStatus::kNoStatus);
    EXPECT_EQ(parsed->log, "");
    EXPECT_FALSE(parsed->another_in_progress);
  }
}

TEST(ReloadTest, ThreeXFixtures) {
  for (absl::string_view version : {"3.0", "3.2", "3.4"}) {
    for (const std::string& reply : Endings(ReadFixture(version, "reload_ok_reply.txt"))) {
      SCOPED_TRACE(absl::StrCat(version, " ok ending ", reply.size()));
      absl::StatusOr<ReloadReply> parsed = ParseReloadReply(reply);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(parsed->status, ReloadStatus::kSuccess);
      EXPECT_THAT(parsed->log, StartsWith("[NOTICE]"));
      EXPECT_THAT(parsed->log, HasSubstr("Loading success."));
      EXPECT_NE(parsed->log.back(), '\n');
      EXPECT_FALSE(parsed->another_in_progress);
    }
    for (const std::string& reply : Endings(ReadFixture(version, "reload_failed_reply.txt"))) {
      SCOPED_TRACE(absl::StrCat(version, " failed ending ", reply.size()));
      absl::StatusOr<ReloadReply> parsed = ParseReloadReply(reply);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(parsed->status, ReloadStatus::kFailure);
      EXPECT_THAT(parsed->log, HasSubstr("unknown keyword 'bogus_keyword'"));
      EXPECT_FALSE(parsed->another_in_progress);
    }
  }
}

// 3.1+: `reload` sent while the new worker of the previous one still parses its config.
TEST(ReloadTest, AnotherReloadInProgressFixtures) {
  for (absl::string_view version : {"3.2", "3.4"}) {
    std::string raw = ReadFixture(version, "reload_in_progress_reply.txt");
    EXPECT_EQ(raw, "Success=0\n--\nAnother reload is still in progress.\n\n") << version;
    for (const std::string& reply : Endings(raw)) {
      SCOPED_TRACE(absl::StrCat(version, " ending ", reply.size()));
      absl::StatusOr<ReloadReply> parsed = ParseReloadReply(reply);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(parsed->status, ReloadStatus::kFailure);
      EXPECT_TRUE(parsed->another_in_progress);
    }
  }
}

TEST(ReloadTest, AnotherReloadInProgress) {
  for (const std::string& reply :
       Endings("Success=0\n--\nAnother reload is still in progress.\n\n")) {
    absl::StatusOr<ReloadReply> parsed = ParseReloadReply(reply);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->status, ReloadStatus::kFailure);
    EXPECT_TRUE(parsed->another_in_progress);
    EXPECT_EQ(parsed->log, "Another reload is still in progress.");
  }
}

TEST(ReloadTest, StatusLineAlone) {
  absl::StatusOr<ReloadReply> parsed = ParseReloadReply("Success=1\n\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->status, ReloadStatus::kSuccess);
  EXPECT_EQ(parsed->log, "");
  parsed = ParseReloadReply("Success=1\n--\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->log, "");
  parsed = ParseReloadReply("  \n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->status, ReloadStatus::kNoStatus);
}

TEST(ReloadTest, Errors) {
  for (absl::string_view bad :
       {"Success=2\n--\n", "success=1\n", "Success=\n",
        "Unknown command. Please enter one of the "
        "following commands only:\n  quit\n\n",
        "Success=1\nlogs without separator\n", "--\nSuccess=1\n", "\nSuccess=1\n"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<ReloadReply> parsed = ParseReloadReply(bad);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()), StartsWith("reload: line"));
  }
}

}  // namespace
}  // namespace hawk::parse

#include "agent/parse/show_sess.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::parse {
namespace {

using testing::Endings;
using ::testing::HasSubstr;
using testing::kVersions;
using testing::ReadFixture;

TEST(ShowSessTest, Fixtures) {
  struct Case {
    const char* file;
    int64_t request_age;
  };
  for (absl::string_view version : kVersions) {
    // The request's age when it was recorded: at once, then on the leaving worker after the reload.
    const int64_t old_age = version == "2.6" ? 6 : 2;
    for (const Case& c :
         {Case{"worker_show_sess_inflight.txt", 0}, Case{"old_worker_show_sess.txt", old_age}}) {
      for (const std::string& reply : Endings(ReadFixture(version, c.file))) {
        SCOPED_TRACE(absl::StrCat(version, "/", c.file, " ending ", reply.size()));
        absl::StatusOr<std::vector<SessionRow>> rows = ParseShowSess(reply);
        ASSERT_TRUE(rows.ok()) << rows.status();
        ASSERT_EQ(rows->size(), 2u);
        const SessionRow& request = (*rows)[0];
        EXPECT_THAT(request.id, ::testing::StartsWith("0x"));
        EXPECT_EQ(request.proto, "tcpv4");
        EXPECT_THAT(request.source, ::testing::StartsWith("127.0.0.1:"));
        EXPECT_EQ(request.frontend, "fe");
        EXPECT_EQ(request.backend, "be_app");
        EXPECT_EQ(request.server, "web1");
        EXPECT_EQ(request.age_seconds, c.request_age);
        EXPECT_FALSE(request.is_cli());
        EXPECT_EQ(request.fields.at("rc"), "0");
        EXPECT_EQ(request.fields.at("c_exp"), "");
        EXPECT_THAT(request.fields.at("rq"), ::testing::StartsWith("[f="));
        EXPECT_THAT(request.fields.at("scf"), ::testing::StartsWith("[8,"));

        const SessionRow& cli = (*rows)[1];
        EXPECT_TRUE(cli.is_cli());
        EXPECT_EQ(cli.proto, "sockpair");
        EXPECT_EQ(cli.backend, "");
        EXPECT_EQ(cli.server, "");
        EXPECT_EQ(cli.fields.at("be"), "<NONE>");
        EXPECT_EQ(cli.fields.at("srv"), "<none>");
        EXPECT_EQ(cli.age_seconds, 0);
      }
    }
  }
  absl::StatusOr<std::vector<SessionRow>> rows =
      ParseShowSess(ReadFixture("2.6", "old_worker_show_sess.txt"));
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].id, "0x5605170dc5e0");
}

TEST(ShowSessTest, NoStreamsAndOddTokens) {
  absl::StatusOr<std::vector<SessionRow>> none = ParseShowSess("\n");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  absl::StatusOr<std::vector<SessionRow>> rows = ParseShowSess(
      "0xab: proto=tcpv6 src=[::1]:40000 fe=f be=b srv=s age=1d2h flag fe=dup\n"
      "0xcd: fe=f age=?\n");
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ((*rows)[0].source, "[::1]:40000");
  EXPECT_EQ((*rows)[0].age_seconds, 86400 + 7200);
  EXPECT_EQ((*rows)[0].fields.at("flag"), "");
  EXPECT_EQ((*rows)[0].frontend, "f");  // the first fe= wins
  EXPECT_EQ((*rows)[1].age_seconds, -1);
  EXPECT_EQ((*rows)[1].proto, "");
}

TEST(ShowSessTest, Errors) {
  for (absl::string_view bad :
       {"proto=tcpv4 fe=fe\n", "0x12 proto=tcpv4 fe=fe\n", "0x: fe=fe\n", "0xgg: fe=fe\n",
        "0x1: proto=tcpv4\n", "0x1: fe=a\n\n0x2: fe=b\n", "Unknown command.\n", "  0x1: fe=a\n"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<std::vector<SessionRow>> rows = ParseShowSess(bad);
    ASSERT_FALSE(rows.ok());
    EXPECT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(rows.status().message(), HasSubstr("show sess: line"));
  }
}

}  // namespace
}  // namespace hawk::parse

#include "agent/parse/show_info.h"

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

struct Case {
  const char* version;
  const char* file;
  int pid;
  bool stopping;
  int64_t curr_conns;
  int64_t uptime;
  const char* haproxy;
  int64_t listeners;
  size_t field_count;
};

TEST(ShowInfoTest, Fixtures) {
  const std::vector<Case> cases = {
      {"2.6", "worker_show_info.txt", 6892, false, 0, 2, "2.6.12-1+deb12u4", 2, 69},
      {"2.6", "old_worker_show_info.txt", 6892, true, 1, 9, "2.6.12-1+deb12u4", 1, 69},
      {"3.0", "worker_show_info.txt", 7486, false, 0, 0, "3.0.11-1+deb13u4", 2, 76},
      {"3.0", "old_worker_show_info.txt", 7486, true, 1, 3, "3.0.11-1+deb13u4", 1, 76},
      {"3.2", "worker_show_info.txt", 7999, false, 0, 0, "3.2.26-1", 2, 76},
      {"3.2", "old_worker_show_info.txt", 7999, true, 1, 8, "3.2.26-1", 1, 76},
      {"3.4", "worker_show_info.txt", 8586, false, 0, 1, "3.4.7-1", 2, 79},
      {"3.4", "old_worker_show_info.txt", 8586, true, 1, 3, "3.4.7-1", 1, 79},
  };
  for (const Case& c : cases) {
    for (const std::string& reply : Endings(ReadFixture(c.version, c.file))) {
      SCOPED_TRACE(absl::StrCat(c.version, "/", c.file, " ending ", reply.size()));
      absl::StatusOr<ShowInfo> info = ParseShowInfo(reply);
      ASSERT_TRUE(info.ok()) << info.status();
      EXPECT_EQ(info->pid, c.pid);
      EXPECT_EQ(info->stopping, c.stopping);
      EXPECT_EQ(info->curr_conns, c.curr_conns);
      EXPECT_EQ(info->uptime_seconds, c.uptime);
      EXPECT_EQ(info->version, c.haproxy);
      EXPECT_EQ(info->node, "vm");
      EXPECT_EQ(info->listeners, c.listeners);
      EXPECT_EQ(info->fields.size(), c.field_count);
      EXPECT_EQ(info->fields.at("Name"), "HAProxy");
      // Keys with spaces are kept whole.
      EXPECT_EQ(info->fields.at("Unstoppable Jobs"), "1");
      EXPECT_EQ(info->fields.at("Build info"), c.haproxy);
      // The value keeps its inner space ("0d 0h00m00s").
      EXPECT_THAT(info->fields.at("Uptime"), HasSubstr("d "));
    }
  }
}

constexpr absl::string_view kMinimal =
    "Version: 3.4.0\nPid: 42\nUptime_sec: 7\nCurrConns: 3\nStopping: 0\n";

TEST(ShowInfoTest, OptionalFieldsAbsent) {
  absl::StatusOr<ShowInfo> info = ParseShowInfo(kMinimal);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->pid, 42);
  EXPECT_EQ(info->listeners, -1);
  EXPECT_EQ(info->node, "");
}

TEST(ShowInfoTest, EmptyValueAndColonInValue) {
  absl::StatusOr<ShowInfo> info =
      ParseShowInfo(absl::StrCat(kMinimal, "description:\nnode: a:b\n"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->fields.at("description"), "");
  EXPECT_EQ(info->node, "a:b");
}

TEST(ShowInfoTest, Errors) {
  struct Bad {
    std::string reply;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {"", "empty reply"},
      {"\n", "empty reply"},
      {"Version: 3.4\nPid: 42\nUptime_sec: 7\nCurrConns: 3\n", "no \"Stopping:\" line"},
      {"Pid: 42\nUptime_sec: 7\nCurrConns: 3\nStopping: 0\n", "no \"Version:\" line"},
      {"Version: 3.4\nUptime_sec: 7\nCurrConns: 3\nStopping: 0\n", "no \"Pid:\" line"},
      {"Version: 3.4\nPid: 42\nCurrConns: 3\nStopping: 0\n", "no \"Uptime_sec:\" line"},
      {"Version: 3.4\nPid: 42\nUptime_sec: 7\nStopping: 0\n", "no \"CurrConns:\" line"},
      {"Version: 3.4\nPid: 42\nUptime_sec: 7\nCurrConns: 3\nStopping: 2\n", "0 or 1"},
      {"Version: 3.4\nPid: x\nUptime_sec: 7\nCurrConns: 3\nStopping: 0\n", "expected a pid"},
      {"Version: 3.4\nPid: 0\nUptime_sec: 7\nCurrConns: 3\nStopping: 0\n", "expected a pid"},
      {"Version: 3.4\nPid: 4294967296\nUptime_sec: 7\nCurrConns: 3\nStopping: 0\n",
       "expected a pid"},
      {"Version: 3.4\nPid: 1\nUptime_sec: 99999999999999999999\nCurrConns: 3\nStopping: 0\n",
       "Uptime_sec"},
      {"Version: 3.4\nPid: 1\nUptime_sec: 7\nCurrConns: -3\nStopping: 0\n", "CurrConns"},
      {"Version:\nPid: 1\nUptime_sec: 7\nCurrConns: 3\nStopping: 0\n", "Version"},
      {absl::StrCat(kMinimal, "Listeners: many\n"), "Listeners"},
      {absl::StrCat(kMinimal, "garbage\n"), "line 6 \"garbage\": expected \"Key: value\""},
      {absl::StrCat(kMinimal, ": value\n"), "expected \"Key: value\""},
      {absl::StrCat(kMinimal, "\nPid: 43\n"), "empty line"},
      {"No such server.\n\n", "line 1"},
      {"Can't find the target PID matching the prefix '@!1'\n", "line 1"},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.reply);
    absl::StatusOr<ShowInfo> info = ParseShowInfo(bad.reply);
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(info.status().message(), HasSubstr(bad.message));
    EXPECT_THAT(info.status().message(), HasSubstr("show info"));
  }
}

TEST(ShowInfoTest, TooManyFields) {
  std::string reply(kMinimal);
  for (int i = 0; i < 5000; ++i) absl::StrAppend(&reply, "K", i, ": v\n");
  absl::StatusOr<ShowInfo> info = ParseShowInfo(reply);
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(info.status().message(), HasSubstr("over the limit"));
}

}  // namespace
}  // namespace hawk::parse

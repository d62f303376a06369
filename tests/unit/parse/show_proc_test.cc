#include "agent/parse/show_proc.h"

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

struct Row {
  int pid;
  int reloads;
  bool old;
  int64_t uptime;
};

struct Case {
  const char* version;
  const char* file;
  const char* haproxy;  // version column
  int master_pid;
  int master_reloads;
  int master_failed;
  int64_t master_uptime;
  std::vector<Row> workers;
};

std::vector<Case> Cases() {
  const char* v26 = "2.6.12-1+deb12u4";
  const char* v30 = "3.0.11-1+deb13u4";
  const char* v32 = "3.2.26-1";
  const char* v34 = "3.4.7-1";
  return {
      {"2.6", "show_proc.txt", v26, 6869, 0, 0, 2, {{6892, 0, false, 1}}},
      {"2.6",
       "show_proc_with_old_worker.txt",
       v26,
       6869,
       1,
       0,
       9,
       {{7011, 0, false, 1}, {6892, 1, true, 8}}},
      {"2.6",
       "show_proc_after_failed_reload.txt",
       v26,
       6869,
       2,
       1,
       13,
       {{7011, 1, false, 5}, {6892, 2, true, 12}}},
      {"3.0", "show_proc.txt", v30, 7478, 0, 0, 0, {{7486, 0, false, 0}}},
      {"3.0",
       "show_proc_with_old_worker.txt",
       v30,
       7478,
       1,
       0,
       3,
       {{7625, 0, false, 1}, {7486, 1, true, 3}}},
      {"3.0",
       "show_proc_after_failed_reload.txt",
       v30,
       7478,
       2,
       1,
       4,
       {{7625, 1, false, 2}, {7486, 2, true, 4}}},
      // 3.1+ prints the version padded to 15 characters: "3.2.26-1       " ends the row.
      {"3.2", "show_proc.txt", v32, 7991, 0, 0, 1, {{7999, 0, false, 1}}},
      {"3.2",
       "show_proc_with_old_worker.txt",
       v32,
       7991,
       1,
       0,
       8,
       {{8107, 0, false, 1}, {7999, 1, true, 8}}},
      // 3.1+ after a failed reload: "# workers" is empty and the serving worker (8107) is listed
      // under "# old workers". The parser reports that as it is.
      {"3.2",
       "show_proc_after_failed_reload.txt",
       v32,
       7991,
       2,
       1,
       9,
       {{8107, 1, true, 2}, {7999, 2, true, 9}}},
      // 3.1+ while the new worker (8203) parses its config: it is listed under "# workers", the
      // worker still serving (8107) under "# old workers", and "[failed:]" is already back to 0.
      {"3.2",
       "show_proc_starting_worker.txt",
       v32,
       7991,
       3,
       0,
       11,
       {{8203, 0, false, 0}, {8107, 2, true, 4}}},
      {"3.4", "show_proc.txt", v34, 8577, 0, 0, 1, {{8586, 0, false, 1}}},
      {"3.4",
       "show_proc_with_old_worker.txt",
       v34,
       8577,
       1,
       0,
       3,
       {{8674, 0, false, 1}, {8586, 1, true, 3}}},
      // 3.4 after a failed reload: "# workers" is empty and the serving worker is listed under
      // "# old workers". The parser reports that as it is.
      {"3.4",
       "show_proc_after_failed_reload.txt",
       v34,
       8577,
       2,
       1,
       4,
       {{8674, 1, true, 2}, {8586, 2, true, 4}}},
      {"3.4",
       "show_proc_starting_worker.txt",
       v34,
       8577,
       3,
       0,
       6,
       {{8785, 0, false, 1}, {8674, 2, true, 4}}},
  };
}

TEST(ShowProcTest, Fixtures) {
  for (const Case& c : Cases()) {
    std::string raw = ReadFixture(c.version, c.file);
    for (const std::string& reply : Endings(raw)) {
      SCOPED_TRACE(absl::StrCat(c.version, "/", c.file, " ending ", reply.size()));
      absl::StatusOr<ShowProc> proc = ParseShowProc(reply);
      ASSERT_TRUE(proc.ok()) << proc.status();
      EXPECT_EQ(proc->master.pid, c.master_pid);
      EXPECT_EQ(proc->master.type, "master");
      EXPECT_EQ(proc->master.reloads, c.master_reloads);
      EXPECT_EQ(proc->master.failed_reloads, c.master_failed);
      EXPECT_EQ(proc->master.uptime_seconds, c.master_uptime);
      EXPECT_EQ(proc->master.version, c.haproxy);
      EXPECT_FALSE(proc->master.listed_as_old);
      ASSERT_EQ(proc->workers.size(), c.workers.size());
      for (size_t i = 0; i < c.workers.size(); ++i) {
        const ProcessEntry& w = proc->workers[i];
        EXPECT_EQ(w.pid, c.workers[i].pid);
        EXPECT_EQ(w.type, "worker");
        EXPECT_EQ(w.reloads, c.workers[i].reloads);
        EXPECT_EQ(w.listed_as_old, c.workers[i].old);
        EXPECT_EQ(w.uptime_seconds, c.workers[i].uptime);
        EXPECT_EQ(w.version, c.haproxy);
        EXPECT_EQ(w.failed_reloads, 0);
      }
      EXPECT_TRUE(proc->programs.empty());
    }
  }
}

TEST(ShowProcTest, ProgramsAndOldPrograms) {
  absl::StatusOr<ShowProc> proc = ParseShowProc(
      "#<PID>          <type>          <reloads>       <uptime>        <version>      \n"
      "100             master          3 [failed: 0]   1d02h03m04s     2.6.12\n"
      "# workers\n"
      "101             worker          0               0d00h00m05s     2.6.12\n"
      "# programs\n"
      "102             dataplaneapi    0               0d00h00m05s     -\n"
      "# old programs\n"
      "99              dataplaneapi    1               0d00h10m00s     -\n\n");
  ASSERT_TRUE(proc.ok()) << proc.status();
  EXPECT_EQ(proc->master.uptime_seconds, 86400 + 2 * 3600 + 3 * 60 + 4);
  ASSERT_EQ(proc->programs.size(), 2u);
  EXPECT_EQ(proc->programs[0].type, "dataplaneapi");
  EXPECT_EQ(proc->programs[0].version, "");
  EXPECT_FALSE(proc->programs[0].listed_as_old);
  EXPECT_EQ(proc->programs[1].pid, 99);
  EXPECT_TRUE(proc->programs[1].listed_as_old);
  EXPECT_EQ(proc->programs[1].uptime_seconds, 600);
  ASSERT_EQ(proc->workers.size(), 1u);
}

TEST(ShowProcTest, DebugColumnsAndLongFieldsAreTolerated) {
  // `show proc debug` (3.1+) appends "\t\t <fd> <fd>"; a field over 15 characters is followed by
  // a single space.
  absl::StatusOr<ShowProc> proc = ParseShowProc(
      "#<PID>          <type>          <reloads>       <uptime>        <version>      \n"
      "1234567         master          100 [failed: 10] 123d23h59m59s 3.4.0-64a335366-long\t\t 5 "
      "6\n"
      "# workers\n"
      "1234568         worker          0               0d00h00m00s     3.4.0-64a335366\t\t 7 8\n");
  ASSERT_TRUE(proc.ok()) << proc.status();
  EXPECT_EQ(proc->master.reloads, 100);
  EXPECT_EQ(proc->master.failed_reloads, 10);
  EXPECT_EQ(proc->master.uptime_seconds, 123 * 86400 + 23 * 3600 + 59 * 60 + 59);
  EXPECT_EQ(proc->master.version, "3.4.0-64a335366-long");
  ASSERT_EQ(proc->workers.size(), 1u);
  EXPECT_EQ(proc->workers[0].version, "3.4.0-64a335366");
}

TEST(ShowProcTest, UnknownSectionIsSkipped) {
  absl::StatusOr<ShowProc> proc = ParseShowProc(
      "#<PID> <type> <reloads> <uptime> <version>\n"
      "1 master 0 [failed: 0] 0d00h00m00s 3.9\n"
      "# workers\n"
      "2 worker 0 0d00h00m00s 3.9\n"
      "# future things\n"
      "3 whatever 0 0d00h00m00s 3.9\n");
  ASSERT_TRUE(proc.ok()) << proc.status();
  ASSERT_EQ(proc->workers.size(), 1u);
  EXPECT_TRUE(proc->programs.empty());
}

TEST(ShowProcTest, Errors) {
  const std::string header = "#<PID> <type> <reloads> <uptime> <version>\n";
  const std::string master = "1 master 0 [failed: 0] 0d00h00m00s 3.4.0\n";
  struct Bad {
    std::string reply;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {"", "show proc: empty reply"},
      {"\n\n", "show proc: empty reply"},
      {"1 master 0 [failed: 0] 0d00h00m00s 3.4.0\n", "line 1"},
      {header, "no master row"},
      {header + "# workers\n2 worker 0 0d00h00m00s 3.4.0\n", "section before the master row"},
      {header + "x master 0 [failed: 0] 0d00h00m00s 3.4.0\n", "expected a pid"},
      {header + "0 master 0 [failed: 0] 0d00h00m00s 3.4.0\n", "expected a pid"},
      {header + "-5 master 0 [failed: 0] 0d00h00m00s 3.4.0\n", "expected a pid"},
      {header + "99999999999999999999 master 0 [failed: 0] 0d00h00m00s 3.4.0\n", "expected a pid"},
      {header + "3000000000 master 0 [failed: 0] 0d00h00m00s 3.4.0\n", "expected a pid"},
      {header + "1 master 0 [failed: x] 0d00h00m00s 3.4.0\n", "failed reload count"},
      {header + "1 master 0 [failed: 0] 0d00h00m00s\n", "truncated"},
      {header + "1 master 0 [failed:\n", "truncated"},
      {header + "1 master x [failed: 0] 0d00h00m00s 3.4.0\n", "reload count"},
      {header + "1 master 0 [failed: 0] 12:00 3.4.0\n", "uptime"},
      {header + "1 master 0 [failed: 0] 0d00h00m00 3.4.0\n", "uptime"},
      {header + "1 master 0 [failed: 0] 0s0d 3.4.0\n", "uptime"},
      {header + "1 worker 0 0d00h00m00s 3.4.0\n", "expected the master row"},
      {header + master + master, "a second row"},
      {header + master + "# workers\n2 worker 0 0d00h00m00s\n", "truncated"},
      {header + master + "# workers\n2 master 0 0d00h00m00s 3.4.0\n", "\"worker\""},
      {header + master + "# workers\n1 worker 0 0d00h00m00s 3.4.0\n", "listed twice"},
      {header + master + "# workers\n2 worker 0 0d00h00m00s 3.4.0\n\n3 worker 0 0s 3.4\n",
       "empty line"},
      {header + master + "# programs\n3 worker 0 0d00h00m00s -\n", "programs section"},
      {header + master + "# workers\n2\n", "expected a process row"},
      {"Unknown command, but maybe one of the following ones is a better match:\n", "line 1"},
      {"Can't find the target PID matching the prefix '@!1'\n", "#<PID>"},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.reply);
    absl::StatusOr<ShowProc> proc = ParseShowProc(bad.reply);
    ASSERT_FALSE(proc.ok());
    EXPECT_EQ(proc.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(proc.status().message(), HasSubstr(bad.message));
    EXPECT_THAT(proc.status().message(), HasSubstr("show proc"));
  }
}

TEST(ShowProcTest, ErrorQuotesTheLine) {
  absl::StatusOr<ShowProc> proc = ParseShowProc(
      "#<PID> <type>\n1 master 0 [failed: 0] 0d00h00m00s 3.4\n# workers\nabc worker 0 0s 1\n");
  ASSERT_FALSE(proc.ok());
  EXPECT_EQ(proc.status().message(), "show proc: line 4 \"abc worker 0 0s 1\": expected a pid");
}

}  // namespace
}  // namespace hawk::parse

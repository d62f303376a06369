#include "agent/reload/judge.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "agent/parse/show_info.h"
#include "agent/parse/show_proc.h"
#include "agent/registry/classify.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::reload {
namespace {

using parse::ReloadStatus;
using parse::testing::ReadFixture;
using ::testing::HasSubstr;

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPending:
      return "PENDING";
    case Verdict::kSucceeded:
      return "SUCCEEDED";
    case Verdict::kFailed:
      return "FAILED";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Hand-built reports: every rule of the judge, one row each.

struct W {
  int pid;
  model::WorkerRole role;
};

// What the master reports after `reload` was sent.
struct Master {
  int pid;
  int reloads;
  int failed;
};

struct Case {
  const char* name;
  ReloadStatus reply;
  Master master;
  std::vector<W> workers;
  Verdict verdict;
  int new_worker_pid;  // kSucceeded
  const char* reason;  // kFailed: a substring of the reason
};

Case Pending(const char* name, ReloadStatus reply, Master master, std::vector<W> workers) {
  return Case{name, reply, master, std::move(workers), Verdict::kPending, 0, ""};
}
Case Succeeded(const char* name, ReloadStatus reply, Master master, std::vector<W> workers,
               int new_worker_pid) {
  return Case{name, reply, master, std::move(workers), Verdict::kSucceeded, new_worker_pid, ""};
}
Case Failed(const char* name, ReloadStatus reply, Master master, std::vector<W> workers,
            const char* reason) {
  return Case{name, reply, master, std::move(workers), Verdict::kFailed, 0, reason};
}

// Before the reload: master 100 has reloaded once; 200 serves and 150 still leaves.
ReloadBaseline Baseline() { return ReloadBaseline{100, 1, {200, 150}}; }

model::WorkersReport Report(const Master& master, const std::vector<W>& workers) {
  model::WorkersReport report;
  report.master_reachable = true;
  report.master.pid = master.pid;
  report.master.reloads = master.reloads;
  report.master.failed_reloads = master.failed;
  for (const W& w : workers) {
    model::WorkerReport worker;
    worker.pid = w.pid;
    worker.role = w.role;
    worker.stopping = w.role == model::WorkerRole::kLeaving;
    report.workers.push_back(worker);
  }
  model::SortWorkers(&report.workers);
  return report;
}

constexpr model::WorkerRole kCurrent = model::WorkerRole::kCurrent;
constexpr model::WorkerRole kLeaving = model::WorkerRole::kLeaving;
constexpr model::WorkerRole kStarting = model::WorkerRole::kStarting;
constexpr model::WorkerRole kUnknown = model::WorkerRole::kUnknown;
constexpr ReloadStatus kNoStatus = ReloadStatus::kNoStatus;
constexpr ReloadStatus kSuccess = ReloadStatus::kSuccess;
constexpr ReloadStatus kFailure = ReloadStatus::kFailure;

std::vector<Case> Cases() {
  return {
      // 2.6: the reply is empty, the report decides.
      Pending("2.6 counter not moved yet", kNoStatus, {100, 1, 0},
              {{200, kCurrent}, {150, kLeaving}}),
      Pending("2.6 counter not moved, a new pid already listed", kNoStatus, {100, 1, 0},
              {{300, kCurrent}, {200, kLeaving}}),
      Succeeded("2.6 new current worker", kNoStatus, {100, 2, 0},
                {{300, kCurrent}, {200, kLeaving}, {150, kLeaving}}, 300),
      Succeeded("2.6 counter moved by more than one", kNoStatus, {100, 3, 0},
                {{300, kCurrent}, {200, kLeaving}}, 300),
      Failed("2.6 failed-reload count", kNoStatus, {100, 2, 1}, {{200, kCurrent}, {150, kLeaving}},
             "failed-reload count is 1"),
      Failed("2.6 failed count wins over a new current worker", kNoStatus, {100, 2, 1},
             {{300, kCurrent}, {200, kLeaving}}, "failed-reload count is 1"),
      Failed("2.6 failed count with the new worker still starting", kNoStatus, {100, 2, 2},
             {{300, kStarting}, {200, kCurrent}}, "failed-reload count is 2"),
      Pending("3.1+ new worker still STARTING", kNoStatus, {100, 2, 0},
              {{300, kStarting}, {200, kCurrent}, {150, kLeaving}}),
      Pending("new worker UNKNOWN (show info failed)", kNoStatus, {100, 2, 0},
              {{300, kUnknown}, {200, kCurrent}}),
      Pending("new worker already LEAVING is not the one serving", kNoStatus, {100, 2, 0},
              {{300, kLeaving}, {200, kCurrent}}),
      Pending("counter moved, only old pids CURRENT", kNoStatus, {100, 2, 0},
              {{200, kCurrent}, {150, kLeaving}}),
      Pending("counter moved, no worker listed at all", kNoStatus, {100, 2, 0}, {}),
      Failed("master restarted", kNoStatus, {101, 0, 0}, {{300, kCurrent}}, "restarted"),
      Failed("master restarted, reply Success=1", kSuccess, {101, 0, 0}, {{300, kCurrent}},
             "restarted"),
      Pending("master pid unknown in the report", kNoStatus, {0, 0, 0}, {}),
      // 2.7+: `Success=0|1` decides; the report only names the new worker.
      Succeeded("Success=1, counter not moved yet", kSuccess, {100, 1, 0},
                {{300, kCurrent}, {200, kLeaving}}, 300),
      Succeeded("Success=1, stale failed count from an earlier failure", kSuccess, {100, 2, 1},
                {{300, kCurrent}, {200, kLeaving}}, 300),
      Pending("Success=1, new worker still STARTING", kSuccess, {100, 2, 0},
              {{300, kStarting}, {200, kCurrent}}),
      Pending("Success=1, report still shows the old worker only", kSuccess, {100, 1, 0},
              {{200, kCurrent}}),
      Failed("Success=0", kFailure, {100, 2, 1}, {{200, kCurrent}}, "Success=0"),
      Failed("Success=0 whatever the report says", kFailure, {100, 2, 0},
             {{300, kCurrent}, {200, kLeaving}}, "did not load"),
      Pending("Success=0 before the report shows the attempt", kFailure, {100, 1, 0},
              {{200, kCurrent}}),
      Failed("Success=0, master restarted", kFailure, {101, 0, 0}, {{200, kCurrent}}, "Success=0"),
  };
}

TEST(JudgeTest, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    parse::ReloadReply reply;
    reply.status = c.reply;
    ReloadJudgement judgement = JudgeReload(Baseline(), reply, Report(c.master, c.workers));
    EXPECT_EQ(VerdictName(judgement.verdict), std::string(VerdictName(c.verdict)));
    EXPECT_EQ(judgement.new_worker_pid, c.new_worker_pid);
    if (c.verdict == Verdict::kFailed) {
      EXPECT_THAT(judgement.reason, HasSubstr(c.reason));
    } else {
      EXPECT_EQ(judgement.reason, "");
    }
  }
}

TEST(JudgeTest, FailedReasonNamesTheVersionAndTheWayOut) {
  parse::ReloadReply reply;  // 2.6: no status
  model::WorkersReport report = Report({100, 2, 1}, {{200, kCurrent}});
  ReloadJudgement judgement = JudgeReload(Baseline(), reply, report);
  ASSERT_EQ(judgement.verdict, Verdict::kFailed);
  EXPECT_THAT(judgement.reason, HasSubstr("HAProxy 2.6 gives no reason"));
  EXPECT_THAT(judgement.reason, HasSubstr("--haproxy-binary"));

  report.master.version = "2.6.12-1+deb12u4";
  judgement = JudgeReload(Baseline(), reply, report);
  ASSERT_EQ(judgement.verdict, Verdict::kFailed);
  EXPECT_THAT(judgement.reason, HasSubstr("HAProxy 2.6.12-1+deb12u4 gives no reason"));

  report = Report({4242, 0, 0}, {{300, kCurrent}});
  judgement = JudgeReload(Baseline(), reply, report);
  ASSERT_EQ(judgement.verdict, Verdict::kFailed);
  EXPECT_THAT(judgement.reason, HasSubstr("pid 100 -> 4242"));
}

// ---------------------------------------------------------------------------------------------
// Reports built as the registry builds them: recorded `show proc` listings, classified with the
// recorded `show info` of a serving (Stopping: 0) and a leaving (Stopping: 1) worker.

parse::ShowProc MustParseShowProc(absl::string_view version, absl::string_view file) {
  absl::StatusOr<parse::ShowProc> proc = parse::ParseShowProc(ReadFixture(version, file));
  EXPECT_TRUE(proc.ok()) << version << "/" << file << ": " << proc.status();
  return proc.ok() ? *proc : parse::ShowProc{};
}

parse::ShowInfo MustParseShowInfo(absl::string_view version, absl::string_view file) {
  absl::StatusOr<parse::ShowInfo> info = parse::ParseShowInfo(ReadFixture(version, file));
  EXPECT_TRUE(info.ok()) << version << "/" << file << ": " << info.status();
  return info.ok() ? *info : parse::ShowInfo{};
}

parse::ReloadReply MustParseReply(absl::string_view version, absl::string_view file) {
  absl::StatusOr<parse::ReloadReply> reply = parse::ParseReloadReply(ReadFixture(version, file));
  EXPECT_TRUE(reply.ok()) << version << "/" << file << ": " << reply.status();
  return reply.ok() ? *reply : parse::ReloadReply{};
}

ReloadBaseline BaselineFrom(const parse::ShowProc& proc) {
  ReloadBaseline baseline;
  baseline.master_pid = proc.master.pid;
  baseline.master_reloads = proc.master.reloads;
  for (const parse::ProcessEntry& worker : proc.workers) baseline.worker_pids.insert(worker.pid);
  return baseline;
}

// `serving` answers `show info` with Stopping: 0, `leaving` with Stopping: 1, `starting` with
// "Can't find the target PID" (3.1+ while it loads its configuration).
struct Infos {
  std::vector<int> serving;
  std::vector<int> leaving;
  std::vector<int> starting;
};

model::WorkersReport ReportFrom(absl::string_view version, const parse::ShowProc& proc,
                                const Infos& infos) {
  parse::ShowInfo serving = MustParseShowInfo(version, "worker_show_info.txt");
  parse::ShowInfo leaving = MustParseShowInfo(version, "old_worker_show_info.txt");
  EXPECT_FALSE(serving.stopping);
  EXPECT_TRUE(leaving.stopping);
  absl::flat_hash_map<int, absl::StatusOr<parse::ShowInfo>> answers;
  for (int pid : infos.serving) answers.emplace(pid, serving);
  for (int pid : infos.leaving) answers.emplace(pid, leaving);
  for (int pid : infos.starting) {
    answers.emplace(pid, absl::NotFoundError("Can't find the target PID matching the prefix"));
  }
  model::WorkersReport report;
  report.master_reachable = true;
  report.master = registry::MasterFromShowProc(proc);
  report.workers = registry::ClassifyWorkers(proc, answers, {});
  return report;
}

struct FixtureCase {
  absl::string_view version;
  int first_worker;   // the only worker of show_proc.txt
  int second_worker;  // started by the successful reload: `# workers` of
                      // show_proc_with_old_worker.txt
};

// The pids as each version's recording has them.
std::vector<FixtureCase> Fixtures() {
  std::vector<FixtureCase> cases;
  for (absl::string_view version : parse::testing::kVersions) {
    FixtureCase c{version, 0, 0};
    parse::ShowProc first = MustParseShowProc(version, "show_proc.txt");
    if (first.workers.size() == 1) c.first_worker = first.workers[0].pid;
    for (const parse::ProcessEntry& worker :
         MustParseShowProc(version, "show_proc_with_old_worker.txt").workers) {
      if (!worker.listed_as_old) c.second_worker = worker.pid;
    }
    EXPECT_NE(c.first_worker, 0) << version;
    EXPECT_NE(c.second_worker, 0) << version;
    cases.push_back(c);
  }
  return cases;
}

TEST(JudgeFixtureTest, SuccessfulReload) {
  for (const FixtureCase& f : Fixtures()) {
    SCOPED_TRACE(f.version);
    ReloadBaseline baseline = BaselineFrom(MustParseShowProc(f.version, "show_proc.txt"));
    EXPECT_EQ(baseline.worker_pids.size(), 1u);
    EXPECT_TRUE(baseline.worker_pids.contains(f.first_worker));
    parse::ReloadReply reply = MustParseReply(f.version, "reload_ok_reply.txt");
    EXPECT_EQ(reply.status, absl::string_view(f.version) == "2.6" ? ReloadStatus::kNoStatus
                                                                  : ReloadStatus::kSuccess);
    parse::ShowProc after = MustParseShowProc(f.version, "show_proc_with_old_worker.txt");

    // The new worker serves and the old one leaves.
    model::WorkersReport report =
        ReportFrom(f.version, after, {{f.second_worker}, {f.first_worker}, {}});
    ReloadJudgement judgement = JudgeReload(baseline, reply, report);
    EXPECT_EQ(VerdictName(judgement.verdict), std::string("SUCCEEDED"));
    EXPECT_EQ(judgement.new_worker_pid, f.second_worker);

    // Polled before the new worker answers (3.1+ lists it while it loads): not decided yet.
    report = ReportFrom(f.version, after, {{f.first_worker}, {}, {f.second_worker}});
    judgement = JudgeReload(baseline, reply, report);
    EXPECT_EQ(VerdictName(judgement.verdict), std::string("PENDING"));
    EXPECT_EQ(judgement.new_worker_pid, 0);

    // Polled before the master counted the reload: still the first listing.
    report = ReportFrom(f.version, MustParseShowProc(f.version, "show_proc.txt"),
                        {{f.first_worker}, {}, {}});
    judgement = JudgeReload(baseline, reply, report);
    EXPECT_EQ(VerdictName(judgement.verdict), std::string("PENDING"));
  }
}

TEST(JudgeFixtureTest, FailedReload) {
  for (const FixtureCase& f : Fixtures()) {
    SCOPED_TRACE(f.version);
    ReloadBaseline baseline =
        BaselineFrom(MustParseShowProc(f.version, "show_proc_with_old_worker.txt"));
    parse::ShowProc after = MustParseShowProc(f.version, "show_proc_after_failed_reload.txt");
    EXPECT_EQ(after.master.failed_reloads, 1);
    // The worker of the successful reload keeps serving; the first one is still leaving.
    model::WorkersReport report =
        ReportFrom(f.version, after, {{f.second_worker}, {f.first_worker}, {}});
    ASSERT_NE(report.Current(), nullptr);
    EXPECT_EQ(report.Current()->pid, f.second_worker);

    // The recorded reply (empty on 2.6, Success=0 on 3.x), and no reply at all (a connection cut
    // before the answer): failed either way, never a success.
    for (const parse::ReloadReply& reply :
         {MustParseReply(f.version, "reload_failed_reply.txt"), parse::ReloadReply{}}) {
      SCOPED_TRACE(static_cast<int>(reply.status));
      ReloadJudgement judgement = JudgeReload(baseline, reply, report);
      EXPECT_EQ(VerdictName(judgement.verdict), std::string("FAILED"));
      EXPECT_EQ(judgement.new_worker_pid, 0);
      EXPECT_FALSE(judgement.reason.empty());
      if (reply.status == ReloadStatus::kNoStatus) {
        EXPECT_THAT(judgement.reason, HasSubstr("failed-reload count is 1"));
      }
    }
  }
}

// 3.4 after a failed reload: `# workers` is empty and the serving worker is listed under
// `# old workers` with Stopping: 0, next to the leaving one. Judged from a baseline taken before
// the successful reload too (two reloads in one round), where that serving worker is new: the
// failed count still makes it a failure, not a success.
TEST(JudgeFixtureTest, ThreeFourFailedListingIsNotASuccess) {
  parse::ShowProc after = MustParseShowProc("3.4", "show_proc_after_failed_reload.txt");
  for (const parse::ProcessEntry& worker : after.workers) EXPECT_TRUE(worker.listed_as_old);
  // Listed in ascending reload order: the serving worker (1 reload), then the leaving one (2).
  ASSERT_EQ(after.workers.size(), 2u);
  const int serving = after.workers[0].pid;
  const int leaving = after.workers[1].pid;
  model::WorkersReport report = ReportFrom("3.4", after, {{serving}, {leaving}, {}});
  ASSERT_NE(report.Current(), nullptr);
  EXPECT_EQ(report.Current()->pid, serving);
  EXPECT_TRUE(report.Current()->listed_as_old);

  for (const char* baseline_file : {"show_proc_with_old_worker.txt", "show_proc.txt"}) {
    SCOPED_TRACE(baseline_file);
    ReloadBaseline baseline = BaselineFrom(MustParseShowProc("3.4", baseline_file));
    ReloadJudgement judgement = JudgeReload(baseline, parse::ReloadReply{}, report);
    EXPECT_EQ(VerdictName(judgement.verdict), std::string("FAILED"));
    EXPECT_EQ(judgement.new_worker_pid, 0);
    EXPECT_THAT(judgement.reason, HasSubstr("failed-reload count is 1"));
    EXPECT_THAT(judgement.reason, HasSubstr("3.4.7-1"));

    judgement = JudgeReload(baseline, MustParseReply("3.4", "reload_failed_reply.txt"), report);
    EXPECT_EQ(VerdictName(judgement.verdict), std::string("FAILED"));
    EXPECT_THAT(judgement.reason, HasSubstr("Success=0"));
  }
}

}  // namespace
}  // namespace hawk::reload

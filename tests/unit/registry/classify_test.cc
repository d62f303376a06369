#include "agent/registry/classify.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace hawk::registry {
namespace {

std::string ReadFixture(const std::string& relative) {
  std::ifstream in(std::string(HAWK_FIXTURES_DIR) + "/" + relative, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

parse::ShowInfo Info(int pid, bool stopping, int conns) {
  parse::ShowInfo info;
  info.pid = pid;
  info.stopping = stopping;
  info.curr_conns = conns;
  info.uptime_seconds = 3;
  info.version = "x";
  return info;
}

// 3.4 after a failed reload: "# workers" is empty, the serving worker (the one of the last
// successful reload, 1 reload lived through) sits under "# old workers" with Stopping: 0. It is
// CURRENT; the first worker (2 reloads, Stopping: 1) is LEAVING.
TEST(ClassifyTest, FailedReloadListingOn34) {
  absl::StatusOr<parse::ShowProc> proc =
      parse::ParseShowProc(ReadFixture("haproxy-3.4/show_proc_after_failed_reload.txt"));
  ASSERT_TRUE(proc.ok()) << proc.status();
  ASSERT_EQ(proc->workers.size(), 2u);
  const parse::ProcessEntry& serving = proc->workers[0];
  const parse::ProcessEntry& leaving = proc->workers[1];
  ASSERT_TRUE(serving.listed_as_old);
  ASSERT_EQ(serving.reloads, 1);
  ASSERT_EQ(leaving.reloads, 2);
  absl::flat_hash_map<int, absl::StatusOr<parse::ShowInfo>> infos;
  infos.emplace(serving.pid, Info(serving.pid, false, 0));
  infos.emplace(leaving.pid, Info(leaving.pid, true, 1));
  std::vector<model::WorkerReport> workers = ClassifyWorkers(*proc, infos, {});
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(workers[0].pid, serving.pid);
  EXPECT_EQ(workers[0].role, model::WorkerRole::kCurrent);
  EXPECT_TRUE(workers[0].listed_as_old);
  EXPECT_EQ(workers[1].pid, leaving.pid);
  EXPECT_EQ(workers[1].role, model::WorkerRole::kLeaving);
  EXPECT_EQ(workers[1].connections, 1);
  model::MasterReport master = MasterFromShowProc(*proc);
  EXPECT_EQ(master.failed_reloads, 1);
  EXPECT_EQ(master.reloads, 2);
}

TEST(ClassifyTest, LeavingWorkerOnEveryVersion) {
  for (const char* version : {"haproxy-2.6", "haproxy-3.0", "haproxy-3.2", "haproxy-3.4"}) {
    SCOPED_TRACE(version);
    absl::StatusOr<parse::ShowProc> proc =
        parse::ParseShowProc(ReadFixture(absl::StrCat(version, "/show_proc_with_old_worker.txt")));
    ASSERT_TRUE(proc.ok()) << proc.status();
    absl::StatusOr<parse::ShowInfo> old_info =
        parse::ParseShowInfo(ReadFixture(absl::StrCat(version, "/old_worker_show_info.txt")));
    ASSERT_TRUE(old_info.ok()) << old_info.status();
    ASSERT_TRUE(old_info->stopping);
    absl::flat_hash_map<int, absl::StatusOr<parse::ShowInfo>> infos;
    for (const parse::ProcessEntry& e : proc->workers) {
      infos.emplace(e.pid, e.listed_as_old ? *old_info : Info(e.pid, false, 0));
    }
    std::vector<model::WorkerReport> workers = ClassifyWorkers(*proc, infos, {});
    ASSERT_EQ(workers.size(), 2u);
    EXPECT_EQ(workers[0].role, model::WorkerRole::kCurrent);
    EXPECT_EQ(workers[1].role, model::WorkerRole::kLeaving);
    EXPECT_TRUE(workers[1].stopping);
  }
}

TEST(ClassifyTest, UnreachableWorkers) {
  absl::StatusOr<parse::ShowProc> proc =
      parse::ParseShowProc(ReadFixture("haproxy-3.4/show_proc_with_old_worker.txt"));
  ASSERT_TRUE(proc.ok());
  int current = proc->workers[0].pid;  // listed under "# workers"
  int old = proc->workers[1].pid;      // listed under "# old workers"
  ASSERT_FALSE(proc->workers[0].listed_as_old);
  ASSERT_TRUE(proc->workers[1].listed_as_old);

  // Not routable: a new worker still initialising (3.1+), an old one that has just exited.
  absl::flat_hash_map<int, absl::StatusOr<parse::ShowInfo>> infos;
  infos.emplace(current, absl::NotFoundError("Can't find the target PID"));
  infos.emplace(old, absl::NotFoundError("Can't find the target PID"));
  std::vector<model::WorkerReport> workers = ClassifyWorkers(*proc, infos, {});
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].pid, current);
  EXPECT_EQ(workers[0].role, model::WorkerRole::kStarting);

  // A transient failure keeps what was known before; without history the role is UNKNOWN.
  model::WorkersReport previous;
  model::WorkerReport known;
  known.pid = old;
  known.role = model::WorkerRole::kLeaving;
  known.connections = 4;
  previous.workers.push_back(known);
  infos.clear();
  infos.emplace(current, absl::UnavailableError("connection closed"));
  infos.emplace(old, absl::DeadlineExceededError("deadline"));
  workers = ClassifyWorkers(*proc, infos, previous);
  ASSERT_EQ(workers.size(), 2u);
  const model::WorkerReport* kept = nullptr;
  const model::WorkerReport* unknown = nullptr;
  for (const auto& w : workers) (w.pid == old ? kept : unknown) = &w;
  EXPECT_EQ(kept->role, model::WorkerRole::kLeaving);
  EXPECT_EQ(kept->connections, 4);
  EXPECT_EQ(kept->error, "deadline");
  EXPECT_EQ(unknown->role, model::WorkerRole::kUnknown);
  EXPECT_EQ(unknown->error, "connection closed");
}

// A pid listed again belongs to the same process only while its reload count and uptime do not go
// down and the master is the same; otherwise what was known of it is not carried over.
TEST(ClassifyTest, APidReusedByAnotherProcessIsNotTheSameWorker) {
  model::WorkerReport before;
  before.pid = 4242;
  before.reloads = 2;
  before.uptime_seconds = 600;
  EXPECT_TRUE(SameProcess(100, before, 100, 2, 601));
  EXPECT_TRUE(SameProcess(100, before, 100, 3, 600));
  EXPECT_TRUE(SameProcess(100, before, 100, 2, 598));   // whole seconds from two sources
  EXPECT_TRUE(SameProcess(0, before, 100, 2, 600));     // no master known before
  EXPECT_FALSE(SameProcess(100, before, 100, 0, 700));  // a new worker: 0 reloads
  EXPECT_FALSE(SameProcess(100, before, 100, 2, 5));    // younger than before
  EXPECT_FALSE(SameProcess(100, before, 200, 2, 900));  // HAProxy started again

  // A transient `show info` failure keeps what was known only of the same process.
  absl::StatusOr<parse::ShowProc> proc =
      parse::ParseShowProc(ReadFixture("haproxy-3.4/show_proc_with_old_worker.txt"));
  ASSERT_TRUE(proc.ok());
  int old = proc->workers[1].pid;
  model::WorkersReport previous;
  previous.master.pid = proc->master.pid;
  model::WorkerReport known;
  known.pid = old;
  known.role = model::WorkerRole::kLeaving;
  known.reloads = proc->workers[1].reloads + 5;  // more than the process listed now has seen
  previous.workers.push_back(known);
  absl::flat_hash_map<int, absl::StatusOr<parse::ShowInfo>> infos;
  infos.emplace(old, absl::UnavailableError("connection closed"));
  bool listed = false;
  for (const model::WorkerReport& w : ClassifyWorkers(*proc, infos, previous)) {
    if (w.pid != old) continue;
    listed = true;
    EXPECT_EQ(w.role, model::WorkerRole::kUnknown);
  }
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace hawk::registry

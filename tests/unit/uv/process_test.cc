// ChildProcess on a real loop; every test ends with uv_loop_close() == 0 (Loop::RunDryAndClose),
// which catches a handle that was never closed.

#include "agent/uv/process.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/uv/loop.h"
#include "agent/uv/timer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::uv {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kLongTimeout = absl::Seconds(10);
constexpr size_t kCap = 64 * 1024;

class ProcessTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(loop_.RunDryAndClose().ok()); }

  // Runs `argv` to completion; the result of its single `done`.
  ProcessResult RunToEnd(std::vector<std::string> argv, absl::Duration timeout = kLongTimeout,
                         size_t max_output_bytes = kCap) {
    int calls = 0;
    ProcessResult result;
    absl::StatusOr<std::unique_ptr<ChildProcess>> child =
        ChildProcess::Spawn(loop_.get(), argv, timeout, max_output_bytes, [&](ProcessResult r) {
          ++calls;
          result = std::move(r);
        });
    EXPECT_TRUE(child.ok()) << child.status();
    if (!child.ok()) return result;
    EXPECT_GT((*child)->pid(), 0);
    loop_.Run();
    EXPECT_EQ(calls, 1);
    return result;
  }

  // Whether `pid` is gone, reaping it if libuv left it to us: true once it is neither running
  // nor a zombie. `signal` receives how it ended when this function reaped it.
  static bool WaitGone(int pid, int* signal, std::chrono::milliseconds deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      pid_t reaped = ::waitpid(pid, &status, WNOHANG);
      if (reaped == pid) {
        if (WIFSIGNALED(status)) *signal = WTERMSIG(status);
        return true;
      }
      if (reaped < 0 && errno == ECHILD) return true;  // libuv reaped it already
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  // 'Z' for a zombie, 0 when /proc has no such process.
  static char ProcState(int pid) {
    std::string path = absl::StrCat("/proc/", pid, "/stat");
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return 0;
    char buffer[512] = {};
    size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, f);
    std::fclose(f);
    std::string stat(buffer, n);
    size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
  }

  Loop loop_;
};

TEST_F(ProcessTest, ExitStatusSignalAndOutput) {
  struct Case {
    const char* name;
    int64_t exit_status;
    int term_signal;
    bool succeeded;
    std::string output;  // exact
    std::vector<std::string> argv;
  };
  for (const Case& c : std::vector<Case>{
           {"true", 0, 0, true, "", {"/bin/true"}},
           {"false", 1, 0, false, "", {"/bin/false"}},
           {"exit 3", 3, 0, false, "out\nerr\n", {"/bin/sh", "-c", "echo out;echo err >&2;exit 3"}},
           {"stderr only", 0, 0, true, "oops\n", {"/bin/sh", "-c", "echo oops >&2"}},
           // stdin is /dev/null: cat sees EOF at once instead of reading the test's stdin.
           {"stdin is /dev/null", 0, 0, true, "", {"/bin/cat"}},
           {"killed by a signal", 0, SIGTERM, false, "", {"/bin/sh", "-c", "kill -TERM $$"}},
       }) {
    SCOPED_TRACE(c.name);
    ProcessResult result = RunToEnd(c.argv);
    EXPECT_EQ(result.exit_status, c.exit_status);
    EXPECT_EQ(result.term_signal, c.term_signal);
    EXPECT_FALSE(result.timed_out);
    EXPECT_EQ(result.succeeded(), c.succeeded);
    EXPECT_EQ(result.output, c.output);
    EXPECT_FALSE(result.output_truncated);
  }
}

TEST_F(ProcessTest, ArgumentsArePassedAsGiven) {
  ProcessResult result =
      RunToEnd({"/bin/sh", "-c", "printf '%s|' \"$@\"", "sh", "a b", "", "$HOME", "c;d", "'q'"});
  EXPECT_TRUE(result.succeeded());
  EXPECT_EQ(result.output, "a b||$HOME|c;d|'q'|");
}

TEST_F(ProcessTest, InterleavedStreamsKeepEveryLine) {
  ProcessResult result =
      RunToEnd({"/bin/sh", "-c", "for i in 1 2 3 4 5; do echo o$i; echo e$i >&2; done"});
  EXPECT_TRUE(result.succeeded());
  for (int i = 1; i <= 5; ++i) {
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("o", i, "\n")));
    EXPECT_THAT(result.output, HasSubstr(absl::StrCat("e", i, "\n")));
  }
  EXPECT_EQ(result.output.size(), 30u);
}

TEST_F(ProcessTest, SpawnFailuresNeverCallDone) {
  std::string not_executable = absl::StrCat(::testing::TempDir(), "/hawk-not-exec-", ::getpid());
  FILE* f = std::fopen(not_executable.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("#!/bin/sh\nexit 0\n", f);
  std::fclose(f);
  ASSERT_EQ(::chmod(not_executable.c_str(), 0600), 0);

  struct Case {
    std::vector<std::string> argv;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {{"/nonexistent/hawk-no-such-program", "-c", "x"},
            "start /nonexistent/hawk-no-such-program"},
           {{not_executable}, "start "},
           {{}, "no program"},
           {{""}, "no program"},
       }) {
    SCOPED_TRACE(absl::StrJoin(c.argv, " "));
    bool called = false;
    absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn(
        loop_.get(), c.argv, kLongTimeout, kCap, [&](ProcessResult) { called = true; });
    ASSERT_FALSE(child.ok());
    EXPECT_THAT(std::string(child.status().message()), HasSubstr(c.message));
    loop_.Run();
    EXPECT_FALSE(called);
  }
  ::unlink(not_executable.c_str());
}

TEST_F(ProcessTest, TimeoutKillsTheProgram) {
  auto start = std::chrono::steady_clock::now();
  ProcessResult result = RunToEnd({"/bin/sleep", "5"}, /*timeout=*/absl::Milliseconds(100));
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.term_signal, SIGKILL);
  EXPECT_FALSE(result.succeeded());
  EXPECT_GE(elapsed, std::chrono::milliseconds(90));
  EXPECT_LT(elapsed, std::chrono::seconds(3));
}

TEST_F(ProcessTest, TimeoutKeepsWhatWasPrinted) {
  ProcessResult result =
      RunToEnd({"/bin/sh", "-c", "echo before; exec /bin/sleep 5"}, absl::Milliseconds(200));
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.term_signal, SIGKILL);
  EXPECT_EQ(result.output, "before\n");
}

// The program exits but something it started keeps its output open (a wrapper script that
// leaves a process behind): `done` runs right after the program's exit, with its exit status and
// what it printed, not when the grandchild lets the pipes go (nor at the deadline).
TEST_F(ProcessTest, OutputHeldOpenByAGrandchildEndsWhenTheProgramExits) {
  auto start = std::chrono::steady_clock::now();
  ProcessResult result =
      RunToEnd({"/bin/sh", "-c", "/bin/sleep 5 & echo \"$!\"; echo started"}, kLongTimeout);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_EQ(result.term_signal, 0);
  EXPECT_TRUE(result.succeeded());
  EXPECT_THAT(result.output, HasSubstr("started\n"));
  EXPECT_LT(elapsed, std::chrono::seconds(3)) << "waited for the grandchild";
  // The grandchild is the test's to clean up.
  int grandchild = std::atoi(result.output.c_str());
  if (grandchild > 0) ::kill(grandchild, SIGKILL);
}

TEST_F(ProcessTest, OutputIsCapped) {
  struct Case {
    const char* script;
    size_t cap;
    size_t size;
    bool truncated;
  };
  for (const Case& c : std::vector<Case>{
           {"yes | head -c 100000", 1000, 1000, true},
           {"yes | head -c 100000", 100000, 100000, false},
           {"yes | head -c 100000; echo tail >&2", 100000, 100000, true},
           {"printf 12345", 5, 5, false},
           {"printf 123456", 5, 5, true},
           {"printf 1", 0, 0, true},
           {"true", 0, 0, false},
       }) {
    SCOPED_TRACE(absl::StrCat(c.script, " cap ", c.cap));
    ProcessResult result = RunToEnd({"/bin/sh", "-c", c.script}, kLongTimeout, c.cap);
    EXPECT_EQ(result.exit_status, 0);
    EXPECT_EQ(result.output.size(), c.size);
    EXPECT_EQ(result.output_truncated, c.truncated);
    if (c.size >= 4 && absl::string_view(c.script).substr(0, 3) == "yes") {
      EXPECT_EQ(result.output.substr(0, 4), "y\ny\n");
    }
  }
}

TEST_F(ProcessTest, DoneMayDestroyTheObject) {
  std::unique_ptr<ChildProcess> child;
  ProcessResult result;
  int calls = 0;
  absl::StatusOr<std::unique_ptr<ChildProcess>> spawned = ChildProcess::Spawn(
      loop_.get(), {"/bin/sh", "-c", "echo bye; exit 7"}, kLongTimeout, kCap, [&](ProcessResult r) {
        ++calls;
        result = std::move(r);
        child.reset();
      });
  ASSERT_TRUE(spawned.ok()) << spawned.status();
  child = *std::move(spawned);
  loop_.Run();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(child, nullptr);
  EXPECT_EQ(result.exit_status, 7);
  EXPECT_EQ(result.output, "bye\n");
}

TEST_F(ProcessTest, DoneMayDestroyTheObjectAfterATimeout) {
  std::unique_ptr<ChildProcess> child;
  int calls = 0;
  bool timed_out = false;
  absl::StatusOr<std::unique_ptr<ChildProcess>> spawned = ChildProcess::Spawn(
      loop_.get(), {"/bin/sleep", "5"}, absl::Milliseconds(50), kCap, [&](ProcessResult r) {
        ++calls;
        timed_out = r.timed_out;
        child.reset();
      });
  ASSERT_TRUE(spawned.ok()) << spawned.status();
  child = *std::move(spawned);
  loop_.Run();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(timed_out);
  EXPECT_EQ(child, nullptr);
}

// Destroyed before the program ended: the program is killed and `done` never runs. Destroyed
// right after Spawn (the loop never ran) and from a timer while the loop runs.
TEST_F(ProcessTest, DestroyingKillsTheProgramAndDropsDone) {
  for (int delay_ms : {-1, 50}) {
    SCOPED_TRACE(delay_ms);
    bool called = false;
    absl::StatusOr<std::unique_ptr<ChildProcess>> spawned =
        ChildProcess::Spawn(loop_.get(), {"/bin/sleep", "5"}, kLongTimeout, kCap,
                            [&](ProcessResult) { called = true; });
    ASSERT_TRUE(spawned.ok()) << spawned.status();
    std::unique_ptr<ChildProcess> child = *std::move(spawned);
    int pid = child->pid();
    ASSERT_GT(pid, 0);
    auto start = std::chrono::steady_clock::now();
    if (delay_ms < 0) {
      child.reset();
      loop_.Run();
    } else {
      Timer timer(loop_.get());
      timer.Start(absl::Milliseconds(delay_ms), [&] { child.reset(); });
      loop_.Run();
    }
    EXPECT_FALSE(called);
    int signal = 0;
    EXPECT_TRUE(WaitGone(pid, &signal, std::chrono::seconds(3)));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
    if (signal != 0) {
      EXPECT_EQ(signal, SIGKILL);
    }
  }
}

// libuv 1.44's uv_spawn runs execvp(), so a bare name is looked up in PATH (process.h says so).
TEST_F(ProcessTest, BareNameIsLookedUpInPath) {
  bool called = false;
  ProcessResult result;
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn(loop_.get(), {"true"}, kLongTimeout, kCap, [&](ProcessResult r) {
        called = true;
        result = std::move(r);
      });
  ASSERT_TRUE(child.ok()) << child.status();
  loop_.Run();
  EXPECT_TRUE(called);
  EXPECT_TRUE(result.succeeded());
}

// libuv reaps only the children of open uv_process_t handles (uv__chld calls waitpid per handle
// in loop->process_handles, and uv_close removes the handle from that list): a ChildProcess
// destroyed before its program ended must keep the handle open until the killed program is
// reaped, or it would stay a zombie until hawk exits.
TEST_F(ProcessTest, DestroyedProgramIsReaped) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> spawned = ChildProcess::Spawn(
      loop_.get(), {"/bin/sleep", "5"}, kLongTimeout, kCap, [](ProcessResult) {});
  ASSERT_TRUE(spawned.ok()) << spawned.status();
  std::unique_ptr<ChildProcess> child = *std::move(spawned);
  int pid = child->pid();
  Timer timer(loop_.get());
  timer.Start(absl::Milliseconds(50), [&] { child.reset(); });
  loop_.Run();
  // Give the kernel and the loop time to deliver SIGCHLD and reap it.
  Timer settle(loop_.get());
  settle.Start(absl::Milliseconds(200), [] {});
  loop_.Run();
  EXPECT_NE(ProcState(pid), 'Z') << "pid " << pid << " is a zombie";
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), -1) << "pid " << pid << " was left to reap";
}

}  // namespace
}  // namespace hawk::uv

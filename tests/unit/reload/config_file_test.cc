// ConfigFile in a temporary directory: the candidate, the `.previous` copy, the restore, and the
// mode the files keep.

#include "agent/reload/config_file.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/store/atomic_file.h"
#include "gtest/gtest.h"

namespace hawk::reload {
namespace {

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hawk-config-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/haproxy.cfg";
  }
  void TearDown() override {
    for (const char* suffix : {"", ".previous", ".hawk-candidate"}) {
      ::unlink((path_ + suffix).c_str());
    }
    EXPECT_EQ(::rmdir(dir_.c_str()), 0) << "a file was left behind in " << dir_;
  }
  void Write(const std::string& path, const std::string& contents, mode_t mode) {
    ASSERT_TRUE(store::WriteFileAtomically(path, contents, mode, "test").ok());
  }
  std::string Read(const std::string& path) {
    absl::StatusOr<std::string> text = store::ReadFileBounded(path, 1 << 20, "test");
    return text.ok() ? *text : absl::StrCat("<", text.status().ToString(), ">");
  }
  static bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }
  static mode_t Mode(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(ConfigFileTest, TheCandidateHasTheConfigurationsModeAndGoesWithItsObject) {
  Write(path_, "old\n", 0640);
  ConfigFile file(path_);
  std::string candidate_path;
  {
    absl::StatusOr<CandidateFile> candidate = file.WriteCandidate("new\n");
    ASSERT_TRUE(candidate.ok()) << candidate.status();
    candidate_path = candidate->path();
    EXPECT_EQ(candidate_path, path_ + ".hawk-candidate");
    EXPECT_EQ(Read(candidate_path), "new\n");
    EXPECT_EQ(Mode(candidate_path), 0640u);  // not world-readable
    CandidateFile moved = *std::move(candidate);
    EXPECT_TRUE(Exists(candidate_path));  // the moved-from one removed nothing
  }
  EXPECT_FALSE(Exists(candidate_path));
  EXPECT_EQ(Read(path_), "old\n");  // untouched
}

TEST_F(ConfigFileTest, ReplaceKeepsThePreviousAndRestorePutsItBack) {
  Write(path_, "old\n", 0640);
  ConfigFile file(path_);
  absl::StatusOr<PreviousConfig> previous = file.Replace("new\n");
  ASSERT_TRUE(previous.ok()) << previous.status();
  EXPECT_EQ(previous->contents, "old\n");
  EXPECT_EQ(Read(path_), "new\n");
  EXPECT_EQ(Mode(path_), 0640u);
  EXPECT_EQ(Read(path_ + ".previous"), "old\n");
  EXPECT_EQ(Mode(path_ + ".previous"), 0640u);
  ASSERT_TRUE(file.Restore(*previous).ok());
  EXPECT_EQ(Read(path_), "old\n");
  EXPECT_EQ(Mode(path_), 0640u);
}

TEST_F(ConfigFileTest, WithoutAFileReplaceCreatesOneAndRestoreRemovesIt) {
  ConfigFile file(path_);
  EXPECT_TRUE(absl::IsNotFound(file.Read("read").status()));
  absl::StatusOr<PreviousConfig> previous = file.Replace("new\n");
  ASSERT_TRUE(previous.ok()) << previous.status();
  EXPECT_FALSE(previous->contents.has_value());
  EXPECT_FALSE(Exists(path_ + ".previous"));
  EXPECT_EQ(Mode(path_), kNewConfigMode);
  ASSERT_TRUE(file.Restore(*previous).ok());
  EXPECT_FALSE(Exists(path_));
  // Nothing left to remove: the error names the file.
  absl::Status again = file.Restore(*previous);
  EXPECT_TRUE(absl::IsNotFound(again)) << again;
  EXPECT_NE(again.message().find(path_), absl::string_view::npos) << again;
}

TEST_F(ConfigFileTest, ReplaceFailsWithoutTouchingTheFileWhenThePreviousCannotBeRead) {
  ASSERT_EQ(::mkdir(path_.c_str(), 0755), 0);  // not a regular file
  ConfigFile file(path_);
  EXPECT_FALSE(file.Replace("new\n").ok());
  EXPECT_FALSE(Exists(path_ + ".previous"));
  ASSERT_EQ(::rmdir(path_.c_str()), 0);
}

}  // namespace
}  // namespace hawk::reload

#include "agent/store/confined_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteFile(const std::string& path, absl::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

std::string MakeTempDir(const std::string& prefix) {
  std::string pattern = (fs::path(::testing::TempDir()) / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

// Everything under `dir`: each entry's kind and contents (file), target (symlink) or nothing.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    std::string path = entry.path().string();
    if (entry.is_symlink()) {
      out[path] = "link:" + fs::read_symlink(entry.path()).string();
    } else if (entry.is_regular_file()) {
      struct stat st {};
      ::stat(path.c_str(), &st);
      out[path] = absl::StrCat("file:", st.st_ino, ":", st.st_mode & 07777, ":", st.st_uid, ":",
                               st.st_gid, ":", ReadFile(path));
    } else {
      out[path] = entry.is_directory() ? "dir" : "other";
    }
  }
  return out;
}

// Runs every case with openat2 and with the component walk (kernels before 5.6, seccomp).
class ConfinedDirTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    root_ = MakeTempDir("hawk-confined");
    other_ = MakeTempDir("hawk-other");
    ASSERT_FALSE(root_.empty());
    ASSERT_FALSE(other_.empty());
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
    fs::remove_all(other_, ignored);
    fs::remove_all(root_ + "-sibling", ignored);
  }

  ConfinedDirOptions Options(std::vector<ConfinedDirOptions::Excluded> excluded = {}) const {
    ConfinedDirOptions options;
    options.name = "--table-files-dir";
    options.excluded = std::move(excluded);
    options.use_openat2 = GetParam();
    return options;
  }
  std::unique_ptr<ConfinedDir> Open(ConfinedDirOptions options) const {
    absl::StatusOr<std::unique_ptr<ConfinedDir>> dir = ConfinedDir::Create(root_, options);
    EXPECT_TRUE(dir.ok()) << dir.status();
    return dir.ok() ? *std::move(dir) : nullptr;
  }
  std::string In(const std::string& name) const { return root_ + "/" + name; }

  std::string root_;
  std::string other_;
};

INSTANTIATE_TEST_SUITE_P(Resolution, ConfinedDirTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "openat2" : "walk";
                         });

TEST_P(ConfinedDirTest, ReplacesAFileKeepingItsModeOwnerAndGroup) {
  // Root (CI) gives the files to another owner and group; otherwise our own uid and gid.
  uid_t uid = ::geteuid() == 0 ? 4321 : ::geteuid();
  gid_t gid = ::geteuid() == 0 ? 8765 : ::getegid();
  ASSERT_EQ(::mkdir(In("sub").c_str(), 0755), 0);
  for (const std::string& name : {std::string("hosts.map"), std::string("sub/deep.acl")}) {
    WriteFile(In(name), "old\n");
    ASSERT_EQ(::chown(In(name).c_str(), uid, gid), 0);
    ASSERT_EQ(::chmod(In(name).c_str(), 0640), 0);
  }
  std::unique_ptr<ConfinedDir> dir = Open(Options());
  ASSERT_NE(dir, nullptr);
  EXPECT_EQ(dir->path(), root_);
  mode_t previous = ::umask(0);  // the umask must not widen the mode
  absl::StatusOr<ConfinedFile> hosts = dir->Replace(In("hosts.map"), "a.example.com be_a\n");
  absl::StatusOr<ConfinedFile> deep = dir->Replace("sub/deep.acl", "10.0.0.0/8\n");  // relative
  ::umask(previous);
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  ASSERT_TRUE(deep.ok()) << deep.status();
  EXPECT_EQ(ReadFile(In("hosts.map")), "a.example.com be_a\n");
  EXPECT_EQ(ReadFile(In("sub/deep.acl")), "10.0.0.0/8\n");
  for (const std::string& name : {std::string("hosts.map"), std::string("sub/deep.acl")}) {
    SCOPED_TRACE(name);
    struct stat st {};
    ASSERT_EQ(::lstat(In(name).c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    EXPECT_EQ(st.st_uid, uid);
    EXPECT_EQ(st.st_gid, gid);
    // What Replace returned and Lookup reports describe the file now in place.
    absl::StatusOr<ConfinedFile> looked = dir->Lookup(In(name));
    ASSERT_TRUE(looked.ok()) << looked.status();
    EXPECT_EQ(looked->inode, static_cast<uint64_t>(st.st_ino));
    EXPECT_EQ(looked->size, st.st_size);
    const ConfinedFile& returned = name == "hosts.map" ? *hosts : *deep;
    EXPECT_EQ(returned.inode, looked->inode);
    EXPECT_EQ(returned.device, looked->device);
    EXPECT_EQ(returned.size, looked->size);
    EXPECT_EQ(returned.mtime_ns, looked->mtime_ns);
    EXPECT_EQ(looked->ownership.mode, 0640u);
  }
  // No temporary file left behind.
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root_)) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("hosts.map", "sub", "deep.acl"));
}

// A hard link inside the directory is replaced as a directory entry: the file it shared its
// inode with (here outside the directory) keeps its contents. A file at the old temporary name
// (`<name>.tmp-<pid>`) is not touched: the temporary name is random and created O_EXCL.
TEST_P(ConfinedDirTest, LinksAtTheFileOrAtATemporaryNameLeadNowhere) {
  WriteFile(other_ + "/victim.txt", "victim\n");
  ASSERT_EQ(::link((other_ + "/victim.txt").c_str(), In("hard.map").c_str()), 0);
  WriteFile(other_ + "/planted.txt", "planted\n");
  std::string planted = absl::StrCat(In("hard.map"), ".tmp-", ::getpid());
  ASSERT_EQ(::link((other_ + "/planted.txt").c_str(), planted.c_str()), 0);
  std::unique_ptr<ConfinedDir> dir = Open(Options());
  ASSERT_NE(dir, nullptr);
  absl::StatusOr<ConfinedFile> written = dir->Replace(In("hard.map"), "new\n");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(ReadFile(In("hard.map")), "new\n");
  EXPECT_EQ(ReadFile(other_ + "/victim.txt"), "victim\n");
  EXPECT_EQ(ReadFile(other_ + "/planted.txt"), "planted\n");
  EXPECT_EQ(ReadFile(planted), "planted\n");
}

struct Hostile {
  std::string label;
  std::string path;
  absl::StatusCode code;
  std::string message;  // a substring of the error
};

// Hostile paths: nothing is written, nothing is created, nothing outside is touched, and the
// error says why. Lookup refuses the same way.
TEST_P(ConfinedDirTest, HostilePathsAreRefusedAndChangeNothing) {
  const std::string root_name = fs::path(root_).filename().string();
  WriteFile(In("hosts.map"), "keep\n");
  ASSERT_EQ(::mkdir(In("sub").c_str(), 0755), 0);
  WriteFile(In("sub/deep.map"), "keep\n");
  ASSERT_EQ(::mkdir(In("state").c_str(), 0700), 0);
  WriteFile(In("state/inside.map"), "journal\n");
  WriteFile(other_ + "/victim.txt", "victim\n");
  ASSERT_EQ(::mkdir((root_ + "-sibling").c_str(), 0755), 0);
  WriteFile(root_ + "-sibling/hosts.map", "sibling\n");
  ASSERT_EQ(::symlink(In("sub").c_str(), In("link").c_str()), 0);
  ASSERT_EQ(::symlink("sub", In("relative-link").c_str()), 0);
  ASSERT_EQ(::symlink(other_.c_str(), In("out").c_str()), 0);
  ASSERT_EQ(::symlink(In("sub/deep.map").c_str(), In("final.map").c_str()), 0);
  ASSERT_EQ(::symlink((other_ + "/victim.txt").c_str(), In("escape.map").c_str()), 0);
  ASSERT_EQ(::symlink("missing-target", In("dangling.map").c_str()), 0);
  ASSERT_EQ(::symlink(In("state").c_str(), In("state-link").c_str()), 0);
  ASSERT_EQ(::mkdir(In("dir.map").c_str(), 0755), 0);
  ASSERT_EQ(::mkfifo(In("fifo.map").c_str(), 0600), 0);
  WriteFile(In("plain"), "x");
  std::unique_ptr<ConfinedDir> dir = Open(Options({{"--state-dir", In("state")}}));
  ASSERT_NE(dir, nullptr);
  std::map<std::string, std::string> before_root = Snapshot(root_);
  std::map<std::string, std::string> before_other = Snapshot(other_);

  using C = absl::StatusCode;
  for (const Hostile& c : std::vector<Hostile>{
           {"empty", "", C::kInvalidArgument, "empty path"},
           {"NUL", std::string(In("hosts.map")) + std::string("\0x", 2), C::kInvalidArgument,
            "NUL"},
           {"dot-dot back in", In("../" + root_name + "/hosts.map"), C::kInvalidArgument, "`..`"},
           {"dot-dot out", In("../" + fs::path(other_).filename().string() + "/victim.txt"),
            C::kInvalidArgument, "`..`"},
           {"relative dot-dot", "../victim.txt", C::kInvalidArgument, "`..`"},
           {"dot", In("./hosts.map"), C::kInvalidArgument, "`.`"},
           {"double slash", root_ + "//hosts.map", C::kInvalidArgument, "empty component"},
           {"trailing slash", In("sub/"), C::kInvalidArgument, "empty component"},
           {"the directory itself", root_, C::kInvalidArgument, "itself"},
           {"outside", other_ + "/victim.txt", C::kPermissionDenied,
            "outside --table-files-dir " + root_},
           {"passwd", "/etc/passwd", C::kPermissionDenied, "outside --table-files-dir"},
           {"a sibling sharing the prefix", root_ + "-sibling/hosts.map", C::kPermissionDenied,
            "outside"},
           {"symlinked directory", In("link/deep.map"), C::kPermissionDenied,
            In("link") + " is a symbolic link"},
           {"relative symlinked directory", "relative-link/deep.map", C::kPermissionDenied,
            "symbolic link"},
           {"symlink leading out", In("out/victim.txt"), C::kPermissionDenied, "symbolic link"},
           {"final symlink inside", In("final.map"), C::kFailedPrecondition, "symbolic link"},
           {"final symlink out", In("escape.map"), C::kFailedPrecondition, "symbolic link"},
           {"dangling symlink", In("dangling.map"), C::kFailedPrecondition, "symbolic link"},
           {"a directory", In("dir.map"), C::kFailedPrecondition, "not a regular file"},
           {"a FIFO", In("fifo.map"), C::kFailedPrecondition, "not a regular file"},
           {"missing file", In("missing.map"), C::kNotFound, "no such file"},
           {"missing directory", In("missing/x.map"), C::kNotFound, In("missing")},
           {"a file as a directory", In("plain/x.map"), C::kFailedPrecondition,
            In("plain") + " is not a directory"},
           {"inside --state-dir", In("state/inside.map"), C::kPermissionDenied,
            "inside --state-dir " + In("state")},
           {"inside --state-dir, relative", "state/inside.map", C::kPermissionDenied,
            "--state-dir"},
           {"--state-dir through a symlink", In("state-link/inside.map"), C::kPermissionDenied,
            "symbolic link"},
       }) {
    SCOPED_TRACE(c.label);
    absl::StatusOr<ConfinedFile> replaced = dir->Replace(c.path, "pwned\n");
    EXPECT_EQ(replaced.status().code(), c.code) << replaced.status();
    EXPECT_THAT(std::string(replaced.status().message()), HasSubstr(c.message));
    absl::StatusOr<ConfinedFile> looked = dir->Lookup(c.path);
    EXPECT_EQ(looked.status().code(), c.code) << looked.status();
  }
  EXPECT_EQ(Snapshot(root_), before_root);
  EXPECT_EQ(Snapshot(other_), before_other);
  EXPECT_EQ(ReadFile(root_ + "-sibling/hosts.map"), "sibling\n");
}

// The excluded directory is recognised by its inode too: named through another path (a symlink
// elsewhere), a file inside it is still refused.
TEST_P(ConfinedDirTest, AnExcludedDirectoryIsRecognisedWhateverPathNamesIt) {
  ASSERT_EQ(::mkdir(In("state").c_str(), 0700), 0);
  WriteFile(In("state/journal-1.log"), "acknowledged\n");
  ASSERT_EQ(::symlink(In("state").c_str(), (other_ + "/state-alias").c_str()), 0);
  std::unique_ptr<ConfinedDir> dir = Open(Options({{"--state-dir", other_ + "/state-alias"}}));
  ASSERT_NE(dir, nullptr);
  absl::StatusOr<ConfinedFile> replaced = dir->Replace(In("state/journal-1.log"), "pwned\n");
  EXPECT_EQ(replaced.status().code(), absl::StatusCode::kPermissionDenied) << replaced.status();
  EXPECT_THAT(std::string(replaced.status().message()), HasSubstr("inside --state-dir"));
  EXPECT_EQ(ReadFile(In("state/journal-1.log")), "acknowledged\n");
}

TEST_P(ConfinedDirTest, CreateRefusesWhatCannotBeConfined) {
  ASSERT_EQ(::mkdir(In("state").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(In("state/tables").c_str(), 0700), 0);
  WriteFile(In("plain"), "x");
  ASSERT_EQ(::symlink(In("state").c_str(), (other_ + "/alias").c_str()), 0);
  struct Case {
    std::string label;
    std::string dir;
    std::vector<ConfinedDirOptions::Excluded> excluded;
    absl::StatusCode code;
    std::string message;
  };
  using C = absl::StatusCode;
  for (const Case& c : std::vector<Case>{
           {"empty", "", {}, C::kInvalidArgument, "--table-files-dir: empty path"},
           {"dot-dot", In("state/.."), {}, C::kInvalidArgument, "`..`"},
           {"missing", In("missing"), {}, C::kNotFound, In("missing")},
           {"a file", In("plain"), {}, C::kFailedPrecondition, In("plain")},
           {"the excluded directory",
            In("state"),
            {{"--state-dir", In("state")}},
            C::kPermissionDenied,
            "inside --state-dir"},
           {"inside it",
            In("state/tables"),
            {{"--state-dir", In("state")}},
            C::kPermissionDenied,
            "inside --state-dir"},
           {"inside it, by inode",
            In("state/tables"),
            {{"--state-dir", other_ + "/alias"}},
            C::kPermissionDenied,
            "inside --state-dir"},
       }) {
    SCOPED_TRACE(c.label);
    ConfinedDirOptions options = Options(c.excluded);
    absl::StatusOr<std::unique_ptr<ConfinedDir>> dir = ConfinedDir::Create(c.dir, options);
    EXPECT_EQ(dir.status().code(), c.code) << dir.status();
    EXPECT_THAT(std::string(dir.status().message()), HasSubstr(c.message));
  }
  // An excluded directory inside the confined one, or one that does not exist yet, is fine.
  ConfinedDirOptions options = Options({{"--state-dir", In("state")}, {"--x", In("later")}});
  EXPECT_TRUE(ConfinedDir::Create(root_, options).ok());
  // A path with `.` and empty components is normalized.
  absl::StatusOr<std::unique_ptr<ConfinedDir>> normalized =
      ConfinedDir::Create(root_ + "/./state//tables/", Options());
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  EXPECT_EQ((*normalized)->path(), In("state/tables"));
}

}  // namespace
}  // namespace hawk::store

#include "agent/store/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
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
using ::testing::UnorderedElementsAre;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "hawk-atomic-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }

  static void WriteFile(const std::string& path, absl::string_view contents) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << contents;
  }

  static mode_t ModeOf(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }

  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(root_)) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }

  std::string TempOf(const std::string& path) const {
    return absl::StrCat(path, kTempSuffix, ::getpid());
  }

  std::string root_;
};

// Restores the process umask when it goes out of scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : previous_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(previous_); }

 private:
  mode_t previous_;
};

TEST_F(AtomicFileTest, CreatesWithTheGivenModeWhateverTheUmask) {
  struct Case {
    mode_t mode;
    mode_t umask;
  };
  for (const Case& c : std::vector<Case>{
           {0600, 022}, {0644, 077}, {0640, 027}, {0644, 0}, {0444, 0222}, {0660, 0007}}) {
    SCOPED_TRACE(absl::StrCat("mode 0", absl::Hex(c.mode), " umask 0", absl::Hex(c.umask)));
    std::string path = absl::StrCat(root_, "/file-", c.mode, "-", c.umask);
    {
      ScopedUmask mask(c.umask);
      ASSERT_TRUE(WriteFileAtomically(path, "contents\n", c.mode, "test").ok());
    }
    EXPECT_EQ(ModeOf(path), c.mode);
    EXPECT_EQ(ReadFile(path), "contents\n");
  }
  EXPECT_EQ(Files().size(), 6u);  // no temporary file left
}

TEST_F(AtomicFileTest, ReplacesTheContentAndTheMode) {
  std::string path = root_ + "/haproxy.cfg";
  for (absl::string_view contents :
       {absl::string_view("first version, rather long\n"), absl::string_view("short"),
        absl::string_view(""), absl::string_view("nul\0inside\n", 11)}) {
    SCOPED_TRACE(contents.size());
    ASSERT_TRUE(WriteFileAtomically(path, contents, 0600, "write configuration").ok());
    EXPECT_EQ(ReadFile(path), contents);
    EXPECT_THAT(Files(), UnorderedElementsAre("haproxy.cfg"));
  }
  ASSERT_TRUE(WriteFileAtomically(path, "x", 0644, "write configuration").ok());
  EXPECT_EQ(ModeOf(path), 0644u);

  // A file bigger than any single write() may take in one go.
  std::string big(3 * 1024 * 1024 + 17, 'z');
  big[12345] = '\n';
  ASSERT_TRUE(WriteFileAtomically(path, big, 0600, "write configuration").ok());
  EXPECT_EQ(ReadFile(path), big);
  EXPECT_THAT(Files(), UnorderedElementsAre("haproxy.cfg"));
}

TEST_F(AtomicFileTest, KeepsTheModeOwnerAndGroupOfTheFileItReplaces) {
  // A 0640 file of another owner and group (root may give it away; otherwise this process's own
  // uid and a group it is in).
  std::string path = root_ + "/haproxy.cfg";
  WriteFile(path, "userlist admins\n  user a password $5$secret\n");
  uid_t uid = ::geteuid() == 0 ? 4321 : ::geteuid();
  gid_t gid = ::geteuid() == 0 ? 8765 : ::getegid();
  ASSERT_EQ(::chown(path.c_str(), uid, gid), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);

  absl::StatusOr<FileOwnership> ownership = OwnershipOf(path, "test");
  ASSERT_TRUE(ownership.ok()) << ownership.status();
  EXPECT_EQ(ownership->mode, 0640u);
  EXPECT_EQ(ownership->uid, uid);
  EXPECT_EQ(ownership->gid, gid);
  {
    ScopedUmask mask(0);  // the umask must not widen it either
    ASSERT_TRUE(WriteFileAtomically(path, "new\n", *ownership, "write configuration").ok());
    ASSERT_TRUE(WriteFileAtomically(path + ".previous", "old\n", *ownership, "keep").ok());
  }
  for (const std::string& written : {path, path + ".previous"}) {
    SCOPED_TRACE(written);
    struct stat st;
    ASSERT_EQ(::stat(written.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    EXPECT_EQ(st.st_uid, uid);
    EXPECT_EQ(st.st_gid, gid);
  }
  EXPECT_EQ(ReadFile(path), "new\n");
  EXPECT_TRUE(absl::IsNotFound(OwnershipOf(root_ + "/none", "test").status()));
}

TEST_F(AtomicFileTest, ReplacesTheLinkNotItsTarget) {
  std::string target = root_ + "/target";
  std::string link = root_ + "/link";
  WriteFile(target, "target");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(link, "new", 0600, "test").ok());
  EXPECT_EQ(ReadFile(target), "target");
  EXPECT_EQ(ReadFile(link), "new");
  EXPECT_FALSE(fs::is_symlink(link));
}

TEST_F(AtomicFileTest, RelativePathInTheWorkingDirectory) {
  std::error_code error;
  fs::path previous = fs::current_path(error);
  ASSERT_FALSE(error) << error.message();
  fs::current_path(root_, error);
  ASSERT_FALSE(error) << error.message();
  absl::Status written = WriteFileAtomically("relative.json", "{}", 0600, "test");
  fs::current_path(previous, error);
  ASSERT_TRUE(written.ok()) << written;
  EXPECT_EQ(ReadFile(root_ + "/relative.json"), "{}");
  EXPECT_THAT(Files(), UnorderedElementsAre("relative.json"));
}

TEST_F(AtomicFileTest, MissingDirectoryNamesThePathAndTheOperation) {
  std::string path = root_ + "/missing/server-state";
  absl::Status written = WriteFileAtomically(path, "1\n", 0600, "write server-state file");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(written.message()), HasSubstr("write server-state file: create "));
  EXPECT_THAT(std::string(written.message()), HasSubstr(path));
  EXPECT_THAT(std::string(written.message()), HasSubstr("No such file or directory"));
  EXPECT_FALSE(fs::exists(root_ + "/missing"));
}

// Works as root too: the temporary name is taken by a directory, so the write cannot start.
TEST_F(AtomicFileTest, TemporaryNameTakenByADirectoryLeavesTheFileAlone) {
  std::string path = root_ + "/desired-state.json";
  WriteFile(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  std::string temp = TempOf(path);
  ASSERT_EQ(::mkdir(temp.c_str(), 0700), 0);
  absl::Status written = WriteFileAtomically(path, "new", 0600, "save desired state");
  ASSERT_FALSE(written.ok());
  EXPECT_THAT(std::string(written.message()), HasSubstr("save desired state: create " + temp));
  EXPECT_THAT(std::string(written.message()), HasSubstr("Is a directory"));
  EXPECT_EQ(ReadFile(path), "old");
  EXPECT_EQ(ModeOf(path), 0640u);
  EXPECT_TRUE(fs::is_directory(temp));  // not ours to remove
}

// A symlink planted at the temporary name is not written through: it is removed, and the write
// goes on with a file of its own.
TEST_F(AtomicFileTest, TemporaryNameTakenByASymlinkIsNotFollowed) {
  std::string path = root_ + "/haproxy.cfg";
  std::string victim = root_ + "/victim";
  WriteFile(path, "old");
  WriteFile(victim, "victim");
  ASSERT_EQ(::symlink(victim.c_str(), TempOf(path).c_str()), 0);
  absl::Status written = WriteFileAtomically(path, "new", 0600, "write configuration");
  ASSERT_TRUE(written.ok()) << written;
  EXPECT_EQ(ReadFile(path), "new");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(ReadFile(victim), "victim");
  EXPECT_THAT(Files(), UnorderedElementsAre("haproxy.cfg", "victim"));
}

// Works as root too: the rename fails (a non-empty directory holds the name) and the temporary
// file is removed.
TEST_F(AtomicFileTest, FailedRenameLeavesNoTemporaryFile) {
  std::string path = root_ + "/state";
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  WriteFile(path + "/keep", "x");
  absl::Status written = WriteFileAtomically(path, "new", 0600, "save");
  ASSERT_FALSE(written.ok());
  EXPECT_THAT(std::string(written.message()), HasSubstr("save: rename " + TempOf(path)));
  EXPECT_THAT(std::string(written.message()), HasSubstr(" to " + path));
  EXPECT_THAT(Files(), UnorderedElementsAre("state"));
  EXPECT_EQ(ReadFile(path + "/keep"), "x");
}

TEST_F(AtomicFileTest, ReadFileBounded) {
  std::string exact = root_ + "/exact";
  WriteFile(exact, "0123456789");
  std::string empty = root_ + "/empty";
  WriteFile(empty, "");
  std::string binary = root_ + "/binary";
  WriteFile(binary, absl::string_view("a\0b\xff\n", 5));
  std::string big = root_ + "/big";  // several reads of the 64 KiB buffer
  std::string big_contents(200 * 1000 + 3, 'b');
  WriteFile(big, big_contents);
  std::string dir = root_ + "/dir";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);

  struct Case {
    std::string path;
    size_t max_bytes;
    absl::StatusCode code;
    std::string contents;  // kOk
    const char* message;   // otherwise: a substring
  };
  for (const Case& c : std::vector<Case>{
           {exact, 10, absl::StatusCode::kOk, "0123456789", ""},
           {exact, 1000, absl::StatusCode::kOk, "0123456789", ""},
           {exact, 9, absl::StatusCode::kDataLoss, "", "holds 10 bytes, more than 9"},
           {empty, 0, absl::StatusCode::kOk, "", ""},
           {binary, 5, absl::StatusCode::kOk, std::string("a\0b\xff\n", 5), ""},
           {big, big_contents.size(), absl::StatusCode::kOk, big_contents, ""},
           {big, big_contents.size() - 1, absl::StatusCode::kDataLoss, "", "more than"},
           {root_ + "/missing", 10, absl::StatusCode::kNotFound, "", "No such file"},
           {dir, 10, absl::StatusCode::kFailedPrecondition, "", "is not a regular file"},
           {exact + "/below", 10, absl::StatusCode::kFailedPrecondition, "", "Not a directory"},
       }) {
    SCOPED_TRACE(absl::StrCat(c.path, " max ", c.max_bytes));
    absl::StatusOr<std::string> read = ReadFileBounded(c.path, c.max_bytes, "load thing");
    EXPECT_EQ(read.status().code(), c.code) << read.status();
    if (c.code == absl::StatusCode::kOk) {
      if (read.ok()) {
        EXPECT_EQ(*read, c.contents);
      }
    } else {
      EXPECT_THAT(std::string(read.status().message()), HasSubstr("load thing: "));
      EXPECT_THAT(std::string(read.status().message()), HasSubstr(c.path));
      EXPECT_THAT(std::string(read.status().message()), HasSubstr(c.message));
    }
  }
}

TEST_F(AtomicFileTest, WrittenFilesReadBack) {
  std::string path = root_ + "/round-trip";
  std::string contents = "global\n    master-worker\n";
  ASSERT_TRUE(WriteFileAtomically(path, contents, 0600, "write").ok());
  absl::StatusOr<std::string> read = ReadFileBounded(path, contents.size(), "read");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, contents);
}

// A FIFO is not a regular file: ReadFileBounded answers FailedPrecondition at once instead of
// waiting in open() for a writer (which would freeze hawk's loop). Should it block, the test
// unblocks it by opening the FIFO for writing after 500 ms.
TEST_F(AtomicFileTest, FifoIsNotARegularFileAndDoesNotBlock) {
  std::string fifo = root_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::future<absl::StatusOr<std::string>> read = std::async(
      std::launch::async, [&] { return ReadFileBounded(fifo, 10, "load configuration"); });
  bool returned = read.wait_for(std::chrono::milliseconds(500)) == std::future_status::ready;
  if (!returned) {
    int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  absl::StatusOr<std::string> result = read.get();
  EXPECT_TRUE(returned) << "ReadFileBounded blocked on a FIFO";
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
}

}  // namespace
}  // namespace hawk::store

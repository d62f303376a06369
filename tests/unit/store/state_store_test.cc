#include "agent/store/state_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/base/status_field.h"
#include "agent/model/desired_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "hawk-store-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    // Restore permissions a test removed so that the cleanup can descend.
    std::error_code ignored;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root_, ignored)) {
      if (entry.is_directory(ignored)) fs::permissions(entry.path(), fs::perms::owner_all, ignored);
    }
    fs::remove_all(root_, ignored);
  }

  static model::DesiredState State(absl::string_view version, int64_t generation) {
    absl::StatusOr<model::DesiredState> state = model::ParseDesiredState(absl::StrCat(
        R"({"version":")", version, R"(","generation":)", generation,
        R"(,"backends":[{"name":"be_app","servers":[)",
        R"({"name":"SRV_1","address":"10.0.0.5","port":8080,"weight":100,"state":"READY"}]}],)",
        R"("maps":[{"name":"/etc/haproxy/hosts.map","entries":[)",
        R"({"key":"a b;c\\d\"é","value":"be app\t;x"}]}],)",
        R"("acls":[{"name":"/etc/haproxy/blocked.acl","patterns":["10.0.0.0/8"]}]})"));
    EXPECT_TRUE(state.ok()) << state.status();
    return *state;
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

  std::vector<std::string> Files(const std::string& dir) const {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      names.push_back(entry.path().filename().string());
    }
    return names;
  }

  std::unique_ptr<StateStore> MustOpen(const std::string& dir) {
    absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(dir);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  std::string root_;
};

TEST_F(StateStoreTest, LoadWithoutAFileIsNothing) {
  std::unique_ptr<StateStore> store = MustOpen(root_);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->path(), root_ + "/desired-state.json");
  absl::StatusOr<absl::optional<model::DesiredState>> loaded = store->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, absl::nullopt);
}

TEST_F(StateStoreTest, SavesAndLoadsTheCanonicalJson) {
  std::unique_ptr<StateStore> store = MustOpen(root_);
  ASSERT_NE(store, nullptr);
  model::DesiredState state = State("v42", 42);
  ASSERT_TRUE(store->Save(state).ok());
  EXPECT_EQ(ReadFile(store->path()), model::DesiredStateToJson(state) + "\n");
  struct stat st;
  ASSERT_EQ(::stat(store->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // A new store over the same directory (a restart) loads it.
  std::unique_ptr<StateStore> reopened = MustOpen(root_ + "/");
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->path(), store->path());
  absl::StatusOr<absl::optional<model::DesiredState>> loaded = reopened->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ(**loaded, state);
  EXPECT_THAT(Files(root_), UnorderedElementsAre("desired-state.json"));
}

TEST_F(StateStoreTest, OverwriteKeepsOnlyTheNewState) {
  std::unique_ptr<StateStore> store = MustOpen(root_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Save(State("v1", 1)).ok());
  ASSERT_TRUE(store->Save(State("v2", 2)).ok());
  absl::StatusOr<absl::optional<model::DesiredState>> loaded = store->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->version, "v2");
  EXPECT_EQ((*loaded)->generation, 2);
  EXPECT_THAT(Files(root_), UnorderedElementsAre("desired-state.json"));
}

TEST_F(StateStoreTest, CreatesMissingDirectoriesPrivately) {
  std::string dir = root_ + "/a/b/state";
  std::unique_ptr<StateStore> store = MustOpen(dir);
  ASSERT_NE(store, nullptr);
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(store->Save(State("v1", 1)).ok());
}

TEST_F(StateStoreTest, OpenRejectsARegularFile) {
  std::string file = root_ + "/not-a-dir";
  WriteFile(file, "x");
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(file);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()), HasSubstr(file));
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("is not a directory"));

  absl::StatusOr<std::unique_ptr<StateStore>> below = StateStore::Open(file + "/state");
  ASSERT_FALSE(below.ok());
  EXPECT_EQ(below.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(below.status().message()), HasSubstr("Not a directory"));

  EXPECT_EQ(StateStore::Open("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StateStoreTest, OpenRejectsAReadOnlyDirectory) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  ASSERT_EQ(::chmod(root_.c_str(), 0500), 0);
  absl::StatusOr<std::unique_ptr<StateStore>> store = StateStore::Open(root_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()),
              HasSubstr(absl::StrCat("state directory ", root_, " is not writable")));
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("Permission denied"));
}

TEST_F(StateStoreTest, FailedSaveInAReadOnlyDirectoryKeepsTheOldFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  std::unique_ptr<StateStore> store = MustOpen(root_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Save(State("v1", 1)).ok());
  std::string before = ReadFile(store->path());
  ASSERT_EQ(::chmod(root_.c_str(), 0500), 0);
  absl::Status saved = store->Save(State("v2", 2));
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(saved.message()), HasSubstr(store->path() + ".tmp-"));
  EXPECT_THAT(std::string(saved.message()), HasSubstr("Permission denied"));
  ASSERT_EQ(::chmod(root_.c_str(), 0700), 0);
  EXPECT_EQ(ReadFile(store->path()), before);
  EXPECT_THAT(Files(root_), UnorderedElementsAre("desired-state.json"));
}

// Works as root too: the temporary name is taken by a directory, so the write cannot start.
TEST_F(StateStoreTest, FailedSaveBeforeTheRenameKeepsTheOldFile) {
  std::unique_ptr<StateStore> store = MustOpen(root_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Save(State("v1", 1)).ok());
  std::string before = ReadFile(store->path());
  std::string temp = absl::StrCat(store->path(), ".tmp-", ::getpid());
  ASSERT_EQ(::mkdir(temp.c_str(), 0700), 0);
  absl::Status saved = store->Save(State("v2", 2));
  ASSERT_FALSE(saved.ok());
  EXPECT_THAT(std::string(saved.message()), HasSubstr("save desired state: create " + temp));
  EXPECT_THAT(std::string(saved.message()), HasSubstr("Is a directory"));
  EXPECT_EQ(ReadFile(store->path()), before);
  ASSERT_EQ(::rmdir(temp.c_str()), 0);  // left alone: not ours
  EXPECT_THAT(Files(root_), UnorderedElementsAre("desired-state.json"));
}

// Works as root too: the rename fails, and the temporary file is removed.
TEST_F(StateStoreTest, FailedRenameLeavesNoTemporaryFile) {
  std::unique_ptr<StateStore> store = MustOpen(root_);
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(::mkdir(store->path().c_str(), 0700), 0);
  std::string marker = store->path() + "/keep";
  WriteFile(marker, "x");
  absl::Status saved = store->Save(State("v1", 1));
  ASSERT_FALSE(saved.ok());
  EXPECT_THAT(std::string(saved.message()), HasSubstr("save desired state: rename "));
  EXPECT_THAT(std::string(saved.message()), HasSubstr(" to " + store->path()));
  EXPECT_THAT(Files(root_), UnorderedElementsAre("desired-state.json"));
  EXPECT_EQ(ReadFile(marker), "x");

  absl::StatusOr<absl::optional<model::DesiredState>> loaded = store->Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("is not a regular file"));
}

TEST_F(StateStoreTest, CorruptFileIsDataLossAndStaysInPlace) {
  std::unique_ptr<StateStore> store = MustOpen(root_);
  ASSERT_NE(store, nullptr);
  struct Case {
    const char* contents;
    const char* message;
    const char* field;
  };
  for (const Case& c : std::vector<Case>{
           {"", "desired state is not valid JSON", ""},
           {R"({"version":"v1","backends":[{"name":"be","serv)", "not valid JSON", ""},
           {"\x01garbage", "not valid JSON", ""},
           {R"({"backends":[{"name":"be;reload"}]})", "backends[0].name: must contain only",
            "backends[0].name"},
           {R"({"generation":"-3"})", "generation: must be an integer", "generation"},
       }) {
    SCOPED_TRACE(c.contents);
    WriteFile(store->path(), c.contents);
    absl::StatusOr<absl::optional<model::DesiredState>> loaded = store->Load();
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(loaded.status().message()),
                HasSubstr(absl::StrCat("desired state file ", store->path(), " is corrupt: ")));
    EXPECT_THAT(std::string(loaded.status().message()), HasSubstr(c.message));
    EXPECT_EQ(base::FieldOf(loaded.status()), c.field);
    EXPECT_EQ(ReadFile(store->path()), c.contents);
  }
}

TEST_F(StateStoreTest, UnreadableFileIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files without read permission";
  std::unique_ptr<StateStore> store = MustOpen(root_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Save(State("v1", 1)).ok());
  ASSERT_EQ(::chmod(store->path().c_str(), 0), 0);
  absl::StatusOr<absl::optional<model::DesiredState>> loaded = store->Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr(store->path()));
}

TEST_F(StateStoreTest, OpenRemovesTemporaryFilesOfDeadProcesses) {
  // A pid that cannot exist (above pid_max's hard limit of 2^22) and our own.
  std::string dead = root_ + "/desired-state.json.tmp-99999999";
  std::string own = absl::StrCat(root_, "/desired-state.json.tmp-", ::getpid());
  std::string alive = root_ + "/desired-state.json.tmp-1";  // init never dies
  std::string other = root_ + "/unrelated.tmp-1";
  for (const std::string& path : {dead, own, alive, other}) WriteFile(path, "partial");
  ASSERT_NE(MustOpen(root_), nullptr);
  EXPECT_THAT(Files(root_), UnorderedElementsAre("desired-state.json.tmp-1", "unrelated.tmp-1"));
}

}  // namespace
}  // namespace hawk::store

// TableFiles in a temporary directory: which tables reach a file (only those HAProxy loaded from
// it, as the same kind, by an absolute path inside the directory), what each file then holds,
// that a file nobody touched whose table did not change is not written again while one edited
// behind hawk's back is, and what a worker born after the write holds (born_with).

#include "agent/birth/table_files.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/store/atomic_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::birth {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

class TableFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hawk-table-files-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    absl::StatusOr<std::unique_ptr<store::ConfinedDir>> confined = store::ConfinedDir::Create(dir_);
    ASSERT_TRUE(confined.ok()) << confined.status();
    confined_ = std::move(*confined);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  void Write(const std::string& path, const std::string& contents) {
    ASSERT_TRUE(store::WriteFileAtomically(path, contents, 0644, "test").ok());
  }
  std::string Read(const std::string& path) {
    absl::StatusOr<std::string> text = store::ReadFileBounded(path, 1 << 20, "test");
    return text.ok() ? *text : absl::StrCat("<", text.status().ToString(), ">");
  }
  static ino_t Inode(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  }
  LoadedTables Loaded(std::initializer_list<std::string> maps,
                      std::initializer_list<std::string> acls) {
    LoadedTables loaded;
    loaded.pid = 42;
    for (const std::string& m : maps) loaded.maps.insert(m);
    for (const std::string& a : acls) loaded.acls.insert(a);
    return loaded;
  }

  // The summary of adding `keys` to map `name`, as the state service publishes it.
  static model::ChangeSummary MapKeysAdded(const std::string& name,
                                           std::initializer_list<std::string> keys) {
    model::TableChange change;
    change.name = name;
    for (const std::string& key : keys) change.was_absent.Set(key, "");
    model::ChangeSummary summary;
    summary.maps.push_back(std::move(change));
    return summary;
  }

  std::string dir_;
  std::shared_ptr<const store::ConfinedDir> confined_;
};

TEST(LoadedTablesTest, TheFilesTheRecordedListsName) {
  for (absl::string_view version : parse::testing::kVersions) {
    SCOPED_TRACE(version);
    LoadedTables loaded =
        ParseLoadedTables(7, parse::testing::ReadFixture(version, "worker_show_map_list.txt"),
                          parse::testing::ReadFixture(version, "worker_show_acl_list.txt"));
    EXPECT_EQ(loaded.error, "");
    EXPECT_EQ(loaded.pid, 7);
    EXPECT_THAT(loaded.maps, UnorderedElementsAre("/etc/haproxy/hosts.map"));
    // Inline ACLs (`acl … src 10.0.0.0/8`, httpclient's) have no file: never a target.
    EXPECT_THAT(loaded.acls, UnorderedElementsAre("/etc/haproxy/blocked.acl"));
  }
}

TEST(LoadedTablesTest, AListThatCannotBeReadNamesWhichAndWhy) {
  LoadedTables loaded = ParseLoadedTables(7, std::string("# id (file) description\n"),
                                          absl::UnavailableError("master CLI connection lost"));
  EXPECT_EQ(loaded.error,
            "the current worker's list of ACLs could not be read: master CLI connection lost");
  EXPECT_THAT(ParseLoadedTables(7, std::string("Unknown command\n"), std::string("")).error,
              HasSubstr("list of maps could not be read"));
}

TEST_F(TableFilesTest, OnlyTheFilesHaproxyLoadedAreWrittenAndEveryOtherTableSaysWhy) {
  Write(Path("hosts.map"), "old.example.com be_old\n");
  Write(Path("blocked.acl"), "10.0.0.1\n");
  Write(Path("not-loaded.map"), "keep me\n");
  model::DesiredState desired;
  desired.maps[Path("hosts.map")].Set("a.example.com", "be_a");
  desired.maps[Path("hosts.map")].Set("b.example.com", "be_b");
  desired.maps[Path("not-loaded.map")].Set("x", "y");
  desired.maps[Path("blocked.acl")].Set("k", "v");  // loaded as an ACL, not as a map
  desired.acls[Path("blocked.acl")].Set("10.0.0.2", "");
  desired.maps["relative.map"].Set("k", "v");

  TableFiles files(confined_, "unused");
  TablesWriteReport written =
      files.Write(desired, Loaded({Path("hosts.map"), "relative.map"}, {Path("blocked.acl")}));
  EXPECT_EQ(Read(Path("hosts.map")), "a.example.com be_a\nb.example.com be_b\n");
  EXPECT_EQ(Read(Path("blocked.acl")), "10.0.0.2\n");
  EXPECT_EQ(Read(Path("not-loaded.map")), "keep me\n");
  EXPECT_EQ(written.files_written, 2u);
  EXPECT_EQ(written.entries_written, 3u);
  EXPECT_EQ(written.maps, 1u);
  EXPECT_EQ(written.acls, 1u);
  ASSERT_NE(files.born_with(), nullptr);
  EXPECT_THAT(files.born_with()->maps(), UnorderedElementsAre(Pair(Path("hosts.map"), 2)));
  EXPECT_THAT(files.born_with()->acls(), UnorderedElementsAre(Pair(Path("blocked.acl"), 1)));
  ASSERT_EQ(written.skipped.size(), 3u);
  EXPECT_THAT(written.skipped[0], HasSubstr("did not load it from this file (`show map`"));
  EXPECT_THAT(written.skipped[1], HasSubstr("did not load it from this file (`show map`"));
  EXPECT_THAT(written.skipped[2], HasSubstr("map relative.map: a relative path"));
}

TEST_F(TableFilesTest, AFileAsHawkWroteItWhoseTableDidNotChangeIsLeftAlone) {
  Write(Path("hosts.map"), "");
  model::DesiredState desired;
  desired.maps[Path("hosts.map")].Set("a.example.com", "be_a");
  TableFiles files(confined_, "unused");
  LoadedTables loaded = Loaded({Path("hosts.map")}, {});
  ASSERT_EQ(files.Write(desired, loaded).files_written, 1u);
  ino_t first = Inode(Path("hosts.map"));

  TablesWriteReport again = files.Write(desired, loaded);
  EXPECT_EQ(again.files_written, 0u);
  EXPECT_EQ(again.unchanged, 1u);
  EXPECT_EQ(again.maps, 1u);
  EXPECT_EQ(Inode(Path("hosts.map")), first);

  // The table changed since: written again.
  desired.maps[Path("hosts.map")].Set("b.example.com", "be_b");
  files.Changed(MapKeysAdded(Path("hosts.map"), {"b.example.com"}), desired);
  TablesWriteReport changed = files.Write(desired, loaded);
  EXPECT_EQ(changed.files_written, 1u);
  EXPECT_EQ(Read(Path("hosts.map")), "a.example.com be_a\nb.example.com be_b\n");

  // Someone replaced the file behind hawk's back (a new inode): written again, table unchanged.
  Write(Path("hosts.map"), "edited by hand\n");
  TablesWriteReport edited = files.Write(desired, loaded);
  EXPECT_EQ(edited.files_written, 1u);
  EXPECT_EQ(Read(Path("hosts.map")), "a.example.com be_a\nb.example.com be_b\n");

  // The state replaced whole: what changed since is unknown, so the file is written again.
  files.ReplacedWhole();
  EXPECT_EQ(files.born_with(), nullptr);
  EXPECT_EQ(files.Write(desired, loaded).files_written, 1u);
}

TEST_F(TableFilesTest, AWorkerBornAfterTheWriteHoldsTheFilesAndTheChangesSince) {
  Write(Path("hosts.map"), "");
  Write(Path("other.map"), "");
  model::DesiredState desired;
  desired.maps[Path("hosts.map")].Set("a.example.com", "be_a");
  desired.maps[Path("other.map")].Set("x", "y");
  TableFiles files(confined_, "unused", /*max_changes_since=*/2);
  EXPECT_EQ(files.born_with(), nullptr);  // no write yet: a seed sends every table whole
  files.Write(desired, Loaded({Path("hosts.map"), Path("other.map")}, {}));
  ASSERT_NE(files.born_with(), nullptr);
  EXPECT_TRUE(files.born_with()->Unchanged(/*acl=*/false, Path("hosts.map")));
  EXPECT_EQ(files.born_with()->since().size(), 0u);

  desired.maps[Path("hosts.map")].Set("b.example.com", "be_b");
  files.Changed(MapKeysAdded(Path("hosts.map"), {"b.example.com"}), desired);
  ASSERT_NE(files.born_with(), nullptr);
  EXPECT_FALSE(files.born_with()->Unchanged(/*acl=*/false, Path("hosts.map")));
  EXPECT_TRUE(files.born_with()->Unchanged(/*acl=*/false, Path("other.map")));
  EXPECT_EQ(files.born_with()->since().size(), 1u);

  // Past max_changes_since the files are too far behind to seed from.
  desired.maps[Path("hosts.map")].Set("c.example.com", "be_c");
  desired.maps[Path("hosts.map")].Set("d.example.com", "be_d");
  files.Changed(MapKeysAdded(Path("hosts.map"), {"c.example.com", "d.example.com"}), desired);
  EXPECT_EQ(files.born_with(), nullptr);
}

TEST_F(TableFilesTest, WithoutADirectoryOrALoadedListNothingIsWritten) {
  Write(Path("hosts.map"), "old\n");
  model::DesiredState desired;
  desired.maps[Path("hosts.map")].Set("a", "b");

  TableFiles no_dir(nullptr, "no --table-files-dir");
  TablesWriteReport written = no_dir.Write(desired, Loaded({Path("hosts.map")}, {}));
  EXPECT_THAT(written.skipped,
              ElementsAre(absl::StrCat("map ", Path("hosts.map"), ": no --table-files-dir")));
  EXPECT_EQ(written.maps, 0u);

  TableFiles files(confined_, "unused");
  LoadedTables unknown;
  unknown.error = "the current worker's list of maps could not be read: timeout";
  written = files.Write(desired, unknown);
  EXPECT_THAT(written.skipped,
              ElementsAre(absl::StrCat("map ", Path("hosts.map"), ": ", unknown.error)));
  EXPECT_EQ(Read(Path("hosts.map")), "old\n");
}

TEST_F(TableFilesTest, ASymlinkIsNeverFollowedNorReplaced) {
  Write(Path("real.map"), "real\n");
  ASSERT_EQ(::symlink(Path("real.map").c_str(), Path("link.map").c_str()), 0);
  model::DesiredState desired;
  desired.maps[Path("link.map")].Set("a", "b");
  TableFiles files(confined_, "unused");
  TablesWriteReport written = files.Write(desired, Loaded({Path("link.map")}, {}));
  EXPECT_EQ(written.files_written, 0u);
  ASSERT_EQ(written.skipped.size(), 1u);
  EXPECT_EQ(Read(Path("real.map")), "real\n");
  struct stat st {};
  ASSERT_EQ(::lstat(Path("link.map").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

}  // namespace
}  // namespace hawk::birth

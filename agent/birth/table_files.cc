#include "agent/birth/table_files.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/model/desired.h"
#include "agent/parse/maps.h"
#include "agent/plan/table_file.h"

namespace hawk::birth {

LoadedTables ParseLoadedTables(int pid, const absl::StatusOr<std::string>& show_map,
                               const absl::StatusOr<std::string>& show_acl) {
  LoadedTables loaded;
  loaded.pid = pid;
  for (bool acl : {false, true}) {
    const absl::StatusOr<std::string>& reply = acl ? show_acl : show_map;
    absl::StatusOr<std::vector<parse::PatternRefInfo>> listed = !reply.ok() ? reply.status()
                                                                : acl ? parse::ParseAclList(*reply)
                                                                      : parse::ParseMapList(*reply);
    if (!listed.ok()) {
      loaded.error = absl::StrCat("the current worker's list of ", acl ? "ACLs" : "maps",
                                  " could not be read: ", listed.status().message());
      return loaded;
    }
    absl::flat_hash_set<std::string>& files = acl ? loaded.acls : loaded.maps;
    for (parse::PatternRefInfo& ref : *listed) {
      if (!ref.file.empty()) files.insert(std::move(ref.file));  // inline ACLs: none
    }
  }
  return loaded;
}

TableFiles::TableFiles(std::shared_ptr<const store::ConfinedDir> dir, std::string no_dir,
                       size_t max_changes_since)
    : dir_(std::move(dir)), no_dir_(std::move(no_dir)), max_changes_since_(max_changes_since) {}

void TableFiles::Changed(const model::ChangeSummary& summary, const model::DesiredState& desired) {
  if (born_with_.has_value() && !born_with_->Merge(summary, desired, max_changes_since_)) {
    born_with_.reset();
  }
}

bool TableFiles::UnchangedSinceWrite(bool acl, const std::string& name) const {
  return born_with_.has_value() && born_with_->Unchanged(acl, name);
}

TableFiles::FileIdentity TableFiles::IdentityOf(const store::ConfinedFile& file) {
  return FileIdentity{file.device, file.inode, file.size, file.mtime_ns};
}

TablesWriteReport TableFiles::Write(const model::DesiredState& desired,
                                    const LoadedTables& loaded) {
  TablesWriteReport out;
  plan::WrittenTables::Counts maps;  // what the files hold once written: born_with_
  plan::WrittenTables::Counts acls;
  auto write = [&](bool acl, const std::string& name, const model::StringTable& table) {
    absl::string_view kind = acl ? "ACL" : "map";
    auto skip = [&](absl::string_view why) {
      out.skipped.push_back(absl::StrCat(kind, " ", name, ": ", why));
    };
    if (dir_ == nullptr) return skip(no_dir_);
    if (!loaded.error.empty()) return skip(loaded.error);
    // Only a file HAProxy itself loaded this table from, by the very path it lists: a name an API
    // client made up names no file hawk may write.
    if (!(acl ? loaded.acls : loaded.maps).contains(name)) {
      return skip(absl::StrCat("the current worker (pid ", loaded.pid,
                               ") did not load it from this file (`show ", acl ? "acl" : "map",
                               "` lists no such file)"));
    }
    if (!absl::StartsWith(name, "/")) {
      return skip(
          "a relative path: HAProxy resolved it from its own working directory, which hawk "
          "cannot tell");
    }
    plan::WrittenTables::Counts& held = acl ? acls : maps;
    std::string key = absl::StrCat(kind, ":", name);
    // The file as it is now: inside the confined directory, a regular file reached without a
    // symlink.
    absl::StatusOr<store::ConfinedFile> file = dir_->Lookup(name);
    if (!file.ok()) return skip(file.status().message());
    auto last = written_.find(key);
    if (last != written_.end() && last->second == IdentityOf(*file) &&
        UnchangedSinceWrite(acl, name)) {
      held[name] = static_cast<int64_t>(table.size());
      ++out.unchanged;
      return;
    }
    written_.erase(key);
    absl::StatusOr<std::string> contents = plan::RenderTableFile(acl, table);
    if (!contents.ok()) return skip(contents.status().message());
    absl::StatusOr<store::ConfinedFile> replaced = dir_->Replace(name, *contents);
    if (!replaced.ok()) return skip(replaced.status().message());
    written_[key] = IdentityOf(*replaced);
    held[name] = static_cast<int64_t>(table.size());
    ++out.files_written;
    out.entries_written += table.size();
  };
  for (const auto& [name, table] : model::SortedByName(desired.maps)) {
    write(/*acl=*/false, *name, *table);
  }
  for (const auto& [name, table] : model::SortedByName(desired.acls)) {
    write(/*acl=*/true, *name, *table);
  }
  out.maps = maps.size();
  out.acls = acls.size();
  born_with_.emplace(std::move(maps), std::move(acls));
  return out;
}

}  // namespace hawk::birth

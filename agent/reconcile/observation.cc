#include "agent/reconcile/observation.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/base/status_macros.h"
#include "agent/cli/command.h"
#include "agent/parse/maps.h"
#include "agent/parse/reply.h"

namespace hawk::reconcile {

absl::StatusOr<plan::ObservedWorker> ObservedFromReplies(
    const model::DesiredState& desired, const std::vector<CommandResult>& results) {
  plan::ObservedWorker observed;
  size_t i = 0;
  auto reply = [&](absl::string_view what) -> absl::StatusOr<absl::string_view> {
    if (i >= results.size()) return absl::InternalError("fewer replies than observations");
    const CommandResult& r = results[i++];
    if (!r.ok())
      return absl::Status(r.status().code(),
                          absl::StrCat("observe ", what, ": ", r.status().message()));
    return absl::string_view(*r);
  };
  for (const auto& [name, backend] : model::SortedByName(desired.backends)) {
    absl::StatusOr<absl::string_view> text = reply(absl::StrCat("backend ", *name));
    if (!text.ok()) return text.status();
    absl::StatusOr<plan::ObservedBackend> b = plan::BackendFromReply(*text);
    if (!b.ok())
      return absl::Status(b.status().code(),
                          absl::StrCat("observe backend ", *name, ": ", b.status().message()));
    observed.backends[*name] = *std::move(b);
  }
  // A table is present only where the worker's listing names it: an empty `show map <name>`
  // reply reads as an empty table, and must never make a table the worker lacks look held.
  auto listed = [&](bool acl) -> absl::StatusOr<absl::flat_hash_set<std::string>> {
    absl::StatusOr<absl::string_view> text = reply(acl ? "the acl listing" : "the map listing");
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<parse::PatternRefInfo>> refs =
        acl ? parse::ParseAclList(*text) : parse::ParseMapList(*text);
    if (!refs.ok()) {
      return absl::Status(
          refs.status().code(),
          absl::StrCat("observe ", acl ? "`show acl`: " : "`show map`: ", refs.status().message()));
    }
    absl::flat_hash_set<std::string> files;
    for (const parse::PatternRefInfo& ref : *refs) files.insert(ref.file);
    return files;
  };
  auto tables = [&](bool acl, const auto& desired_tables,
                    absl::flat_hash_map<std::string, plan::ObservedTable>* out) -> absl::Status {
    if (desired_tables.empty()) return absl::OkStatus();
    absl::StatusOr<absl::flat_hash_set<std::string>> files = listed(acl);
    if (!files.ok()) return files.status();
    const char* kind = acl ? "acl " : "map ";
    for (const auto& [name, table] : model::SortedByName(desired_tables)) {
      absl::StatusOr<absl::string_view> text = reply(absl::StrCat(kind, *name));
      if (!text.ok()) return text.status();
      absl::StatusOr<plan::ObservedTable> t =
          acl ? plan::AclFromReply(*text) : plan::MapFromReply(*text);
      if (!t.ok()) {
        return absl::Status(t.status().code(),
                            absl::StrCat("observe ", kind, *name, ": ", t.status().message()));
      }
      if (!files->contains(*name)) {
        t->present = false;
        t->entries = model::StringTable();
        t->lines = model::StringTable();
      }
      (*out)[*name] = *std::move(t);
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(tables(false, desired.maps, &observed.maps));
  RETURN_IF_ERROR(tables(true, desired.acls, &observed.acls));
  return observed;
}

namespace {

// `@!<pid> <command> <name>`, the name escaped like every word hawk sends. A name no escape can
// carry (validation refuses those) gives an empty line, which the client refuses: nothing wrong
// is ever sent.
cli::Command ShowCommand(int pid, absl::string_view command, absl::string_view name) {
  absl::StatusOr<std::string> escaped = cli::EscapeWord(name);
  if (!escaped.ok()) return cli::Command{};
  return cli::Command::ForWorker(pid, absl::StrCat(command, " ", *escaped));
}

}  // namespace

std::vector<cli::Command> ObservationCommands(const model::DesiredState& desired, int pid) {
  std::vector<cli::Command> commands;
  for (const auto& [name, backend] : model::SortedByName(desired.backends)) {
    commands.push_back(ShowCommand(pid, "show servers state", *name));
  }
  if (!desired.maps.empty()) commands.push_back(cli::Command::ForWorker(pid, "show map"));
  for (const auto& [name, table] : model::SortedByName(desired.maps)) {
    commands.push_back(ShowCommand(pid, "show map", *name));
  }
  if (!desired.acls.empty()) commands.push_back(cli::Command::ForWorker(pid, "show acl"));
  for (const auto& [name, table] : model::SortedByName(desired.acls)) {
    commands.push_back(ShowCommand(pid, "show acl", *name));
  }
  return commands;
}

std::vector<cli::Command> TableListingCommands(int pid) {
  return {cli::Command::ForWorker(pid, "show map"), cli::Command::ForWorker(pid, "show acl")};
}

absl::flat_hash_set<std::string> TablesReadFromFiles(
    const CommandResult& listing, bool acl,
    const absl::flat_hash_map<std::string, int64_t>& written) {
  absl::flat_hash_set<std::string> held;
  if (written.empty() || !listing.ok()) return held;
  absl::StatusOr<std::vector<parse::PatternRefInfo>> listed =
      acl ? parse::ParseAclList(*listing) : parse::ParseMapList(*listing);
  if (!listed.ok()) return held;
  for (const parse::PatternRefInfo& ref : *listed) {
    auto it = written.find(ref.file);
    if (it != written.end() && ref.entry_cnt == it->second) held.insert(it->first);
  }
  return held;
}

}  // namespace hawk::reconcile

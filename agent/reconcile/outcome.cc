#include "agent/reconcile/outcome.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/base/status_macros.h"
#include "agent/parse/maps.h"
#include "agent/parse/reply.h"
#include "agent/parse/show_sess.h"

namespace hawk::reconcile {
namespace {

std::string FirstLine(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  return std::string(text.substr(0, text.find('\n')));
}

bool IsMapSet(plan::ActionKind kind) {
  return kind == plan::ActionKind::kSetMapEntry || kind == plan::ActionKind::kUpsertMapEntry;
}

bool IsDelete(plan::ActionKind kind) {
  return kind == plan::ActionKind::kDelMapEntry || kind == plan::ActionKind::kDelAclPattern;
}

// "backend/<be>/server/<srv>" → (be, srv); names cannot hold '/' (validated).
bool SplitServerObject(absl::string_view object, std::string* backend, std::string* server) {
  std::vector<std::string> parts = absl::StrSplit(object, '/');
  if (parts.size() != 4 || parts[0] != "backend" || parts[2] != "server") return false;
  *backend = parts[1];
  *server = parts[3];
  return true;
}

}  // namespace

void StaleSet::Add(model::StaleObject item) {
  auto& fields = by_object_[item.object];
  std::string field = item.field;
  fields[field] = std::move(item);
}

void StaleSet::AddAll(const std::vector<model::StaleObject>& items) {
  for (const model::StaleObject& item : items) Add(item);
}

void StaleSet::ForgetChanged(const plan::PendingChanges& taken) {
  if (by_object_.empty()) return;
  for (const auto& [key, unused] : taken.servers()) {
    by_object_.erase(plan::ServerObject(key.first, key.second));
  }
  auto tables = [this](absl::string_view kind,
                       const absl::flat_hash_map<std::string, plan::PendingTable>& pending) {
    for (const auto& [name, table] : pending) {
      std::string object = absl::StrCat(kind, "/", name);
      if (table.replace || table.dropped) {
        by_object_.erase(object);
        continue;
      }
      auto it = by_object_.find(object);
      if (it == by_object_.end()) continue;
      absl::string_view prefix = kind == "map" ? "entries/" : "patterns/";
      auto forget = [&](absl::string_view key, absl::string_view) {
        it->second.erase(absl::StrCat(prefix, key));
      };
      table.existed.ForEach(forget);
      table.was_absent.ForEach(forget);
      if (it->second.empty()) by_object_.erase(it);
    }
  };
  tables("map", taken.maps());
  tables("acl", taken.acls());
}

absl::flat_hash_set<std::string> StaleSet::Servers() const {
  absl::flat_hash_set<std::string> out;
  for (const auto& [object, fields] : by_object_) {
    if (absl::StartsWith(object, "backend/") && absl::StrContains(object, "/server/")) {
      out.insert(object);
    }
  }
  return out;
}

bool StaleSet::HasServers() const {
  return std::any_of(by_object_.begin(), by_object_.end(),
                     [](const auto& entry) { return absl::StartsWith(entry.first, "backend/"); });
}

std::vector<model::StaleObject> StaleSet::Sorted() const {
  std::vector<model::StaleObject> out;
  out.reserve(size());
  for (const auto& [object, fields] : by_object_) {
    for (const auto& [field, item] : fields) out.push_back(item);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.object, a.field) < std::tie(b.object, b.field);
  });
  return out;
}

size_t StaleSet::size() const {
  size_t n = 0;
  for (const auto& [object, fields] : by_object_) n += fields.size();
  return n;
}

ActionReply ClassifyActionReply(const plan::Action& action, const CommandResult& result,
                                bool as_add, bool leaving) {
  ActionReply out;
  auto stale = [&](std::string field, std::string desired, std::string actual, std::string reason) {
    out.stale = model::StaleObject{action.object(), std::move(field), std::move(desired),
                                   std::move(actual), std::move(reason)};
  };
  if (!result.ok()) {
    out.verdict = ReplyVerdict::kRefused;
    out.text = std::string(result.status().message());
    out.unexpected = true;
    stale(action.field(), action.desired(), "", out.text);
    return out;
  }
  parse::ClassifiedReply reply = parse::ClassifyMutationReply(*result);
  out.text = reply.text;
  if (reply.ok()) return out;
  bool server = plan::IsServerAction(action.kind);
  switch (reply.code) {
    case parse::ReplyCode::kProxyDisabled:
      if (server && leaving) {
        out.verdict = ReplyVerdict::kFrozen;
        out.stale = plan::FrozenItem(action);
        return out;
      }
      break;
    case parse::ReplyCode::kNoSuchServer:
    case parse::ReplyCode::kNoSuchBackend:
      if (server) {
        out.verdict = ReplyVerdict::kMissing;
        bool no_backend = reply.code == parse::ReplyCode::kNoSuchBackend;
        out.stale = model::StaleObject{
            no_backend ? absl::StrCat("backend/", action.backend) : action.object(), "", "present",
            "absent",
            no_backend ? absl::StrCat("worker has no backend ", action.backend)
                       : absl::StrCat("worker has no server ", action.backend, "/", action.server)};
        return out;
      }
      break;
    case parse::ReplyCode::kUnknownMap:
    case parse::ReplyCode::kUnknownAcl: {
      out.verdict = ReplyVerdict::kMissing;
      absl::string_view kind = absl::StartsWith(action.object(), "acl/") ? "acl" : "map";
      out.stale = model::StaleObject{action.object(), "", "present", "absent",
                                     absl::StrCat("worker has no ", kind, " ", action.map_or_acl)};
      return out;
    }
    case parse::ReplyCode::kEntryNotFound:
      if (IsMapSet(action.kind) && !as_add) {
        out.verdict = ReplyVerdict::kNeedsAdd;
        return out;
      }
      break;
    case parse::ReplyCode::kKeyNotFound:
      if (IsDelete(action.kind)) return out;  // gone already: what was wanted
      break;
    default:
      break;
  }
  out.verdict = ReplyVerdict::kRefused;
  out.unexpected = true;
  stale(action.field(), action.desired(), "", absl::StrCat("refused: ", FirstLine(reply.text)));
  return out;
}

absl::optional<std::string> TransportFailure(const std::vector<cli::Command>& sent,
                                             const std::vector<CommandResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    const absl::Status& status = results[i].status();
    if (absl::IsNotFound(status) || absl::IsUnavailable(status) ||
        absl::IsDeadlineExceeded(status)) {
      return absl::StrCat("apply `", sent[i].text, "`: ", status.message());
    }
  }
  return absl::nullopt;
}

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

absl::StatusOr<int64_t> CountSessionsOnStaleServers(absl::string_view show_sess,
                                                    const StaleSet& stale) {
  absl::StatusOr<std::vector<parse::SessionRow>> rows = parse::ParseShowSess(show_sess);
  if (!rows.ok()) return rows.status();
  absl::flat_hash_set<std::pair<std::string, std::string>> servers;
  for (const std::string& object : stale.Servers()) {
    std::string backend, server;
    if (SplitServerObject(object, &backend, &server)) servers.emplace(backend, server);
  }
  int64_t count = 0;
  for (const parse::SessionRow& row : *rows) {
    if (row.is_cli()) continue;
    if (servers.contains(std::make_pair(row.backend, row.server))) ++count;
  }
  return count;
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

const char* PushResultName(PushResult result) {
  switch (result) {
    case PushResult::kApplied:
      return "APPLIED";
    case PushResult::kPartial:
      return "PARTIAL";
    case PushResult::kPending:
      return "PENDING";
  }
  return "PENDING";
}

WorkerOutcome OutcomeOnWorker(int pid, model::WorkerRole role, bool reached, bool busy,
                              const model::WorkerSync& sync, const StaleSet& stale) {
  WorkerOutcome outcome;
  outcome.pid = pid;
  outcome.role = role;
  if (reached) {
    outcome.result = sync.in_sync ? PushResult::kApplied : PushResult::kPartial;
    outcome.refused = sync.refused;
    outcome.stale = stale.Sorted();
  } else {
    outcome.reason = !sync.error.empty() ? absl::StrCat("retrying: ", sync.error)
                     : busy              ? "still applying"
                                         : "not started";
  }
  return outcome;
}

}  // namespace hawk::reconcile

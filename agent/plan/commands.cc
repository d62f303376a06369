#include "agent/plan/commands.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/base/status_macros.h"
#include "agent/cli/wire.h"

namespace hawk::plan {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// `"text"` cut to 64 bytes, for error messages about entries (which may be 4 KB long).
std::string Short(absl::string_view text) {
  constexpr size_t kMax = 64;
  if (text.size() <= kMax) return absl::StrCat("\"", text, "\"");
  return absl::StrCat("\"", text.substr(0, kMax), "...\" (", text.size(), " bytes)");
}

const char* StateWord(model::ServerState state) {
  switch (state) {
    case model::ServerState::kReady:
      return "ready";
    case model::ServerState::kDrain:
      return "drain";
    case model::ServerState::kMaint:
      return "maint";
  }
  return "ready";
}

absl::StatusOr<std::string> ServerCommandText(const Action& action) {
  ASSIGN_OR_RETURN(std::string backend, cli::EscapeWord(action.backend));
  ASSIGN_OR_RETURN(std::string server, cli::EscapeWord(action.server));
  std::string text = absl::StrCat("set server ", backend, "/", server);
  switch (action.kind) {
    case ActionKind::kSetAddress: {
      ASSIGN_OR_RETURN(std::string address, cli::EscapeWord(action.address));
      absl::StrAppend(&text, " addr ", address);
      if (action.port) absl::StrAppend(&text, " port ", *action.port);
      return text;
    }
    case ActionKind::kSetFqdn: {
      ASSIGN_OR_RETURN(std::string fqdn, cli::EscapeWord(action.fqdn));
      absl::StrAppend(&text, " fqdn ", fqdn);
      return text;
    }
    case ActionKind::kSetWeight:
      absl::StrAppend(&text, " weight ", action.weight);
      return text;
    case ActionKind::kSetState:
      absl::StrAppend(&text, " state ", StateWord(action.state));
      return text;
    default:
      break;
  }
  return absl::InvalidArgumentError("not a server action");
}

// kAddServer: `add server b/s <ip>:<port> [weight <w>]` (HAProxy creates it in maintenance), then
// `set server b/s state ready|drain` unless it is wanted in MAINT. kDelServer: `set server b/s
// state maint` (HAProxy deletes only a server in maintenance), then `del server b/s`.
absl::StatusOr<std::vector<std::string>> ServerLifecycleTexts(const Action& action) {
  ASSIGN_OR_RETURN(std::string backend, cli::EscapeWord(action.backend));
  ASSIGN_OR_RETURN(std::string server, cli::EscapeWord(action.server));
  std::string name = absl::StrCat(backend, "/", server);
  if (action.kind == ActionKind::kDelServer) {
    if (action.only_del) return std::vector<std::string>{absl::StrCat("del server ", name)};
    return std::vector<std::string>{absl::StrCat("set server ", name, " state maint"),
                                    absl::StrCat("del server ", name)};
  }
  const model::ServerSpec& spec = action.spec;
  if (!WhyNotCreatable(spec).empty()) return absl::InvalidArgumentError(WhyNotCreatable(spec));
  // An IPv6 literal goes in brackets, so that its last group is not read as the port.
  std::string host = spec.address.find(':') != std::string::npos
                         ? absl::StrCat("[", spec.address, "]")
                         : spec.address;
  ASSIGN_OR_RETURN(std::string address, cli::EscapeWord(host));
  std::vector<std::string> texts{absl::StrCat("add server ", name, " ", address, ":", *spec.port)};
  if (spec.weight) absl::StrAppend(&texts[0], " weight ", *spec.weight);
  model::ServerState state = spec.state.value_or(model::ServerState::kReady);
  if (state != model::ServerState::kMaint) {
    texts.push_back(absl::StrCat("set server ", name, " state ", StateWord(state)));
  }
  return texts;
}

// "map" or "acl", or an error for a server action.
absl::StatusOr<absl::string_view> PatternKind(const Action& action) {
  if (action.kind == ActionKind::kReplaceMap) return absl::string_view("map");
  if (action.kind == ActionKind::kReplaceAcl) return absl::string_view("acl");
  return absl::InvalidArgumentError(
      absl::StrCat(action.object(), ": not a map or ACL action, no transaction"));
}

// Collects the `add map @N <name> <<` payload commands of one transaction, each within
// kMaxCommandWithPayloadBytes.
class PayloadBatcher {
 public:
  PayloadBatcher(int pid, std::string command, std::vector<cli::Command>* out)
      : pid_(pid), command_(std::move(command)), out_(out) {
    // The line as the master reads it (`@!<pid> ` included), then " <<\n" and the final empty
    // line.
    fixed_ = cli::MasterLineBytes(cli::Command::ForWorker(pid_, command_)) + 4 + 1;
  }

  // Whether the line "key value" fits in a payload command at all.
  bool Fits(absl::string_view key, absl::string_view value) const {
    size_t line = key.size() + 1 + value.size();
    return fixed_ + line + 1 <= cli::kMaxCommandWithPayloadBytes && line <= cli::kMaxLineBytes;
  }

  void Add(absl::string_view key, absl::string_view value) {
    size_t line = key.size() + 1 + value.size();
    if (bytes_ + line + 1 > cli::kMaxCommandWithPayloadBytes) Flush();
    if (lines_.empty()) bytes_ = fixed_;
    bytes_ += line + 1;
    absl::StrAppend(&lines_, key, " ", value, "\n");
  }

  void Flush() {
    if (lines_.empty()) return;
    out_->push_back(cli::Command::ForWorkerWithPayload(pid_, command_, std::move(lines_)));
    lines_.clear();
    bytes_ = fixed_;
  }

 private:
  int pid_;
  std::string command_;
  std::vector<cli::Command>* out_;
  size_t fixed_ = 0;
  size_t bytes_ = 0;
  std::string lines_;
};

// `add map <target> <key> <value>` with escaped words, for an entry that cannot go in a payload.
absl::StatusOr<cli::Command> AddMapWordsCommand(int pid, absl::string_view map,
                                                absl::string_view target, absl::string_view key,
                                                absl::string_view value) {
  auto error = [&](absl::string_view problem) {
    return absl::InvalidArgumentError(
        absl::StrCat("add map to ", map, " on worker ", pid, ": key ", Short(key), ": ", problem));
  };
  if (key.empty()) return error("an empty key cannot be sent");
  if (value.empty()) {
    return error(
        "an empty value can only be sent in a payload, which this key cannot go in (space, "
        "tab or leading '#')");
  }
  absl::StatusOr<std::string> escaped_key = cli::EscapeWord(key);
  if (!escaped_key.ok()) return error(escaped_key.status().message());
  absl::StatusOr<std::string> escaped_value = cli::EscapeWord(value);
  if (!escaped_value.ok()) return error(escaped_value.status().message());
  cli::Command command = cli::Command::ForWorker(
      pid, absl::StrCat("add map ", target, " ", *escaped_key, " ", *escaped_value));
  if (cli::MasterLineBytes(command) > cli::kMaxLineBytes) {
    return error(absl::StrCat("the escaped command is ", cli::MasterLineBytes(command),
                              " bytes, over the ", cli::kMaxLineBytes, " a CLI line may hold"));
  }
  return command;
}

absl::Status AddMapEntries(int pid, const Action& action, absl::string_view target,
                           std::vector<cli::Command>* out) {
  std::string add = absl::StrCat("add map ", target);
  PayloadBatcher batcher(pid, add, out);
  for (const auto& [key, value] : action.content->Sorted()) {
    if (IsPayloadSafeKey(key) && IsPayloadSafeValue(value) && batcher.Fits(key, value)) {
      batcher.Add(key, value);
      continue;
    }
    ASSIGN_OR_RETURN(cli::Command command,
                     AddMapWordsCommand(pid, action.map_or_acl, target, key, value));
    batcher.Flush();  // keep the entries in their order
    out->push_back(std::move(command));
  }
  batcher.Flush();
  return absl::OkStatus();
}

absl::StatusOr<cli::Command> AclPatternCommand(int pid, absl::string_view verb,
                                               absl::string_view acl, absl::string_view target,
                                               absl::string_view pattern) {
  auto error = [&](absl::string_view problem) {
    return absl::InvalidArgumentError(absl::StrCat(verb, " acl ", acl, " on worker ", pid,
                                                   ": pattern ", Short(pattern), ": ", problem));
  };
  if (pattern.empty()) return error("an empty pattern cannot be sent");
  absl::StatusOr<std::string> escaped = cli::EscapeWord(pattern);
  if (!escaped.ok()) return error(escaped.status().message());
  cli::Command command =
      cli::Command::ForWorker(pid, absl::StrCat(verb, " acl ", target, " ", *escaped));
  if (cli::MasterLineBytes(command) > cli::kMaxLineBytes) {
    return error(absl::StrCat("the escaped command is ", cli::MasterLineBytes(command),
                              " bytes, over the ", cli::kMaxLineBytes, " a CLI line may hold"));
  }
  return command;
}

absl::Status AddAclPatterns(int pid, const Action& action, absl::string_view target,
                            std::vector<cli::Command>* out) {
  for (const auto& [pattern, unused] : action.content->Sorted()) {
    ASSIGN_OR_RETURN(cli::Command command,
                     AclPatternCommand(pid, "add", action.map_or_acl, target, pattern));
    out->push_back(std::move(command));
  }
  return absl::OkStatus();
}

// `set map` / `del map` of one entry, escaped.
absl::StatusOr<cli::Command> MapWordCommand(int pid, absl::string_view verb, absl::string_view map,
                                            absl::string_view target, absl::string_view key,
                                            absl::string_view value) {
  auto error = [&](absl::string_view problem) {
    return absl::InvalidArgumentError(
        absl::StrCat(verb, " map ", map, " on worker ", pid, ": key ", Short(key), ": ", problem));
  };
  if (key.empty()) return error("an empty key cannot be sent");
  absl::StatusOr<std::string> escaped_key = cli::EscapeWord(key);
  if (!escaped_key.ok()) return error(escaped_key.status().message());
  std::string text = absl::StrCat(verb, " map ", target, " ", *escaped_key);
  if (verb == "set") {
    // A CLI word cannot be empty: the planner sends an empty value as del + add (payload).
    if (value.empty()) return error("an empty value cannot be set with `set map`");
    absl::StatusOr<std::string> escaped_value = cli::EscapeWord(value);
    if (!escaped_value.ok()) return error(escaped_value.status().message());
    absl::StrAppend(&text, " ", *escaped_value);
  }
  cli::Command command = cli::Command::ForWorker(pid, text);
  if (cli::MasterLineBytes(command) > cli::kMaxLineBytes) {
    return error(absl::StrCat("the escaped command is ", cli::MasterLineBytes(command),
                              " bytes, over the ", cli::kMaxLineBytes, " a CLI line may hold"));
  }
  return command;
}

}  // namespace

bool IsPayloadSafeKey(absl::string_view key) {
  if (key.empty() || key.front() == '#') return false;
  for (char c : key) {
    if (IsBlank(c) || c == '\n' || c == '\r' || c == '\0') return false;
  }
  return true;
}

bool IsPayloadSafeValue(absl::string_view value) {
  if (!value.empty() && (IsBlank(value.front()) || IsBlank(value.back()))) return false;
  for (char c : value) {
    if (c == '\n' || c == '\r' || c == '\0') return false;
  }
  return true;
}

std::vector<cli::Command> ServerCommands(int pid, const Action& action) {
  if (!IsServerAction(action.kind)) return {};
  std::vector<std::string> texts;
  if (action.kind == ActionKind::kAddServer || action.kind == ActionKind::kDelServer) {
    absl::StatusOr<std::vector<std::string>> lifecycle = ServerLifecycleTexts(action);
    if (!lifecycle.ok()) return {};
    texts = *std::move(lifecycle);
  } else {
    absl::StatusOr<std::string> text = ServerCommandText(action);
    if (!text.ok()) return {};
    texts.push_back(*std::move(text));
  }
  std::vector<cli::Command> commands;
  for (std::string& text : texts) {
    cli::Command command = cli::Command::ForWorker(pid, std::move(text));
    if (!cli::ValidateCommand(command).ok()) return {};
    commands.push_back(std::move(command));
  }
  return commands;
}

void AppendWithheld(int pid, const Plan& plan, const std::string& freeze_reply,
                    std::vector<model::Refusal>* refusals) {
  for (const Action& action : plan.withheld) {
    for (cli::Command& command : ServerCommands(pid, action)) {
      refusals->push_back(model::Refusal{action.object(), std::move(command.text), freeze_reply});
    }
  }
}

absl::StatusOr<cli::Command> AddMapEntryCommand(int pid, absl::string_view map,
                                                absl::string_view key, absl::string_view value) {
  ASSIGN_OR_RETURN(std::string target, cli::EscapeWord(map));
  if (IsPayloadSafeKey(key) && IsPayloadSafeValue(value) && value.empty()) {
    // The only form that carries an empty value: the payload line "key ".
    cli::Command command = cli::Command::ForWorkerWithPayload(pid, absl::StrCat("add map ", target),
                                                              absl::StrCat(key, " \n"));
    RETURN_IF_ERROR(cli::ValidateCommand(command));
    return command;
  }
  return AddMapWordsCommand(pid, map, target, key, value);
}

absl::StatusOr<cli::Command> EntryCommand(int pid, const Action& action) {
  ASSIGN_OR_RETURN(std::string target, cli::EscapeWord(action.map_or_acl));
  const std::string& name = action.map_or_acl;
  switch (action.kind) {
    case ActionKind::kSetMapEntry:
    case ActionKind::kUpsertMapEntry:
      return MapWordCommand(pid, "set", name, target, action.key, action.value);
    case ActionKind::kAddMapEntry:
      return AddMapEntryCommand(pid, name, action.key, action.value);
    case ActionKind::kDelMapEntry:
      return MapWordCommand(pid, "del", name, target, action.key, "");
    case ActionKind::kAddAclPattern:
      return AclPatternCommand(pid, "add", name, target, action.key);
    case ActionKind::kDelAclPattern:
      return AclPatternCommand(pid, "del", name, target, action.key);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(action.object(), ": not a map entry or ACL pattern action"));
  }
}

cli::Command PrepareCommand(int pid, const Action& action) {
  absl::StatusOr<absl::string_view> kind = PatternKind(action);
  absl::StatusOr<std::string> name = cli::EscapeWord(action.map_or_acl);
  if (!kind.ok() || !name.ok() || name->empty()) return cli::Command{};
  cli::Command command = cli::Command::ForWorker(pid, absl::StrCat("prepare ", *kind, " ", *name));
  if (!cli::ValidateCommand(command).ok()) return cli::Command{};
  return command;
}

absl::StatusOr<std::vector<cli::Command>> TransactionCommands(int pid, const Action& action,
                                                              int64_t version) {
  ASSIGN_OR_RETURN(absl::string_view kind, PatternKind(action));
  if (version < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("commit ", kind, " ", action.map_or_acl, ": negative version ", version));
  }
  if (action.content == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, " ", action.map_or_acl, ": replace without content"));
  }
  absl::StatusOr<std::string> name = cli::EscapeWord(action.map_or_acl);
  if (!name.ok() || name->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, " name ", Short(action.map_or_acl), " cannot be sent on a CLI line"));
  }
  std::string target = absl::StrCat("@", version, " ", *name);
  std::vector<cli::Command> commands;
  if (action.kind == ActionKind::kReplaceMap) {
    RETURN_IF_ERROR(AddMapEntries(pid, action, target, &commands));
  } else {
    RETURN_IF_ERROR(AddAclPatterns(pid, action, target, &commands));
  }
  commands.push_back(cli::Command::ForWorker(pid, absl::StrCat("commit ", kind, " ", target)));
  for (const cli::Command& command : commands) {
    if (absl::Status valid = cli::ValidateCommand(command); !valid.ok()) {
      // Not reached: every rule ValidateCommand checks is applied above.
      return absl::InternalError(absl::StrCat(kind, " ", action.map_or_acl, " on worker ", pid,
                                              ": built an invalid command: ", valid.message()));
    }
  }
  return commands;
}

PlannedCommands FirstBatch(int pid, const Plan& plan) {
  PlannedCommands out;
  for (size_t a = 0; a < plan.actions.size(); ++a) {
    const Action& action = plan.actions[a];
    if (IsServerAction(action.kind)) {
      for (cli::Command& command : ServerCommands(pid, action)) {
        out.commands.push_back(std::move(command));
        out.action_of.push_back(a);
      }
    } else if (IsReplaceAction(action.kind)) {
      out.commands.push_back(PrepareCommand(pid, action));
      out.action_of.push_back(a);
    } else if (absl::StatusOr<cli::Command> command = EntryCommand(pid, action); command.ok()) {
      out.commands.push_back(*std::move(command));
      out.action_of.push_back(a);
    } else {
      out.unsendable.emplace_back(a, std::string(command.status().message()));
    }
  }
  return out;
}

}  // namespace hawk::plan

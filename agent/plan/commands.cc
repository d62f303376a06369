#include "agent/plan/commands.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/base/status_macros.h"

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

bool IsServerAction(ActionKind kind) {
  return kind == ActionKind::kSetAddress || kind == ActionKind::kSetFqdn ||
         kind == ActionKind::kSetWeight || kind == ActionKind::kSetState;
}

absl::StatusOr<std::string> ServerCommandText(const Action& action) {
  ASSIGN_OR_RETURN(std::string backend, EscapeArgument(action.backend));
  ASSIGN_OR_RETURN(std::string server, EscapeArgument(action.server));
  std::string text = absl::StrCat("set server ", backend, "/", server);
  switch (action.kind) {
    case ActionKind::kSetAddress: {
      ASSIGN_OR_RETURN(std::string address, EscapeArgument(action.address));
      absl::StrAppend(&text, " addr ", address);
      if (action.port) absl::StrAppend(&text, " port ", *action.port);
      return text;
    }
    case ActionKind::kSetFqdn: {
      ASSIGN_OR_RETURN(std::string fqdn, EscapeArgument(action.fqdn));
      absl::StrAppend(&text, " fqdn ", fqdn);
      return text;
    }
    case ActionKind::kSetWeight:
      absl::StrAppend(&text, " weight ", action.weight);
      return text;
    case ActionKind::kSetState:
      absl::StrAppend(&text, " state ", StateWord(action.state));
      return text;
    case ActionKind::kReplaceMap:
    case ActionKind::kReplaceAcl:
      break;
  }
  return absl::InvalidArgumentError("not a server action");
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
    // The line as sent ("@!<pid> " + command), then " <<\n" and the final empty line.
    fixed_ = cli::ForWorker(pid_, command_).line.size() + 4 + 1;
  }

  // Whether `line` fits in a payload command at all.
  bool Fits(absl::string_view line) const {
    return fixed_ + line.size() + 1 <= cli::kMaxCommandWithPayloadBytes &&
           line.size() <= cli::kMaxLineBytes;
  }

  void Add(std::string line) {
    if (bytes_ + line.size() + 1 > cli::kMaxCommandWithPayloadBytes) Flush();
    if (lines_.empty()) bytes_ = fixed_;
    bytes_ += line.size() + 1;
    lines_.push_back(std::move(line));
  }

  void Flush() {
    if (lines_.empty()) return;
    out_->push_back(cli::ForWorkerWithPayload(pid_, command_, std::move(lines_)));
    lines_.clear();
    bytes_ = fixed_;
  }

 private:
  int pid_;
  std::string command_;
  std::vector<cli::Command>* out_;
  size_t fixed_ = 0;
  size_t bytes_ = 0;
  std::vector<std::string> lines_;
};

absl::Status AddMapEntries(int pid, const Action& action, absl::string_view target,
                           std::vector<cli::Command>* out) {
  std::string add = absl::StrCat("add map ", target);
  PayloadBatcher batcher(pid, add, out);
  for (const model::MapEntry& entry : action.entries) {
    auto error = [&](absl::string_view problem) {
      return absl::InvalidArgumentError(absl::StrCat("add map to ", action.map_or_acl,
                                                     " on worker ", pid, ": key ", Short(entry.key),
                                                     ": ", problem));
    };
    if (entry.key.empty()) return error("an empty key cannot be sent");
    if (IsPayloadSafeKey(entry.key) && IsPayloadSafeValue(entry.value)) {
      std::string line = absl::StrCat(entry.key, " ", entry.value);
      if (batcher.Fits(line)) {
        batcher.Add(std::move(line));
        continue;
      }
    }
    if (entry.value.empty()) {
      return error(
          "an empty value can only be sent in a payload, which this key cannot go in (space, "
          "tab or leading '#')");
    }
    absl::StatusOr<std::string> key = EscapeArgument(entry.key);
    if (!key.ok()) return error(key.status().message());
    absl::StatusOr<std::string> value = EscapeArgument(entry.value);
    if (!value.ok()) return error(value.status().message());
    cli::Command command = cli::ForWorker(pid, absl::StrCat(add, " ", *key, " ", *value));
    if (command.line.size() > cli::kMaxLineBytes) {
      return error(absl::StrCat("the escaped command is ", command.line.size(), " bytes, over the ",
                                cli::kMaxLineBytes, " a CLI line may hold"));
    }
    batcher.Flush();  // keep the entries in their order
    out->push_back(std::move(command));
  }
  batcher.Flush();
  return absl::OkStatus();
}

absl::Status AddAclPatterns(int pid, const Action& action, absl::string_view target,
                            std::vector<cli::Command>* out) {
  for (const std::string& pattern : action.patterns) {
    auto error = [&](absl::string_view problem) {
      return absl::InvalidArgumentError(absl::StrCat("add acl to ", action.map_or_acl,
                                                     " on worker ", pid, ": pattern ",
                                                     Short(pattern), ": ", problem));
    };
    if (pattern.empty()) return error("an empty pattern cannot be sent");
    absl::StatusOr<std::string> escaped = EscapeArgument(pattern);
    if (!escaped.ok()) return error(escaped.status().message());
    cli::Command command = cli::ForWorker(pid, absl::StrCat("add acl ", target, " ", *escaped));
    if (command.line.size() > cli::kMaxLineBytes) {
      return error(absl::StrCat("the escaped command is ", command.line.size(), " bytes, over the ",
                                cli::kMaxLineBytes, " a CLI line may hold"));
    }
    out->push_back(std::move(command));
  }
  return absl::OkStatus();
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

absl::StatusOr<std::string> EscapeArgument(absl::string_view word) {
  ASSIGN_OR_RETURN(std::string escaped, cli::EscapeWord(word));
  // EscapeWord leaves '<' alone, so every '<' in its output is a literal one.
  std::string out;
  out.reserve(escaped.size());
  for (char c : escaped) {
    if (c == '<') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::vector<cli::Command> ServerCommands(int pid, const Action& action) {
  if (!IsServerAction(action.kind)) return {};
  absl::StatusOr<std::string> text = ServerCommandText(action);
  if (!text.ok()) return {};
  cli::Command command = cli::ForWorker(pid, *text);
  if (!cli::ValidateCommand(command).ok()) return {};
  return {std::move(command)};
}

cli::Command PrepareCommand(int pid, const Action& action) {
  absl::StatusOr<absl::string_view> kind = PatternKind(action);
  absl::StatusOr<std::string> name = EscapeArgument(action.map_or_acl);
  if (!kind.ok() || !name.ok() || name->empty()) return cli::Command{};
  cli::Command command = cli::ForWorker(pid, absl::StrCat("prepare ", *kind, " ", *name));
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
  absl::StatusOr<std::string> name = EscapeArgument(action.map_or_acl);
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
  commands.push_back(cli::ForWorker(pid, absl::StrCat("commit ", kind, " ", target)));
  for (const cli::Command& command : commands) {
    if (absl::Status valid = cli::ValidateCommand(command); !valid.ok()) {
      // Not reached: every rule ValidateCommand checks is applied above.
      return absl::InternalError(absl::StrCat(kind, " ", action.map_or_acl, " on worker ", pid,
                                              ": built an invalid command: ", valid.message()));
    }
  }
  return commands;
}

}  // namespace hawk::plan

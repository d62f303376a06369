// Input followed all the way to the wire. Every input is read as a desired state (PUT /v1/state)
// and as a patch of a small held state (PATCH /v1/state); whatever validation accepts is planned
// into the commands hawk would send (the observation of every object, a new worker's seed, and
// the per-entry commands of every map entry and ACL pattern), and the bytes of those commands in
// each dialect (master `@!<pid>` lines, master `@@!<pid>` whole lines, a worker's own socket) are
// read back the way HAProxy 2.6, 3.0 and 3.4 read them (tests/support/haproxy_cli_reader.h).
// Properties:
//   - every command a builder hands out passes cli::ValidateCommand;
//   - every dialect on every version reads back exactly the commands planned: the same worker,
//     the same words, a payload exactly where hawk attached one; no line opens a payload hawk
//     did not mean, and no byte starts a second command;
//   - no map or ACL name reaches a file outside the table-files directory: in names, `{T}`
//     stands for a fixed tree (T/dir: hosts.map, state/inside.map with state excluded as
//     --state-dir is, link -> ../out; T/out/victim), and store::ConfinedDir finds a file for a
//     name only when the file it names is a regular file inside T/dir and outside T/dir/state.
//     (tests/fuzz/confined_dir_fuzz.cc checks ConfinedDir itself against an oracle.)
// Seeds: tests/fuzz/corpus/json and tests/fuzz/corpus/wire.

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "agent/cli/command.h"
#include "agent/cli/wire.h"
#include "agent/model/delta.h"
#include "agent/model/desired_json.h"
#include "agent/model/patch.h"
#include "agent/plan/commands.h"
#include "agent/plan/plan.h"
#include "agent/reconcile/observation.h"
#include "agent/store/confined_dir.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/support/haproxy_cli_reader.h"

namespace {

using hawk::cli::Command;
using hawk::cli::Dialect;
using hawk::model::DesiredState;
using hawk::plan::Action;
using hawk::plan::ActionKind;
using hawk::testing::CliVersion;
using hawk::testing::ReadCommand;
using hawk::testing::ReadResult;

constexpr int kObserved = 11;  // the observed worker, also sent per-entry commands
constexpr int kSeeded = 12;    // the worker seeded in full

void Keep(std::vector<Command>* out, Command command) {
  HAWK_FUZZ_CHECK(hawk::cli::ValidateCommand(command).ok(),
                  "a command builder handed out a command ValidateCommand refuses");
  out->push_back(std::move(command));
}

// What a builder returns: a command, or the documented refusal (an entry no line can carry).
void Keep(std::vector<Command>* out, absl::StatusOr<Command> command) {
  if (command.ok()) Keep(out, *std::move(command));
}

std::vector<Command> PlannedCommands(const DesiredState& state) {
  std::vector<Command> commands;
  for (Command& c : hawk::reconcile::ObservationCommands(state, kObserved)) {
    Keep(&commands, std::move(c));
  }
  hawk::plan::Plan seed = hawk::plan::PlanFullSeed(state);
  for (const Action& action : seed.actions) {
    if (hawk::plan::IsServerAction(action.kind)) {
      for (Command& c : hawk::plan::ServerCommands(kSeeded, action)) Keep(&commands, std::move(c));
    } else if (hawk::plan::IsReplaceAction(action.kind)) {
      Keep(&commands, hawk::plan::PrepareCommand(kSeeded, action));
      auto rest = hawk::plan::TransactionCommands(kSeeded, action, 1);
      if (rest.ok()) {
        for (Command& c : *rest) Keep(&commands, std::move(c));
      }
    } else {
      Keep(&commands, hawk::plan::EntryCommand(kSeeded, action));
    }
  }
  // The per-entry commands of every entry, as a push of a few changes sends them.
  for (const auto& [map_name, table] : state.maps) {
    const std::string& name = map_name;  // clang 14 lambdas cannot capture a structured binding
    table.ForEach([&](absl::string_view key, absl::string_view value) {
      for (ActionKind kind :
           {ActionKind::kSetMapEntry, ActionKind::kAddMapEntry, ActionKind::kDelMapEntry}) {
        Action action;
        action.kind = kind;
        action.map_or_acl = name;
        action.key = std::string(key);
        action.value = std::string(value);
        Keep(&commands, hawk::plan::EntryCommand(kObserved, action));
      }
    });
  }
  for (const auto& [acl_name, table] : state.acls) {
    const std::string& name = acl_name;
    table.ForEach([&](absl::string_view pattern, absl::string_view) {
      for (ActionKind kind : {ActionKind::kAddAclPattern, ActionKind::kDelAclPattern}) {
        Action action;
        action.kind = kind;
        action.map_or_acl = name;
        action.key = std::string(pattern);
        Keep(&commands, hawk::plan::EntryCommand(kObserved, action));
      }
    });
  }
  return commands;
}

// What `command` means to the worker that runs it.
ReadCommand Meant(const Command& command, Dialect dialect) {
  ReadCommand meant;
  HAWK_FUZZ_CHECK(command.pid != 0, "a planned command without its worker");
  meant.pid = dialect == Dialect::kWorkerSocket ? 0 : command.pid;
  meant.words = hawk::testing::WorkerWords(command.text);
  meant.has_payload = !command.payload.empty();
  meant.payload = command.payload;
  return meant;
}

void CheckReadBack(const std::vector<Command>& commands, Dialect dialect, CliVersion version) {
  std::string bytes = hawk::cli::BatchBytes(commands, dialect);
  ReadResult read = dialect == Dialect::kWorkerSocket
                        ? hawk::testing::ReadWorkerSocket(bytes, version)
                        : hawk::testing::ReadMasterConnection(bytes, version);
  HAWK_FUZZ_CHECK(read.ok(),
                  "HAProxy would not read the bytes as sent (a payload opened or "
                  "left open, a command without its end)");
  HAWK_FUZZ_CHECK(read.commands.size() == commands.size(),
                  "HAProxy would run another number of commands than planned");
  for (size_t i = 0; i < commands.size(); ++i) {
    HAWK_FUZZ_CHECK(read.commands[i] == Meant(commands[i], dialect),
                    "HAProxy would run another command than planned");
  }
}

void CheckWire(const DesiredState& state) {
  std::vector<Command> commands = PlannedCommands(state);
  if (commands.empty()) return;
  for (CliVersion version : {CliVersion::k2_6, CliVersion::k3_0, CliVersion::k3_4}) {
    CheckReadBack(commands, Dialect::kMaster, version);
    CheckReadBack(commands, Dialect::kWorkerSocket, version);
    if (version == CliVersion::k3_4) CheckReadBack(commands, Dialect::kMasterWholeLines, version);
  }
}

// The fixed tree names are resolved in, built once.
struct Tree {
  std::string root;  // T
  std::unique_ptr<hawk::store::ConfinedDir> dir;
};

const Tree& FixedTree() {
  static const Tree* tree = [] {
    auto* t = new Tree;
    char pattern[] = "/tmp/hawk-wire-fuzz-XXXXXX";
    HAWK_FUZZ_CHECK(::mkdtemp(pattern) != nullptr, "cannot make the fixed tree");
    t->root = pattern;
    for (const char* d : {"/dir", "/dir/state", "/out"}) {
      HAWK_FUZZ_CHECK(::mkdir((t->root + d).c_str(), 0755) == 0, "cannot make the fixed tree");
    }
    for (const char* f : {"/dir/hosts.map", "/dir/state/inside.map", "/out/victim"}) {
      std::FILE* file = std::fopen((t->root + f).c_str(), "w");
      HAWK_FUZZ_CHECK(file != nullptr, "cannot make the fixed tree");
      std::fclose(file);
    }
    HAWK_FUZZ_CHECK(::symlink("../out", (t->root + "/dir/link").c_str()) == 0,
                    "cannot make the fixed tree");
    hawk::store::ConfinedDirOptions options;
    options.name = "--table-files-dir";
    options.excluded.push_back({"--state-dir", t->root + "/dir/state"});
    auto dir = hawk::store::ConfinedDir::Create(t->root + "/dir", options);
    HAWK_FUZZ_CHECK(dir.ok(), "cannot open the fixed tree");
    t->dir = *std::move(dir);
    // The replay runs once per ctest: leave no directory behind.
    std::atexit([] { std::filesystem::remove_all(FixedTree().root); });
    return t;
  }();
  return *tree;
}

void CheckConfined(const std::string& name) {
  const Tree& tree = FixedTree();
  std::string path = absl::StrReplaceAll(name, {{"{T}", tree.root}});
  if (!tree.dir->Lookup(path).ok()) return;
  char* real = ::realpath(path.c_str(), nullptr);
  HAWK_FUZZ_CHECK(real != nullptr, "a name ConfinedDir found has no real path");
  std::string resolved = real;
  ::free(real);
  struct stat st;
  HAWK_FUZZ_CHECK(::lstat(resolved.c_str(), &st) == 0 && S_ISREG(st.st_mode),
                  "a name ConfinedDir found is not a regular file");
  HAWK_FUZZ_CHECK(absl::StartsWith(resolved, tree.root + "/dir/") &&
                      !absl::StartsWith(resolved, tree.root + "/dir/state/"),
                  "a map or ACL name reaches a file outside the table-files directory");
  HAWK_FUZZ_CHECK(path == resolved, "a name ConfinedDir found reaches its file another way");
}

void CheckFiles(const DesiredState& state) {
  for (const auto& [name, table] : state.maps) CheckConfined(name);
  for (const auto& [name, table] : state.acls) CheckConfined(name);
}

const DesiredState& Held() {
  static const DesiredState* held = [] {
    auto state = hawk::model::ParseDesiredState(R"({"version": "v1",
      "backends": [{"name": "be", "servers": [{"name": "s1", "address": "10.0.0.1", "port": 80}]}],
      "maps": [{"name": "/m", "entries": [{"key": "a", "value": "1"}]}],
      "acls": [{"name": "/a", "patterns": ["p"]}]})");
    HAWK_FUZZ_CHECK(state.ok(), "the held state of the PATCH target does not parse");
    return new DesiredState(*std::move(state));
  }();
  return *held;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view json(reinterpret_cast<const char*>(data), size);
  if (auto state = hawk::model::ParseDesiredState(json); state.ok()) {
    CheckWire(*state);
    CheckFiles(*state);
  }
  if (auto patch = hawk::model::ParseStatePatch(json, Held()); patch.ok()) {
    DesiredState state = Held();
    hawk::model::ApplyDelta(hawk::model::PatchToDelta(*patch, Held()), &state);
    CheckWire(state);
    CheckFiles(state);
  }
  return 0;
}

#include "agent/plan/commands.h"

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/cli/command.h"
#include "agent/cli/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/plan/desired_builder.h"
#include "tests/unit/plan/hostile.h"
#include "tests/unit/plan/sim_worker.h"

namespace hawk::plan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::HostileText;
using ::testing::IsEmpty;
using testing::OneIn;
using testing::SimEntry;
using testing::SimWorker;
using testing::SplitCliWords;
using testing::Table;
using testing::Uniform;

constexpr int kPid = 4242;

Action ServerAction(ActionKind kind) {
  Action action;
  action.kind = kind;
  action.backend = "be_app";
  action.server = "SRV_1";
  return action;
}

using Entries = std::vector<std::pair<std::string, std::string>>;

Action MapAction(std::string name, const Entries& entries) {
  Action action;
  action.kind = ActionKind::kReplaceMap;
  action.map_or_acl = std::move(name);
  action.content = std::make_shared<const model::StringTable>(Table(entries));
  return action;
}

Action AclAction(std::string name, const std::vector<std::string>& patterns) {
  Action action;
  action.kind = ActionKind::kReplaceAcl;
  action.map_or_acl = std::move(name);
  model::StringTable table;
  for (const std::string& pattern : patterns) table.Set(pattern, "");
  action.content = std::make_shared<const model::StringTable>(std::move(table));
  return action;
}

Action EntryAction(ActionKind kind, std::string table, std::string key, std::string value = "") {
  Action action;
  action.kind = kind;
  action.map_or_acl = std::move(table);
  action.key = std::move(key);
  action.value = std::move(value);
  return action;
}

// The payload's lines, without their LFs.
std::vector<std::string> PayloadLines(const cli::Command& command) {
  std::vector<std::string> lines;
  if (command.payload.empty()) return lines;
  lines = absl::StrSplit(command.payload.substr(0, command.payload.size() - 1), '\n');
  return lines;
}

std::vector<std::string> Lines(const std::vector<cli::Command>& commands) {
  std::vector<std::string> lines;
  for (const cli::Command& command : commands) {
    lines.push_back(cli::MasterLine(command));
    for (const std::string& line : PayloadLines(command)) {
      lines.push_back(absl::StrCat("  | ", line));
    }
  }
  return lines;
}

std::vector<cli::Command> Transaction(const Action& action, int64_t version = 7) {
  absl::StatusOr<std::vector<cli::Command>> commands = TransactionCommands(kPid, action, version);
  EXPECT_TRUE(commands.ok()) << commands.status();
  if (!commands.ok()) return {};
  for (const cli::Command& command : *commands) {
    EXPECT_TRUE(cli::ValidateCommand(command).ok()) << cli::MasterLine(command);
  }
  return *commands;
}

TEST(ServerCommandsTest, EveryKind) {
  Action address = ServerAction(ActionKind::kSetAddress);
  address.address = "10.0.0.5";
  address.port = 8080;
  Action no_port = address;
  no_port.port = absl::nullopt;
  no_port.address = "2001:db8::5";
  Action fqdn = ServerAction(ActionKind::kSetFqdn);
  fqdn.fqdn = "app.example.com";
  Action weight = ServerAction(ActionKind::kSetWeight);
  weight.weight = 0;
  Action ready = ServerAction(ActionKind::kSetState);
  ready.state = model::ServerState::kReady;
  Action drain = ready;
  drain.state = model::ServerState::kDrain;
  Action maint = ready;
  maint.state = model::ServerState::kMaint;
  std::vector<std::string> lines;
  for (const Action& action : {address, no_port, fqdn, weight, ready, drain, maint}) {
    std::vector<cli::Command> commands = ServerCommands(kPid, action);
    ASSERT_EQ(commands.size(), 1u);
    EXPECT_TRUE(cli::ValidateCommand(commands[0]).ok());
    EXPECT_THAT(commands[0].payload, IsEmpty());
    lines.push_back(cli::MasterLine(commands[0]));
  }
  EXPECT_THAT(lines, ElementsAre("@!4242 set server be_app/SRV_1 addr 10.0.0.5 port 8080",
                                 "@!4242 set server be_app/SRV_1 addr 2001:db8::5",
                                 "@!4242 set server be_app/SRV_1 fqdn app.example.com",
                                 "@!4242 set server be_app/SRV_1 weight 0",
                                 "@!4242 set server be_app/SRV_1 state ready",
                                 "@!4242 set server be_app/SRV_1 state drain",
                                 "@!4242 set server be_app/SRV_1 state maint"));
}

TEST(ServerCommandsTest, CreateAndDelete) {
  auto lines = [](const Action& action) {
    std::vector<std::string> out;
    for (const cli::Command& command : ServerCommands(kPid, action)) {
      EXPECT_TRUE(cli::ValidateCommand(command).ok());
      out.push_back(cli::MasterLine(command));
    }
    return out;
  };
  Action create = ServerAction(ActionKind::kAddServer);
  create.spec.address = "10.0.0.5";
  create.spec.port = 8080;
  create.spec.weight = 7;
  // Created in maintenance by HAProxy: enabled unless wanted in MAINT.
  EXPECT_THAT(lines(create), ElementsAre("@!4242 add server be_app/SRV_1 10.0.0.5:8080 weight 7",
                                         "@!4242 set server be_app/SRV_1 state ready"));
  create.spec.address = "2001:db8::5";
  create.spec.weight = absl::nullopt;
  create.spec.state = model::ServerState::kDrain;
  EXPECT_THAT(lines(create), ElementsAre("@!4242 add server be_app/SRV_1 [2001:db8::5]:8080",
                                         "@!4242 set server be_app/SRV_1 state drain"));
  create.spec.state = model::ServerState::kMaint;
  EXPECT_THAT(lines(create), ElementsAre("@!4242 add server be_app/SRV_1 [2001:db8::5]:8080"));
  // Not creatable (plan::WhyNotCreatable): no command at all.
  create.spec.port = absl::nullopt;
  EXPECT_THAT(lines(create), IsEmpty());
  create.spec.port = 80;
  create.spec.address = "app.example.com";
  EXPECT_THAT(lines(create), IsEmpty());

  // HAProxy deletes only a server in maintenance.
  EXPECT_THAT(
      lines(ServerAction(ActionKind::kDelServer)),
      ElementsAre("@!4242 set server be_app/SRV_1 state maint", "@!4242 del server be_app/SRV_1"));
  Action hostile = ServerAction(ActionKind::kDelServer);
  hostile.server = "x;shutdown sessions";
  EXPECT_THAT(lines(hostile),
              ElementsAre("@!4242 set server be_app/x\\;shutdown\\ sessions state maint",
                          "@!4242 del server be_app/x\\;shutdown\\ sessions"));
}

TEST(ServerCommandsTest, HostileNamesAreEscapedOrRefused) {
  Action action = ServerAction(ActionKind::kSetWeight);
  action.backend = "b e;<<";
  action.weight = 3;
  std::vector<cli::Command> commands = ServerCommands(kPid, action);
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(cli::MasterLine(commands[0]), "@!4242 set server b\\ e\\;\\<\\</SRV_1 weight 3");
  EXPECT_THAT(SplitCliWords(cli::MasterLine(commands[0])),
              ElementsAre("@!4242", "set", "server", "b e;<</SRV_1", "weight", "3"));
  action.backend = "be\napp";
  EXPECT_THAT(ServerCommands(kPid, action), IsEmpty());
  EXPECT_THAT(ServerCommands(kPid, MapAction("/m", {})), IsEmpty());
}

TEST(PrepareCommandTest, MapsAndAcls) {
  EXPECT_EQ(cli::MasterLine(PrepareCommand(kPid, MapAction("/etc/haproxy/hosts.map", {}))),
            "@!4242 prepare map /etc/haproxy/hosts.map");
  EXPECT_EQ(cli::MasterLine(PrepareCommand(kPid, AclAction("/etc/x.acl", {}))),
            "@!4242 prepare acl /etc/x.acl");
  // Nothing wrong is sent: an empty line, which ValidateCommand (and the client) refuse.
  for (const Action& bad :
       {ServerAction(ActionKind::kSetState), MapAction("/m\n", {}), MapAction("", {})}) {
    EXPECT_FALSE(cli::ValidateCommand(PrepareCommand(kPid, bad)).ok());
  }
}

TEST(TransactionCommandsTest, PayloadThenCommit) {
  std::vector<cli::Command> commands = Transaction(
      MapAction("/etc/haproxy/hosts.map", {{"a.example.com", "be_app"}, {"b.example.com", "be_x"}}),
      12);
  EXPECT_THAT(Lines(commands), ElementsAre("@!4242 add map @12 /etc/haproxy/hosts.map",
                                           "  | a.example.com be_app", "  | b.example.com be_x",
                                           "@!4242 commit map @12 /etc/haproxy/hosts.map"));
  EXPECT_EQ(cli::CommandBytes(commands[0], cli::Dialect::kMaster),
            "@!4242 add map @12 /etc/haproxy/hosts.map <<\na.example.com be_app\n"
            "b.example.com be_x\n\n");
  // An empty map: only the commit of the (empty) prepared version.
  EXPECT_THAT(Lines(Transaction(MapAction("/m", {}), 3)), ElementsAre("@!4242 commit map @3 /m"));
}

// Entries go sorted by key (bytewise), whatever order the content was built in: the content is a
// StringTable now, and a plan is deterministic. An escaped entry closes the payload before it.
TEST(TransactionCommandsTest, UnsafeEntriesGoEscapedInOrder) {
  std::vector<cli::Command> commands = Transaction(MapAction("/m", {{"a", "1"},
                                                                    {"key with space", "v"},
                                                                    {"c", "x;y\\z<<"},
                                                                    {"#hash", "v"},
                                                                    {"e", " lead"},
                                                                    {"f", "trail "},
                                                                    {"g", "tab\tinside"},
                                                                    {"h", "x<<"},
                                                                    {"k;\\<", "<<v w"},
                                                                    {"empty", ""}}));
  EXPECT_THAT(
      Lines(commands),
      ElementsAre("@!4242 add map @7 /m #hash v", "@!4242 add map @7 /m", "  | a 1",
                  "  | c x;y\\z<<", "@!4242 add map @7 /m e \\ lead", "@!4242 add map @7 /m",
                  "  | empty ", "@!4242 add map @7 /m f trail\\ ", "@!4242 add map @7 /m",
                  "  | g tab\tinside", "  | h x<<", "  | k;\\< <<v w",
                  "@!4242 add map @7 /m key\\ with\\ space v", "@!4242 commit map @7 /m"));
}

// Sorted by pattern, like map entries.
TEST(TransactionCommandsTest, AclPatternsAreAlwaysSingleEscapedCommands) {
  EXPECT_THAT(
      Lines(Transaction(AclAction("/etc/x.acl", {"10.0.0.0/8", "a b", "<<x", "x;y\\"}), 3)),
      ElementsAre("@!4242 add acl @3 /etc/x.acl 10.0.0.0/8", "@!4242 add acl @3 /etc/x.acl \\<\\<x",
                  "@!4242 add acl @3 /etc/x.acl a\\ b", "@!4242 add acl @3 /etc/x.acl x\\;y\\\\",
                  "@!4242 commit acl @3 /etc/x.acl"));
}

TEST(TransactionCommandsTest, Errors) {
  auto error = [](const Action& action, int64_t version = 1) {
    absl::StatusOr<std::vector<cli::Command>> commands = TransactionCommands(kPid, action, version);
    EXPECT_FALSE(commands.ok());
    return commands.status();
  };
  EXPECT_TRUE(absl::IsInvalidArgument(error(MapAction("/m", {{"k", "v"}}), -1)));
  EXPECT_TRUE(absl::IsInvalidArgument(error(ServerAction(ActionKind::kSetWeight))));
  Action no_content = MapAction("/m", {});
  no_content.content = nullptr;
  EXPECT_THAT(error(no_content).message(), HasSubstr("without content"));
  EXPECT_THAT(error(MapAction("/m", {{"", "v"}})).message(), HasSubstr("empty key"));
  EXPECT_THAT(error(MapAction("/m", {{"a b", ""}})).message(), HasSubstr("empty value"));
  EXPECT_THAT(error(MapAction("/m", {{"k\n", "v"}})).message(), HasSubstr("line break"));
  EXPECT_THAT(error(MapAction("/m", {{"k", std::string("v\0w", 3)}})).message(), HasSubstr("NUL"));
  EXPECT_THAT(error(AclAction("/a", {""})).message(), HasSubstr("empty pattern"));
  EXPECT_THAT(error(AclAction("/a", {"p\r"})).message(), HasSubstr("line break"));
  EXPECT_THAT(error(MapAction("/m\n", {})).message(), HasSubstr("cannot be sent"));
  // Within the model's limits (4096 bytes each) but over a CLI line once escaped.
  absl::Status too_long =
      error(MapAction("/m", {{std::string(4096, ' '), std::string(4096, ';')}}));
  EXPECT_THAT(too_long.message(), HasSubstr("over the 15000"));
  EXPECT_THAT(error(AclAction("/a", {std::string(8000, ' ')})).message(), HasSubstr("over the"));
}

// The command line of `add map @<version> /m` for kPid, as sent.
size_t FixedBytes(int64_t version) {
  return absl::StrCat("@!4242 add map @", version, " /m").size() + 4 + 1;
}

TEST(TransactionCommandsTest, PayloadChunkBoundaries) {
  for (int64_t version : {int64_t{1}, int64_t{4294967295}}) {
    SCOPED_TRACE(version);
    const size_t room = cli::kMaxCommandWithPayloadBytes - FixedBytes(version);  // lines + LFs
    // One line filling the payload exactly: one command of exactly 12 KiB.
    std::vector<cli::Command> commands =
        Transaction(MapAction("/m", {{"k", std::string(room - 1 - 2, 'v')}}), version);
    ASSERT_EQ(commands.size(), 2u);
    EXPECT_EQ(cli::CommandBytes(commands[0], cli::Dialect::kMaster).size(),
              cli::kMaxCommandWithPayloadBytes);
    EXPECT_EQ(commands[0].payload_lines(), 1u);
    // One byte more does not fit any payload: the entry goes escaped, on one line.
    commands = Transaction(MapAction("/m", {{"k", std::string(room - 2, 'v')}}), version);
    ASSERT_EQ(commands.size(), 2u);
    EXPECT_THAT(commands[0].payload, IsEmpty());
    EXPECT_EQ(cli::MasterLine(commands[0]),
              absl::StrCat("@!4242 add map @", version, " /m k ", std::string(room - 2, 'v')));
    // Two lines filling it exactly: one command; one byte more: two.
    size_t first = room / 2;
    size_t second = room - first;  // line + LF each
    commands = Transaction(MapAction("/m", {{"a", std::string(first - 1 - 2, 'x')},
                                            {"b", std::string(second - 1 - 2, 'y')}}),
                           version);
    ASSERT_EQ(commands.size(), 2u);
    EXPECT_EQ(commands[0].payload_lines(), 2u);
    EXPECT_EQ(cli::CommandBytes(commands[0], cli::Dialect::kMaster).size(),
              cli::kMaxCommandWithPayloadBytes);
    commands = Transaction(MapAction("/m", {{"a", std::string(first - 1 - 2, 'x')},
                                            {"b", std::string(second - 2, 'y')}}),
                           version);
    ASSERT_EQ(commands.size(), 3u);
    EXPECT_EQ(commands[0].payload_lines(), 1u);
    EXPECT_EQ(commands[1].payload_lines(), 1u);
  }
}

TEST(TransactionCommandsTest, ManyEntriesFillEachPayload) {
  Entries entries;
  for (int i = 0; i < 5000; ++i) {
    entries.push_back({absl::StrCat("k", 100000 + i, ".example.com"), absl::StrCat("be_", i % 7)});
  }
  std::vector<cli::Command> commands = Transaction(MapAction("/m", entries), 99);
  ASSERT_GT(commands.size(), 5u);
  size_t lines = 0;
  for (size_t i = 0; i + 1 < commands.size(); ++i) {
    size_t bytes = cli::CommandBytes(commands[i], cli::Dialect::kMaster).size();
    EXPECT_LE(bytes, cli::kMaxCommandWithPayloadBytes);
    lines += commands[i].payload_lines();
    // Every payload but the last is full: the next line would not have fitted.
    if (i + 2 < commands.size()) {
      EXPECT_GT(bytes + PayloadLines(commands[i + 1]).front().size() + 1,
                cli::kMaxCommandWithPayloadBytes);
    }
  }
  EXPECT_EQ(lines, entries.size());
  EXPECT_EQ(cli::MasterLine(commands.back()), "@!4242 commit map @99 /m");
}

// Every entry reaches the worker as it was: the commands run through SimWorker (HAProxy's word
// splitting, unescaping and payload parsing), and what the map holds is compared pair by pair
// (sorted by key, as the transaction sends them; a key drawn twice keeps its last value).
TEST(TransactionCommandsTest, RandomHostileEntriesRoundTripExactly) {
  std::mt19937 rng(20240611);
  int commands_run = 0;
  for (int round = 0; round < 400; ++round) {
    Entries entries;
    std::vector<std::string> patterns;
    size_t count = Uniform(rng, 0, OneIn(rng, 10) ? 600 : 30);
    for (size_t i = 0; i < count; ++i) {
      std::string key = HostileText(rng, 40);
      // An empty value needs a payload-safe key (see commands.h).
      std::string value = OneIn(rng, 40) ? "" : HostileText(rng, 60);
      if (value.empty() && !IsPayloadSafeKey(key)) key = absl::StrCat("k", i);
      entries.push_back({key, std::move(value)});
      patterns.push_back(HostileText(rng, 50));
    }
    ObservedWorker observed;
    observed.maps["/etc/haproxy/m.map"].entries = Table({{"old", "entry"}});
    observed.acls["/etc/haproxy/a.acl"].entries = Table({{"old", ""}});
    SimWorker sim(observed, kPid);
    Action map = MapAction("/etc/haproxy/m.map", entries);
    Action acl = AclAction("/etc/haproxy/a.acl", patterns);
    for (const Action& action : {map, acl}) {
      absl::StatusOr<int64_t> version =
          parse::ParseNewVersion(sim.Execute(PrepareCommand(kPid, action)));
      ASSERT_TRUE(version.ok()) << version.status();
      absl::StatusOr<std::vector<cli::Command>> commands =
          TransactionCommands(kPid, action, *version);
      ASSERT_TRUE(commands.ok()) << commands.status();
      for (const cli::Command& command : *commands) {
        ASSERT_EQ(sim.Execute(command), "") << cli::MasterLine(command);
      }
    }
    ASSERT_EQ(*sim.MapEntries("/etc/haproxy/m.map"), testing::SimEntries(*map.content))
        << "round " << round;
    ASSERT_EQ(*sim.AclEntries("/etc/haproxy/a.acl"), testing::SimEntries(*acl.content))
        << "round " << round;
    commands_run += sim.commands_run();
  }
  EXPECT_GT(commands_run, 1000);
}

TEST(EntryCommandTest, EveryKind) {
  auto line = [](const Action& action) {
    absl::StatusOr<cli::Command> command = EntryCommand(kPid, action);
    EXPECT_TRUE(command.ok()) << command.status();
    if (!command.ok()) return std::string();
    EXPECT_TRUE(cli::ValidateCommand(*command).ok()) << cli::MasterLine(*command);
    EXPECT_THAT(command->payload, IsEmpty());
    return cli::MasterLine(*command);
  };
  const std::string map = "/etc/haproxy/hosts.map";
  EXPECT_EQ(line(EntryAction(ActionKind::kSetMapEntry, map, "a.example.com", "be_app")),
            "@!4242 set map /etc/haproxy/hosts.map a.example.com be_app");
  // An upsert starts as a `set map`; the `add map` follows only after "entry not found.".
  EXPECT_EQ(line(EntryAction(ActionKind::kUpsertMapEntry, map, "a.example.com", "be_app")),
            "@!4242 set map /etc/haproxy/hosts.map a.example.com be_app");
  EXPECT_EQ(line(EntryAction(ActionKind::kAddMapEntry, map, "a.example.com", "be_app")),
            "@!4242 add map /etc/haproxy/hosts.map a.example.com be_app");
  EXPECT_EQ(line(EntryAction(ActionKind::kDelMapEntry, map, "a.example.com")),
            "@!4242 del map /etc/haproxy/hosts.map a.example.com");
  EXPECT_EQ(line(EntryAction(ActionKind::kAddAclPattern, "/etc/x.acl", "10.0.0.0/8")),
            "@!4242 add acl /etc/x.acl 10.0.0.0/8");
  EXPECT_EQ(line(EntryAction(ActionKind::kDelAclPattern, "/etc/x.acl", "10.0.0.0/8")),
            "@!4242 del acl /etc/x.acl 10.0.0.0/8");
  // Words are escaped, and no word shows a bare "<<".
  EXPECT_EQ(line(EntryAction(ActionKind::kSetMapEntry, "/m", "k e;y\\", "<<v a")),
            "@!4242 set map /m k\\ e\\;y\\\\ \\<\\<v\\ a");
  EXPECT_EQ(line(EntryAction(ActionKind::kDelAclPattern, "/a", "a<<")),
            "@!4242 del acl /a a\\<\\<");
}

TEST(EntryCommandTest, AnEmptyValueGoesOnlyAsAnAddPayload) {
  absl::StatusOr<cli::Command> add =
      EntryCommand(kPid, EntryAction(ActionKind::kAddMapEntry, "/m", "k", ""));
  ASSERT_TRUE(add.ok()) << add.status();
  EXPECT_EQ(cli::CommandBytes(*add, cli::Dialect::kMaster), "@!4242 add map /m <<\nk \n\n");
  absl::StatusOr<cli::Command> same = AddMapEntryCommand(kPid, "/m", "k", "");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->pid, add->pid);
  EXPECT_EQ(same->text, add->text);
  EXPECT_EQ(same->payload, add->payload);
  // `set map` cannot carry it (a CLI word cannot be empty): the planner sends del + add.
  EXPECT_THAT(
      EntryCommand(kPid, EntryAction(ActionKind::kSetMapEntry, "/m", "k", "")).status().message(),
      HasSubstr("empty value"));
  // Nor can an add whose key cannot go in a payload.
  EXPECT_THAT(AddMapEntryCommand(kPid, "/m", "a b", "").status().message(),
              HasSubstr("empty value"));
}

TEST(EntryCommandTest, Errors) {
  auto error = [](const Action& action) {
    absl::StatusOr<cli::Command> command = EntryCommand(kPid, action);
    EXPECT_FALSE(command.ok()) << cli::MasterLine(*command);
    return command.status();
  };
  EXPECT_TRUE(absl::IsInvalidArgument(error(ServerAction(ActionKind::kSetWeight))));
  EXPECT_TRUE(absl::IsInvalidArgument(error(MapAction("/m", {{"k", "v"}}))));
  EXPECT_THAT(error(EntryAction(ActionKind::kDelMapEntry, "/m", "")).message(),
              HasSubstr("empty key"));
  EXPECT_THAT(error(EntryAction(ActionKind::kAddAclPattern, "/a", "")).message(),
              HasSubstr("empty pattern"));
  EXPECT_THAT(error(EntryAction(ActionKind::kSetMapEntry, "/m", "k\n", "v")).message(),
              HasSubstr("line break"));
  EXPECT_THAT(error(EntryAction(ActionKind::kAddAclPattern, "/a", std::string("p\0", 2))).message(),
              HasSubstr("NUL"));
  EXPECT_TRUE(
      absl::IsInvalidArgument(error(EntryAction(ActionKind::kSetMapEntry, "/m\n", "k", "v"))));
  // Within the model's limits (4096 bytes each) but over a CLI line once escaped.
  EXPECT_THAT(error(EntryAction(ActionKind::kSetMapEntry, "/m", std::string(4096, ' '),
                                std::string(4096, ';')))
                  .message(),
              HasSubstr("over the 15000"));
  EXPECT_THAT(
      error(EntryAction(ActionKind::kDelAclPattern, "/a", std::string(8000, ' '))).message(),
      HasSubstr("over the"));
}

// Per-entry commands reach the live map and ACL exactly: hostile keys, values and patterns, sent
// through SimWorker (HAProxy's word splitting and unescaping, src/map.c's per-entry commands).
// Keys starting with "#0x", which `set map` and `del map|acl` read as entry references whatever
// the escaping, are left to the planner's tests (plan_test.cc).
TEST(EntryCommandTest, RandomHostileEntriesRoundTripExactly) {
  std::mt19937 rng(20251203);
  int commands_run = 0;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    ObservedWorker observed;
    observed.maps["/m"];
    observed.acls["/a"];
    SimWorker sim(observed, kPid);
    model::StringTable want_map;
    model::StringTable want_acl;
    auto key = [&rng] {
      std::string k = HostileText(rng, 30);
      if (absl::StartsWith(k, "#0x")) k[0] = '_';
      return k;
    };
    auto run = [&](const Action& action) {
      absl::StatusOr<cli::Command> command = EntryCommand(kPid, action);
      EXPECT_TRUE(command.ok()) << command.status();
      if (!command.ok()) return std::string("not built");
      return sim.Execute(*command);
    };
    size_t steps = Uniform(rng, 1, 40);
    for (size_t i = 0; i < steps; ++i) {
      std::string k = key();
      std::string v = HostileText(rng, 40);
      switch (Uniform(rng, 0, 3)) {
        case 0:  // a new entry, or a new value for one
          if (want_map.Contains(k)) {
            ASSERT_EQ(run(EntryAction(ActionKind::kSetMapEntry, "/m", k, v)), "");
          } else {
            ASSERT_EQ(run(EntryAction(ActionKind::kSetMapEntry, "/m", k, v)), "entry not found.");
            ASSERT_EQ(run(EntryAction(ActionKind::kAddMapEntry, "/m", k, v)), "");
          }
          want_map.Set(k, v);
          break;
        case 1: {  // delete an entry, there or not
          std::vector<std::pair<absl::string_view, absl::string_view>> held = want_map.Sorted();
          if (!held.empty() && OneIn(rng, 2))
            k = std::string(held[Uniform(rng, 0, held.size() - 1)].first);
          ASSERT_EQ(run(EntryAction(ActionKind::kDelMapEntry, "/m", k)),
                    want_map.Contains(k) ? "" : "Key not found.");
          want_map.Erase(k);
          break;
        }
        case 2:
          if (!want_acl.Contains(k)) {
            ASSERT_EQ(run(EntryAction(ActionKind::kAddAclPattern, "/a", k)), "");
          }
          want_acl.Set(k, "");
          break;
        default: {
          std::vector<std::pair<absl::string_view, absl::string_view>> held = want_acl.Sorted();
          if (!held.empty() && OneIn(rng, 2))
            k = std::string(held[Uniform(rng, 0, held.size() - 1)].first);
          ASSERT_EQ(run(EntryAction(ActionKind::kDelAclPattern, "/a", k)),
                    want_acl.Contains(k) ? "" : "Key not found.");
          want_acl.Erase(k);
          break;
        }
      }
    }
    ASSERT_EQ(sim.SortedMapEntries("/m"), testing::SimEntries(want_map));
    ASSERT_EQ(sim.SortedAclEntries("/a"), testing::SimEntries(want_acl));
    commands_run += sim.commands_run();
  }
  EXPECT_GT(commands_run, 3000);
}

// SimWorker itself answers per-entry commands as HAProxy does: duplicates kept by `add`, `del`
// removing all of them on 2.6 and only the first on 3.4, and the replies of src/map.c.
TEST(SimWorkerTest, PerEntryCommandsAsHaproxyRunsThem) {
  for (bool first_only : {false, true}) {
    SCOPED_TRACE(first_only ? "3.4" : "2.6");
    ObservedWorker observed;
    observed.maps["/m"];
    observed.acls["/a"];
    SimWorker sim(observed, kPid, testing::SimOptions{first_only});
    auto run = [&](absl::string_view text) {
      return sim.Answer(cli::Command::ForWorker(kPid, std::string(text)));
    };
    EXPECT_EQ(run("set map /m k v"), "entry not found.\n\n");
    EXPECT_EQ(run("add map /m k v1"), "\n");
    EXPECT_EQ(run("add map /m k v2"), "\n");
    EXPECT_EQ(run("add acl /a p"), "\n");
    EXPECT_EQ(run("add acl /a p"), "\n");
    EXPECT_THAT(*sim.MapEntries("/m"), ElementsAre(SimEntry{"k", "v1"}, SimEntry{"k", "v2"}));
    // `set map` changes every entry with the key.
    EXPECT_EQ(run("set map /m k v3"), "\n");
    EXPECT_THAT(*sim.MapEntries("/m"), ElementsAre(SimEntry{"k", "v3"}, SimEntry{"k", "v3"}));
    EXPECT_EQ(run("del map /m k"), "\n");
    EXPECT_EQ(run("del acl /a p"), "\n");
    EXPECT_EQ(sim.MapEntries("/m")->size(), first_only ? 1u : 0u);
    EXPECT_EQ(sim.AclEntries("/a")->size(), first_only ? 1u : 0u);
    if (first_only) {
      EXPECT_EQ(run("del map /m k"), "\n");
      EXPECT_EQ(run("del acl /a p"), "\n");
    }
    EXPECT_EQ(run("del map /m k"), "Key not found.\n\n");
    EXPECT_EQ(run("del acl /a p"), "Key not found.\n\n");
    EXPECT_EQ(run("set map /nope k v"), "Unknown map identifier. Please use #<id> or <file>.\n\n");
    EXPECT_EQ(run("del acl /nope p"), "Unknown map identifier. Please use #<id> or <file>.\n\n");
    EXPECT_EQ(run("add acl /nope p"), "Unknown ACL identifier. Please use #<id> or <file>.\n\n");
    // A key word starting with "#0x" names an entry by the pointer `show map` prints.
    EXPECT_EQ(run("add map /m x 1"), "\n");
    EXPECT_EQ(run("set map /m #0xzz 2"), "Malformed identifier. Please use #<id> or <file>.\n\n");
    EXPECT_EQ(run("set map /m #0x1 2"), "key or pattern not found.\n\n");
    EXPECT_EQ(run("del map /m #0x1"), "Key not found.\n\n");
    EXPECT_EQ(run("set map /m #0x557909023000 2"), "\n");
    EXPECT_THAT(*sim.MapEntries("/m"), ElementsAre(SimEntry{"x", "2"}));
  }
}

}  // namespace
}  // namespace hawk::plan

#include "agent/plan/commands.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/cli/command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
using testing::Uniform;

constexpr int kPid = 4242;

Action ServerAction(ActionKind kind) {
  Action action;
  action.kind = kind;
  action.backend = "be_app";
  action.server = "SRV_1";
  return action;
}

Action MapAction(std::string name, std::vector<model::MapEntry> entries) {
  Action action;
  action.kind = ActionKind::kReplaceMap;
  action.map_or_acl = std::move(name);
  action.entries = std::move(entries);
  return action;
}

Action AclAction(std::string name, std::vector<std::string> patterns) {
  Action action;
  action.kind = ActionKind::kReplaceAcl;
  action.map_or_acl = std::move(name);
  action.patterns = std::move(patterns);
  return action;
}

std::vector<std::string> Lines(const std::vector<cli::Command>& commands) {
  std::vector<std::string> lines;
  for (const cli::Command& command : commands) {
    lines.push_back(command.line);
    for (const std::string& line : command.payload) lines.push_back(absl::StrCat("  | ", line));
  }
  return lines;
}

std::vector<cli::Command> Transaction(const Action& action, int64_t version = 7) {
  absl::StatusOr<std::vector<cli::Command>> commands = TransactionCommands(kPid, action, version);
  EXPECT_TRUE(commands.ok()) << commands.status();
  if (!commands.ok()) return {};
  for (const cli::Command& command : *commands) {
    EXPECT_TRUE(cli::ValidateCommand(command).ok()) << command.line;
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
    lines.push_back(commands[0].line);
  }
  EXPECT_THAT(lines, ElementsAre("@!4242 set server be_app/SRV_1 addr 10.0.0.5 port 8080",
                                 "@!4242 set server be_app/SRV_1 addr 2001:db8::5",
                                 "@!4242 set server be_app/SRV_1 fqdn app.example.com",
                                 "@!4242 set server be_app/SRV_1 weight 0",
                                 "@!4242 set server be_app/SRV_1 state ready",
                                 "@!4242 set server be_app/SRV_1 state drain",
                                 "@!4242 set server be_app/SRV_1 state maint"));
}

TEST(ServerCommandsTest, HostileNamesAreEscapedOrRefused) {
  Action action = ServerAction(ActionKind::kSetWeight);
  action.backend = "b e;<<";
  action.weight = 3;
  std::vector<cli::Command> commands = ServerCommands(kPid, action);
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].line, "@!4242 set server b\\ e\\;\\<\\</SRV_1 weight 3");
  EXPECT_THAT(SplitCliWords(commands[0].line),
              ElementsAre("@!4242", "set", "server", "b e;<</SRV_1", "weight", "3"));
  action.backend = "be\napp";
  EXPECT_THAT(ServerCommands(kPid, action), IsEmpty());
  EXPECT_THAT(ServerCommands(kPid, MapAction("/m", {})), IsEmpty());
}

TEST(PrepareCommandTest, MapsAndAcls) {
  EXPECT_EQ(PrepareCommand(kPid, MapAction("/etc/haproxy/hosts.map", {})).line,
            "@!4242 prepare map /etc/haproxy/hosts.map");
  EXPECT_EQ(PrepareCommand(kPid, AclAction("/etc/x.acl", {})).line,
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
  EXPECT_EQ(cli::Serialize(commands[0]),
            "@!4242 add map @12 /etc/haproxy/hosts.map <<\na.example.com be_app\n"
            "b.example.com be_x\n\n");
  // An empty map: only the commit of the (empty) prepared version.
  EXPECT_THAT(Lines(Transaction(MapAction("/m", {}), 3)), ElementsAre("@!4242 commit map @3 /m"));
}

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
      ElementsAre("@!4242 add map @7 /m", "  | a 1", "@!4242 add map @7 /m key\\ with\\ space v",
                  "@!4242 add map @7 /m", "  | c x;y\\z<<", "@!4242 add map @7 /m #hash v",
                  "@!4242 add map @7 /m e \\ lead", "@!4242 add map @7 /m f trail\\ ",
                  "@!4242 add map @7 /m", "  | g tab\tinside", "  | h x<<", "  | k;\\< <<v w",
                  "  | empty ", "@!4242 commit map @7 /m"));
}

TEST(TransactionCommandsTest, AclPatternsAreAlwaysSingleEscapedCommands) {
  EXPECT_THAT(
      Lines(Transaction(AclAction("/etc/x.acl", {"10.0.0.0/8", "a b", "<<x", "x;y\\"}), 3)),
      ElementsAre("@!4242 add acl @3 /etc/x.acl 10.0.0.0/8", "@!4242 add acl @3 /etc/x.acl a\\ b",
                  "@!4242 add acl @3 /etc/x.acl \\<\\<x", "@!4242 add acl @3 /etc/x.acl x\\;y\\\\",
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
    EXPECT_EQ(cli::Serialize(commands[0]).size(), cli::kMaxCommandWithPayloadBytes);
    EXPECT_EQ(commands[0].payload.size(), 1u);
    // One byte more does not fit any payload: the entry goes escaped, on one line.
    commands = Transaction(MapAction("/m", {{"k", std::string(room - 2, 'v')}}), version);
    ASSERT_EQ(commands.size(), 2u);
    EXPECT_THAT(commands[0].payload, IsEmpty());
    EXPECT_EQ(commands[0].line,
              absl::StrCat("@!4242 add map @", version, " /m k ", std::string(room - 2, 'v')));
    // Two lines filling it exactly: one command; one byte more: two.
    size_t first = room / 2;
    size_t second = room - first;  // line + LF each
    commands = Transaction(MapAction("/m", {{"a", std::string(first - 1 - 2, 'x')},
                                            {"b", std::string(second - 1 - 2, 'y')}}),
                           version);
    ASSERT_EQ(commands.size(), 2u);
    EXPECT_EQ(commands[0].payload.size(), 2u);
    EXPECT_EQ(cli::Serialize(commands[0]).size(), cli::kMaxCommandWithPayloadBytes);
    commands = Transaction(MapAction("/m", {{"a", std::string(first - 1 - 2, 'x')},
                                            {"b", std::string(second - 2, 'y')}}),
                           version);
    ASSERT_EQ(commands.size(), 3u);
    EXPECT_EQ(commands[0].payload.size(), 1u);
    EXPECT_EQ(commands[1].payload.size(), 1u);
  }
}

TEST(TransactionCommandsTest, ManyEntriesFillEachPayload) {
  std::vector<model::MapEntry> entries;
  for (int i = 0; i < 5000; ++i) {
    entries.push_back({absl::StrCat("k", 100000 + i, ".example.com"), absl::StrCat("be_", i % 7)});
  }
  std::vector<cli::Command> commands = Transaction(MapAction("/m", entries), 99);
  ASSERT_GT(commands.size(), 5u);
  size_t lines = 0;
  for (size_t i = 0; i + 1 < commands.size(); ++i) {
    size_t bytes = cli::Serialize(commands[i]).size();
    EXPECT_LE(bytes, cli::kMaxCommandWithPayloadBytes);
    lines += commands[i].payload.size();
    // Every payload but the last is full: the next line would not have fitted.
    if (i + 2 < commands.size()) {
      EXPECT_GT(bytes + commands[i + 1].payload.front().size() + 1,
                cli::kMaxCommandWithPayloadBytes);
    }
  }
  EXPECT_EQ(lines, entries.size());
  EXPECT_EQ(commands.back().line, "@!4242 commit map @99 /m");
}

// Every entry reaches the worker as it was: the commands run through SimWorker (HAProxy's word
// splitting, unescaping and payload parsing), and what the map holds is compared pair by pair.
TEST(TransactionCommandsTest, RandomHostileEntriesRoundTripExactly) {
  std::mt19937 rng(20240611);
  int commands_run = 0;
  for (int round = 0; round < 400; ++round) {
    std::vector<model::MapEntry> entries;
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
    observed.maps["/etc/haproxy/m.map"] = ObservedMap{true, {"old entry"}};
    observed.acls["/etc/haproxy/a.acl"] = ObservedAcl{true, {"old"}};
    SimWorker sim(observed, kPid);
    for (const Action& action :
         {MapAction("/etc/haproxy/m.map", entries), AclAction("/etc/haproxy/a.acl", patterns)}) {
      absl::StatusOr<int64_t> version =
          parse::ParseNewVersion(sim.Execute(PrepareCommand(kPid, action)));
      ASSERT_TRUE(version.ok()) << version.status();
      absl::StatusOr<std::vector<cli::Command>> commands =
          TransactionCommands(kPid, action, *version);
      ASSERT_TRUE(commands.ok()) << commands.status();
      for (const cli::Command& command : *commands) {
        ASSERT_EQ(sim.Execute(command), "") << command.line;
      }
    }
    std::vector<SimEntry> want_map;
    for (const model::MapEntry& entry : entries) want_map.push_back({entry.key, entry.value});
    std::vector<SimEntry> want_acl;
    for (const std::string& pattern : patterns) want_acl.push_back({pattern, ""});
    ASSERT_EQ(*sim.MapEntries("/etc/haproxy/m.map"), want_map) << "round " << round;
    ASSERT_EQ(*sim.AclEntries("/etc/haproxy/a.acl"), want_acl) << "round " << round;
    commands_run += sim.commands_run();
  }
  EXPECT_GT(commands_run, 1000);
}

}  // namespace
}  // namespace hawk::plan

// The reconciler's pure pieces (reconcile/outcome.h): what a reply to an action means, over the
// reply texts HAProxy really prints (tests/fixtures/haproxy-*/ where they were recorded; the
// per-entry replies were not, and are quoted from src/map.c, the same on 2.6 and 3.4), the stale
// set kept across incremental reconciles, the observation replies, and the count of live
// streams on stale servers.

#include "agent/reconcile/outcome.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/cli/command.h"
#include "agent/cli/wire.h"
#include "agent/model/delta.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/pending.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"
#include "tests/unit/parse/fixture.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::reconcile {
namespace {

using parse::testing::kVersions;
using parse::testing::ReadFixture;
using plan::ActionKind;
using plan::testing::Desired;
using plan::testing::Spec;
using plan::testing::Table;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// Replies HAProxy prints that no fixture recorded (src/map.c: cli_parse_set_map,
// cli_parse_del_map, cli_parse_add_map), with the blank line that ends every reply.
constexpr char kEntryNotFound[] = "entry not found.\n\n";
constexpr char kKeyNotFound[] = "Key not found.\n\n";
constexpr char kUnknownMap[] = "Unknown map identifier. Please use #<id> or <file>.\n\n";
constexpr char kUnknownAcl[] = "Unknown ACL identifier. Please use #<id> or <file>.\n\n";

plan::Action ServerAction(ActionKind kind) {
  plan::Action action;
  action.kind = kind;
  action.backend = "be_app";
  action.server = "web1";
  action.address = "10.0.0.1";
  action.port = 8080;
  action.weight = 20;
  return action;
}

plan::Action EntryAction(ActionKind kind, std::string key = "a.example.com",
                         std::string value = "be_app") {
  plan::Action action;
  action.kind = kind;
  bool acl = kind == ActionKind::kAddAclPattern || kind == ActionKind::kDelAclPattern ||
             kind == ActionKind::kReplaceAcl;
  action.map_or_acl = acl ? "/etc/haproxy/blocked.acl" : "/etc/haproxy/hosts.map";
  action.key = std::move(key);
  action.value = acl ? "" : std::move(value);
  return action;
}

ActionReply Classify(const plan::Action& action, CommandResult result, bool as_add = false,
                     bool leaving = false) {
  return ClassifyActionReply(action, result, as_add, leaving);
}

TEST(ClassifyActionReplyTest, SuccessesFromTheFixtures) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    for (const char* name :
         {"ok_set_server_addr_port.txt", "ok_set_server_state_ready.txt", "ok_set_weight.txt"}) {
      ActionReply reply =
          Classify(ServerAction(ActionKind::kSetAddress), ReadFixture(version, name));
      EXPECT_EQ(reply.verdict, ReplyVerdict::kOk) << name << ": " << reply.text;
      EXPECT_FALSE(reply.stale.has_value());
      EXPECT_FALSE(reply.unexpected);
    }
    EXPECT_EQ(
        Classify(EntryAction(ActionKind::kSetMapEntry), ReadFixture(version, "ok_set_map.txt"))
            .verdict,
        ReplyVerdict::kOk);
    EXPECT_EQ(
        Classify(EntryAction(ActionKind::kAddMapEntry), ReadFixture(version, "ok_add_map.txt"),
                 /*as_add=*/true)
            .verdict,
        ReplyVerdict::kOk);
    // The leaving worker still runs map commands.
    EXPECT_EQ(Classify(EntryAction(ActionKind::kSetMapEntry),
                       ReadFixture(version, "old_worker_set_map.txt"), false, /*leaving=*/true)
                  .verdict,
              ReplyVerdict::kOk);
  }
}

TEST(ClassifyActionReplyTest, ProxyIsDisabledFreezesOnlyALeavingWorkersServers) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    std::string refused = ReadFixture(version, "old_worker_set_server_refused.txt");
    plan::Action weight = ServerAction(ActionKind::kSetWeight);
    ActionReply reply = Classify(weight, refused, false, /*leaving=*/true);
    EXPECT_EQ(reply.verdict, ReplyVerdict::kFrozen);
    EXPECT_EQ(reply.text, "Proxy is disabled.");
    ASSERT_TRUE(reply.stale.has_value());
    EXPECT_EQ(*reply.stale, plan::FrozenItem(weight));
    EXPECT_EQ(*reply.stale, (model::StaleObject{"backend/be_app/server/web1", "weight", "20", "",
                                                plan::kFrozenReason}));
    // On a current worker the same text is an unexplained refusal.
    reply = Classify(weight, refused, false, /*leaving=*/false);
    EXPECT_EQ(reply.verdict, ReplyVerdict::kRefused);
    EXPECT_TRUE(reply.unexpected);
    ASSERT_TRUE(reply.stale.has_value());
    EXPECT_EQ(reply.stale->reason, "refused: Proxy is disabled.");
    // And on a map action too (it never freezes maps).
    EXPECT_EQ(Classify(EntryAction(ActionKind::kSetMapEntry), refused, false, true).verdict,
              ReplyVerdict::kRefused);
  }
}

TEST(ClassifyActionReplyTest, MissingServersAndBackends) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ActionReply reply = Classify(ServerAction(ActionKind::kSetAddress),
                                 ReadFixture(version, "err_no_such_server.txt"));
    EXPECT_EQ(reply.verdict, ReplyVerdict::kMissing);
    EXPECT_EQ(reply.text, "No such server.");
    ASSERT_TRUE(reply.stale.has_value());
    EXPECT_EQ(*reply.stale, (model::StaleObject{"backend/be_app/server/web1", "", "present",
                                                "absent", "worker has no server be_app/web1"}));
    reply = Classify(ServerAction(ActionKind::kSetState),
                     ReadFixture(version, "err_no_such_backend.txt"));
    EXPECT_EQ(reply.verdict, ReplyVerdict::kMissing);
    ASSERT_TRUE(reply.stale.has_value());
    EXPECT_EQ(*reply.stale, (model::StaleObject{"backend/be_app", "", "present", "absent",
                                                "worker has no backend be_app"}));
    EXPECT_FALSE(reply.unexpected);
    // A map action answered so is not about a server: refused.
    EXPECT_EQ(Classify(EntryAction(ActionKind::kSetMapEntry),
                       ReadFixture(version, "err_no_such_server.txt"))
                  .verdict,
              ReplyVerdict::kRefused);
  }
}

TEST(ClassifyActionReplyTest, PerEntryReplies) {
  // `set map` on a key the map lacks: add it (kSetMapEntry too: the reconciler treats both
  // alike); the follow-up `add map` answered so is a refusal.
  for (ActionKind kind : {ActionKind::kSetMapEntry, ActionKind::kUpsertMapEntry}) {
    ActionReply reply = Classify(EntryAction(kind), kEntryNotFound);
    EXPECT_EQ(reply.verdict, ReplyVerdict::kNeedsAdd);
    EXPECT_FALSE(reply.stale.has_value());
    reply = Classify(EntryAction(kind), kEntryNotFound, /*as_add=*/true);
    EXPECT_EQ(reply.verdict, ReplyVerdict::kRefused);
    EXPECT_TRUE(reply.unexpected);
  }
  EXPECT_EQ(Classify(EntryAction(ActionKind::kAddMapEntry), kEntryNotFound).verdict,
            ReplyVerdict::kRefused);
  // A `del` of what is not there: done, it is gone.
  for (ActionKind kind : {ActionKind::kDelMapEntry, ActionKind::kDelAclPattern}) {
    ActionReply reply = Classify(EntryAction(kind), kKeyNotFound);
    EXPECT_EQ(reply.verdict, ReplyVerdict::kOk);
    EXPECT_FALSE(reply.stale.has_value());
    EXPECT_EQ(reply.text, "Key not found.");
  }
  ActionReply refused = Classify(EntryAction(ActionKind::kSetMapEntry), kKeyNotFound);
  EXPECT_EQ(refused.verdict, ReplyVerdict::kRefused);
  ASSERT_TRUE(refused.stale.has_value());
  EXPECT_EQ(*refused.stale,
            (model::StaleObject{"map//etc/haproxy/hosts.map", "entries/a.example.com", "be_app", "",
                                "refused: Key not found."}));
  EXPECT_EQ(Classify(EntryAction(ActionKind::kAddAclPattern), kKeyNotFound).stale->desired,
            "present");
  EXPECT_EQ(Classify(ServerAction(ActionKind::kSetWeight), kKeyNotFound).verdict,
            ReplyVerdict::kRefused);
}

TEST(ClassifyActionReplyTest, UnknownMapsAndAcls) {
  ActionReply reply = Classify(EntryAction(ActionKind::kSetMapEntry), kUnknownMap);
  EXPECT_EQ(reply.verdict, ReplyVerdict::kMissing);
  ASSERT_TRUE(reply.stale.has_value());
  EXPECT_EQ(*reply.stale, (model::StaleObject{"map//etc/haproxy/hosts.map", "", "present", "absent",
                                              "worker has no map /etc/haproxy/hosts.map"}));
  reply = Classify(EntryAction(ActionKind::kAddAclPattern, "10.0.0.0/8"), kUnknownAcl);
  EXPECT_EQ(reply.verdict, ReplyVerdict::kMissing);
  EXPECT_EQ(reply.stale->object, "acl//etc/haproxy/blocked.acl");
  EXPECT_EQ(reply.stale->reason, "worker has no acl /etc/haproxy/blocked.acl");
  // `del acl` words an unknown ACL as a map (src/map.c cli_parse_del_map): still the ACL.
  reply = Classify(EntryAction(ActionKind::kDelAclPattern, "10.0.0.0/8"), kUnknownMap);
  EXPECT_EQ(reply.verdict, ReplyVerdict::kMissing);
  EXPECT_EQ(reply.stale->reason, "worker has no acl /etc/haproxy/blocked.acl");
  // A replace's `prepare` answered so.
  plan::Action replace = EntryAction(ActionKind::kReplaceMap);
  replace.content = std::make_shared<const model::StringTable>(Table({{"k", "v"}}));
  EXPECT_EQ(Classify(replace, kUnknownMap).verdict, ReplyVerdict::kMissing);
}

TEST(ClassifyActionReplyTest, ErrorsAndUnknownTexts) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    ActionReply reply = Classify(ServerAction(ActionKind::kSetWeight),
                                 ReadFixture(version, "err_unknown_command.txt"));
    EXPECT_EQ(reply.verdict, ReplyVerdict::kRefused);
    EXPECT_TRUE(reply.unexpected);
    ASSERT_TRUE(reply.stale.has_value());
    EXPECT_THAT(reply.stale->reason, ::testing::StartsWith("refused: Unknown command"));
    EXPECT_THAT(reply.stale->reason, Not(HasSubstr("\n")));  // the first line only
  }
  // A command that got no reply: refused, with the error as its text.
  ActionReply reply = Classify(ServerAction(ActionKind::kSetAddress),
                               absl::DeadlineExceededError("no reply within 5s"));
  EXPECT_EQ(reply.verdict, ReplyVerdict::kRefused);
  EXPECT_TRUE(reply.unexpected);
  EXPECT_EQ(reply.text, "no reply within 5s");
  EXPECT_EQ(*reply.stale, (model::StaleObject{"backend/be_app/server/web1", "address",
                                              "10.0.0.1:8080", "", "no reply within 5s"}));
  // Any other text from a mutating command is an error, never a success.
  reply = Classify(EntryAction(ActionKind::kAddMapEntry), "Out of memory error.\n\n");
  EXPECT_EQ(reply.verdict, ReplyVerdict::kRefused);
  EXPECT_EQ(reply.stale->reason, "refused: Out of memory error.");
}

TEST(TransportFailureTest, OnlyWhatDidNotReachHaproxy) {
  std::vector<cli::Command> sent = {cli::Command::ForWorker(4242, "set server be/s weight 1"),
                                    cli::Command::ForWorker(4242, "set map /m k v")};
  EXPECT_EQ(TransportFailure(sent, {std::string("\n"), std::string("No such server.\n\n")}),
            absl::nullopt);
  EXPECT_EQ(
      TransportFailure(sent, {std::string("\n"), absl::UnavailableError("connection closed")}),
      "apply `set map /m k v`: connection closed");
  EXPECT_EQ(TransportFailure(sent, {absl::NotFoundError("Can't find the target PID"),
                                    absl::UnavailableError("not sent")}),
            "apply `set server be/s weight 1`: Can't find the target PID");
  EXPECT_TRUE(TransportFailure(sent, {std::string("\n"), absl::DeadlineExceededError("late")}));
  EXPECT_EQ(TransportFailure(sent, {absl::InvalidArgumentError("bad"), std::string("\n")}),
            absl::nullopt);
}

// Builds a PendingChanges from `before` → `after`.
plan::PendingChanges Taken(model::DesiredState before, const model::DesiredState& after) {
  plan::PendingChanges pending;
  model::AppliedDelta applied = model::ApplyDelta(model::DiffStates(before, after), &before);
  pending.Merge(applied.summary, before);
  return pending;
}

std::vector<std::string> Objects(const StaleSet& stale) {
  std::vector<std::string> out;
  for (const model::StaleObject& item : stale.Sorted()) {
    out.push_back(absl::StrCat(item.object, " ", item.field));
  }
  return out;
}

TEST(StaleSetTest, ForgetChangedForgetsWhatIsReplanned) {
  StaleSet stale;
  EXPECT_TRUE(stale.empty());
  stale.AddAll({
      {"backend/be/server/s1", "weight", "5", "1", plan::kFrozenReason},
      {"backend/be/server/s1", "state", "READY", "MAINT", "hawk cannot clear …"},
      {"backend/be/server/s2", "", "present", "absent", "worker has no server be/s2"},
      {"map//m", "entries/a", "1", "", "refused: …"},
      {"map//m", "entries/b", "2", "", "refused: …"},
      {"map//r", "entries", "3 entries", "", "refused: …"},
      {"acl//a", "patterns/p", "present", "", "refused: …"},
  });
  // The same object and field again replaces the item.
  stale.Add({"map//m", "entries/b", "2", "", "refused: again"});
  EXPECT_EQ(stale.size(), 7u);
  EXPECT_TRUE(stale.HasServers());
  EXPECT_EQ(stale.Servers(),
            (absl::flat_hash_set<std::string>{"backend/be/server/s1", "backend/be/server/s2"}));
  model::DesiredState before = Desired()
                                   .Server("be", "s1", Spec("10.0.0.1", 80, 1))
                                   .Server("be", "s2", Spec("10.0.0.2"))
                                   .Map("/m", {{"a", "1"}, {"b", "2"}})
                                   .Map("/r", {{"x", "1"}})
                                   .Acl("/a", {"p"});
  model::DesiredState after = before;
  after.backends["be"].servers["s1"].weight = 6;  // s1 replanned: all its items go
  after.maps["/m"].Set("a", "10");                // only entries/a replanned
  after.maps.erase("/r");                         // dropped: forgotten
  stale.ForgetChanged(Taken(before, after));
  EXPECT_THAT(Objects(stale),
              ElementsAre("acl//a patterns/p", "backend/be/server/s2 ", "map//m entries/b"));
  EXPECT_EQ(stale.Sorted()[2].reason, "refused: again");
  // A table replaced: everything about it goes.
  model::DesiredState recreated = before;
  recreated.acls.erase("/a");
  plan::PendingChanges pending = Taken(before, recreated);
  model::DesiredState state = recreated;
  model::AppliedDelta back = model::ApplyDelta(model::DiffStates(state, before), &state);
  pending.Merge(back.summary, state);
  ASSERT_TRUE(pending.acls().at("/a").replace);
  stale.ForgetChanged(pending);
  EXPECT_THAT(Objects(stale), ElementsAre("backend/be/server/s2 ", "map//m entries/b"));
  stale.ForgetObject("backend/be/server/s2");
  EXPECT_FALSE(stale.HasServers());
  EXPECT_THAT(stale.Servers(), IsEmpty());
  EXPECT_EQ(stale.size(), 1u);
  stale.Clear();
  EXPECT_TRUE(stale.empty());
}

TEST(ObservedFromRepliesTest, FixtureReplies) {
  model::DesiredState desired = Desired()
                                    .Server("be_app", "web1", Spec("127.0.0.1"))
                                    .Server("be_gone", "s", Spec("10.0.0.1"))
                                    .Map("/etc/haproxy/hosts.map", {{"a.example.com", "be_app"}})
                                    .Map("/etc/haproxy/none.map", {})
                                    .Acl("/etc/haproxy/blocked.acl", {"10.0.0.0/8"});
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    // In the sorted order of each: backends, then the map listing and maps, then the ACL
    // listing and ACLs.
    std::vector<CommandResult> results = {
        ReadFixture(version, "worker_show_servers_state_be_app.txt"),
        std::string("Can't find backend.\n\n"),
        ReadFixture(version, "worker_show_map_list.txt"),
        ReadFixture(version, "worker_show_map_entries.txt"),
        std::string(kUnknownMap),
        ReadFixture(version, "worker_show_acl_list.txt"),
        std::string("0x55d0c1f2a010 10.0.0.0/8\n0x55d0c1f2a0a0 192.168.0.0/16\n\n"),
    };
    absl::StatusOr<plan::ObservedWorker> observed = ObservedFromReplies(desired, results);
    ASSERT_TRUE(observed.ok()) << observed.status();
    ASSERT_TRUE(observed->backends.at("be_app").present);
    EXPECT_EQ(observed->backends.at("be_app").servers.size(), 4u);
    EXPECT_EQ(observed->backends.at("be_app").servers.at("SRV1").admin_state,
              parse::kAdminFMaint | parse::kAdminCMaint);
    EXPECT_FALSE(observed->backends.at("be_gone").present);
    EXPECT_EQ(observed->maps.at("/etc/haproxy/hosts.map").entries,
              Table({{"a.example.com", "be_app"}, {"b.example.com", "be_other"}}));
    EXPECT_FALSE(observed->maps.at("/etc/haproxy/none.map").present);
    EXPECT_EQ(observed->acls.at("/etc/haproxy/blocked.acl").entries,
              plan::testing::Patterns({"10.0.0.0/8", "192.168.0.0/16"}));

    // A reply that says nothing about its object: the worker is gone.
    results[3] = ReadFixture(version, "err_unknown_pid.txt");
    absl::Status gone = ObservedFromReplies(desired, results).status();
    EXPECT_TRUE(absl::IsNotFound(gone)) << gone;
    EXPECT_THAT(gone.message(), HasSubstr("observe map /etc/haproxy/hosts.map"));
    results[3] = absl::UnavailableError("connection closed");
    gone = ObservedFromReplies(desired, results).status();
    EXPECT_TRUE(absl::IsUnavailable(gone)) << gone;
    EXPECT_THAT(gone.message(), HasSubstr("connection closed"));
    results[0] = ReadFixture(version, "err_unknown_command.txt");
    EXPECT_TRUE(absl::IsFailedPrecondition(ObservedFromReplies(desired, results).status()));
    results.pop_back();
    results.pop_back();
    results.pop_back();
    EXPECT_FALSE(ObservedFromReplies(desired, results).ok());
    // A listing that does not parse says nothing about the tables.
    EXPECT_FALSE(ObservedFromReplies(Desired().Map("/m", {}),
                                     {std::string("garbage\n\n"), std::string("\n")})
                     .ok());
  }
  // Nothing desired: nothing to read.
  absl::StatusOr<plan::ObservedWorker> none = ObservedFromReplies(model::DesiredState{}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, plan::ObservedWorker{});
}

// An empty `show map <name>` reply reads as an empty table; only the listing tells a table the
// worker lacks (a lost or garbled reply: 2.6 once answered nothing for a name ending in "<<")
// from an empty one. Such a table is absent, so the worker is never reported in sync with it.
TEST(ObservedFromRepliesTest, ATableTheListingLacksIsAbsentWhateverItsReplySays) {
  model::DesiredState desired =
      Desired().Map("/etc/haproxy/hosts.map", {}).Map("/tmp/x.map", {}).Acl("/tmp/x.acl", {});
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    std::vector<CommandResult> results = {
        ReadFixture(version, "worker_show_map_list.txt"),  // lists /etc/haproxy/hosts.map only
        std::string("\n"),                                 // hosts.map: empty
        std::string("\n"),                                 // /tmp/x.map: empty too
        ReadFixture(version, "worker_show_acl_list.txt"),  // no /tmp/x.acl
        std::string("\n"),
    };
    absl::StatusOr<plan::ObservedWorker> observed = ObservedFromReplies(desired, results);
    ASSERT_TRUE(observed.ok()) << observed.status();
    EXPECT_TRUE(observed->maps.at("/etc/haproxy/hosts.map").present);
    EXPECT_FALSE(observed->maps.at("/tmp/x.map").present);
    EXPECT_FALSE(observed->acls.at("/tmp/x.acl").present);
    plan::Plan plan = plan::PlanWorker(desired, *observed, {});
    std::vector<std::string> stale;
    for (const plan::StaleItem& item : plan.stale) stale.push_back(item.object + " " + item.reason);
    EXPECT_THAT(stale, ElementsAre("map//tmp/x.map worker has no map /tmp/x.map",
                                   "acl//tmp/x.acl worker has no acl /tmp/x.acl"));
  }
}

TEST(CountSessionsOnStaleServersTest, ShowSessFixtures) {
  StaleSet web1;
  web1.Add({"backend/be_app/server/web1", "address", "10.0.0.1", "", plan::kFrozenReason});
  StaleSet others;
  others.Add({"backend/be_app/server/SRV1", "", "present", "absent", "worker has no server"});
  others.Add({"map//etc/haproxy/hosts.map", "entries/a", "1", "", "refused: …"});
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    for (const char* name : {"old_worker_show_sess.txt", "worker_show_sess_inflight.txt"}) {
      SCOPED_TRACE(name);
      std::string sess = ReadFixture(version, name);
      // One stream on be_app/web1; hawk's own CLI session is not counted.
      absl::StatusOr<int64_t> count = CountSessionsOnStaleServers(sess, web1);
      ASSERT_TRUE(count.ok()) << count.status();
      EXPECT_EQ(*count, 1);
      EXPECT_EQ(*CountSessionsOnStaleServers(sess, others), 0);
      EXPECT_EQ(*CountSessionsOnStaleServers(sess, StaleSet{}), 0);
    }
  }
  EXPECT_EQ(*CountSessionsOnStaleServers("\n", web1), 0);
}

TEST(ObservationCommandsTest, InTheOrderObservedFromRepliesReadsThem) {
  model::DesiredState desired = Desired()
                                    .Server("be_b", "s", Spec("10.0.0.2"))
                                    .Server("be_a", "s", Spec("10.0.0.1"))
                                    .Map("/etc/haproxy/z.map", {})
                                    .Map("/etc/haproxy/a.map", {})
                                    .Acl("/etc/haproxy/blocked.acl", {"10.0.0.0/8"});
  std::vector<std::string> lines;
  for (const cli::Command& command : ObservationCommands(desired, 42)) {
    lines.push_back(cli::MasterLine(command));
  }
  EXPECT_THAT(lines, ElementsAre("@!42 show servers state be_a", "@!42 show servers state be_b",
                                 "@!42 show map", "@!42 show map /etc/haproxy/a.map",
                                 "@!42 show map /etc/haproxy/z.map", "@!42 show acl",
                                 "@!42 show acl /etc/haproxy/blocked.acl"));
  EXPECT_THAT(ObservationCommands(model::DesiredState{}, 42), IsEmpty());
  std::vector<cli::Command> listing = TableListingCommands(7);
  ASSERT_EQ(listing.size(), 2u);
  EXPECT_EQ(cli::MasterLine(listing[0]), "@!7 show map");
  EXPECT_EQ(cli::MasterLine(listing[1]), "@!7 show acl");
}

TEST(TablesReadFromFilesTest, OnlyFilesListedWithTheCountWritten) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    std::string maps = ReadFixture(version, "worker_show_map_list.txt");
    std::string acls = ReadFixture(version, "worker_show_acl_list.txt");
    // Both fixtures list their file with entry_cnt=2.
    EXPECT_THAT(TablesReadFromFiles(maps, /*acl=*/false, {{"/etc/haproxy/hosts.map", 2}}),
                ElementsAre("/etc/haproxy/hosts.map"));
    EXPECT_THAT(TablesReadFromFiles(acls, /*acl=*/true, {{"/etc/haproxy/blocked.acl", 2}}),
                ElementsAre("/etc/haproxy/blocked.acl"));
    // Another count (someone rewrote the file), a file not loaded: the whole table is sent.
    EXPECT_THAT(TablesReadFromFiles(maps, false, {{"/etc/haproxy/hosts.map", 3}}), IsEmpty());
    EXPECT_THAT(TablesReadFromFiles(maps, false, {{"/etc/haproxy/other.map", 2}}), IsEmpty());
    EXPECT_THAT(TablesReadFromFiles(absl::UnavailableError("connection closed"), false,
                                    {{"/etc/haproxy/hosts.map", 2}}),
                IsEmpty());
    EXPECT_THAT(TablesReadFromFiles(maps, false, {}), IsEmpty());
  }
}

TEST(OutcomeOnWorkerTest, AppliedPartialOrWhyNotYet) {
  model::WorkerSync sync;
  sync.in_sync = true;
  StaleSet stale;
  WorkerOutcome applied =
      OutcomeOnWorker(4242, model::WorkerRole::kCurrent, /*reached=*/true, false, sync, stale);
  EXPECT_EQ(applied.pid, 4242);
  EXPECT_EQ(applied.role, model::WorkerRole::kCurrent);
  EXPECT_EQ(applied.result, PushResult::kApplied);
  EXPECT_STREQ(PushResultName(applied.result), "APPLIED");
  EXPECT_TRUE(applied.reason.empty());

  sync.in_sync = false;
  sync.refused.push_back(
      model::Refusal{"backend/be/server/s", "set server be/s state ready", "Proxy is disabled."});
  stale.Add({"backend/be/server/s", "state", "ready", "maint", "refused"});
  WorkerOutcome partial =
      OutcomeOnWorker(7, model::WorkerRole::kLeaving, /*reached=*/true, false, sync, stale);
  EXPECT_EQ(partial.result, PushResult::kPartial);
  EXPECT_STREQ(PushResultName(partial.result), "PARTIAL");
  EXPECT_EQ(partial.refused.size(), 1u);
  EXPECT_EQ(partial.stale.size(), 1u);

  model::WorkerSync fresh;
  WorkerOutcome waiting =
      OutcomeOnWorker(7, model::WorkerRole::kCurrent, /*reached=*/false, false, fresh, stale);
  EXPECT_EQ(waiting.result, PushResult::kPending);
  EXPECT_STREQ(PushResultName(waiting.result), "PENDING");
  EXPECT_EQ(waiting.reason, "not started");
  EXPECT_TRUE(waiting.stale.empty());  // only a finished reconcile reports what stayed stale
  EXPECT_EQ(
      OutcomeOnWorker(7, model::WorkerRole::kCurrent, false, /*busy=*/true, fresh, stale).reason,
      "still applying");
  fresh.error = "connection closed";
  EXPECT_EQ(OutcomeOnWorker(7, model::WorkerRole::kCurrent, false, true, fresh, stale).reason,
            "retrying: connection closed");
}

}  // namespace
}  // namespace hawk::reconcile

// What a reply to an action means (reconcile/reply_verdict.h), over the reply texts HAProxy really
// prints (tests/fixtures/haproxy-*/ where they were recorded; the per-entry replies were not, and
// are quoted from src/map.c, the same on 2.6 and 3.4), and which batches did not reach HAProxy.

#include "agent/reconcile/reply_verdict.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "agent/cli/command.h"
#include "agent/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::reconcile {
namespace {

using parse::testing::kVersions;
using parse::testing::ReadFixture;
using plan::ActionKind;
using plan::testing::Table;
using ::testing::HasSubstr;
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

}  // namespace
}  // namespace hawk::reconcile

// An apply's replies judged (reconcile/apply_replies.h), for servers created and deleted by name:
// a seed that meets "No such server." creates the server in its second phase, `del server`
// refused while connections remain leaves it draining, and a server already gone is what was
// wanted. Reply texts as HAProxy 2.6.12, 3.0.11, 3.2.26 and 3.4.7 print them.

#include "agent/reconcile/apply_replies.h"

#include <string>
#include <utility>
#include <vector>

#include "agent/plan/commands.h"
#include "agent/plan/plan.h"
#include "agent/plan/server_plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::reconcile {
namespace {

using plan::testing::Spec;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr int kPid = 4242;
constexpr char kNoSuchServer[] = "No such server.\n\n";
constexpr char kRegistered[] = "New server registered.\n\n";
constexpr char kInUse[] = "Server still has connections attached to it, cannot remove it.\n";
constexpr char kDeleted[] = "Server deleted.\n";
constexpr char kProxyDisabled[] = "Proxy is disabled.\n\n";

SentCommands Sent(int pid, const plan::Plan& plan) {
  plan::PlannedCommands batch = plan::FirstBatch(pid, plan);
  return SentCommands{std::move(batch.commands), std::move(batch.action_of)};
}

std::vector<std::string> Lines(const SentCommands& sent) {
  std::vector<std::string> lines;
  for (const cli::Command& command : sent.commands) lines.push_back(command.text);
  return lines;
}

TEST(ApplyRepliesTest, ASeedThatMeetsNoSuchServerCreatesItInTheSecondPhase) {
  model::DesiredState desired =
      plan::testing::Desired()
          .Server("be_app", "dyn", Spec("10.0.0.9", 8080, 5, model::ServerState::kReady))
          .Server("be_app", "no_port", model::ServerSpec{"10.0.0.8", {}, {}, {}});
  plan::Plan plan = plan::PlanFullSeed(desired);
  SentCommands sent = Sent(kPid, plan);
  // dyn: address, weight, state; no_port: address.
  ASSERT_THAT(sent.commands, SizeIs(4));
  std::vector<CommandResult> replies(sent.commands.size(), std::string(kNoSuchServer));
  Judged first = JudgeFirstPhase(kPid, plan, sent, replies, /*leaving=*/false, desired);

  // dyn is created once, whatever field met the reply; no_port cannot be: it is reported.
  EXPECT_THAT(Lines(first.next), ElementsAre("add server be_app/dyn 10.0.0.9:8080 weight 5",
                                             "set server be_app/dyn state ready"));
  ASSERT_THAT(first.next_actions, SizeIs(1));
  EXPECT_EQ(first.next_actions[0].kind, plan::ActionKind::kAddServer);
  EXPECT_THAT(first.next.action_of, ElementsAre(plan.actions.size(), plan.actions.size()));
  ASSERT_THAT(first.stale, SizeIs(1));
  EXPECT_EQ(first.stale[0].object, "backend/be_app/server/no_port");
  EXPECT_THAT(first.stale[0].reason, HasSubstr("worker has no server be_app/no_port"));
  EXPECT_FALSE(first.refused_unexpectedly);

  // The second phase, with the creation appended to the plan as the worker does.
  for (plan::Action& action : first.next_actions) plan.actions.push_back(std::move(action));
  Judged second = JudgeSecondPhase(plan, first.next, {std::string(kRegistered), std::string("\n")},
                                   /*leaving=*/false);
  EXPECT_THAT(second.created, ElementsAre(plan::ServerKey{"be_app", "dyn"}));
  EXPECT_THAT(second.refusals, IsEmpty());
  EXPECT_THAT(second.stale, IsEmpty());
}

TEST(ApplyRepliesTest, AServerALeavingWorkerRefusesToEnableIsToBeDeletedAgain) {
  model::DesiredState desired = plan::testing::Desired().Server(
      "be_app", "dyn", Spec("10.0.0.9", 8080, 5, model::ServerState::kReady));
  plan::Plan plan;
  plan::PlanServerCreate("be_app", "dyn", *desired.FindServer("be_app", "dyn"), false, &plan);
  SentCommands sent = Sent(kPid, plan);
  Judged judged =
      JudgeFirstPhase(kPid, plan, sent, {std::string(kRegistered), std::string(kProxyDisabled)},
                      /*leaving=*/true, desired);
  EXPECT_THAT(judged.created, ElementsAre(plan::ServerKey{"be_app", "dyn"}));
  // Held in maintenance there: to be deleted again.
  EXPECT_THAT(judged.undo, ElementsAre(plan::ServerKey{"be_app", "dyn"}));
  EXPECT_EQ(judged.frozen_by, "Proxy is disabled.");
  ASSERT_THAT(judged.stale, SizeIs(1));
  EXPECT_EQ(judged.stale[0].reason, plan::kFrozenReason);
}

TEST(ApplyRepliesTest, DeletingWaitsForConnectionsAndAServerGoneIsDone) {
  model::DesiredState desired;
  plan::Plan plan;
  plan::PlanServerDelete("be_app", "dyn", /*frozen=*/false, &plan);
  SentCommands sent = Sent(kPid, plan);
  ASSERT_THAT(Lines(sent),
              ElementsAre("set server be_app/dyn state maint", "del server be_app/dyn"));
  plan::ServerKey key{"be_app", "dyn"};

  Judged in_use = JudgeFirstPhase(kPid, plan, sent, {std::string("\n"), std::string(kInUse)},
                                  /*leaving=*/false, desired);
  EXPECT_THAT(in_use.in_use, ElementsAre(key));
  EXPECT_THAT(in_use.gone, IsEmpty());
  EXPECT_THAT(in_use.refusals, IsEmpty());
  EXPECT_FALSE(in_use.refused_unexpectedly);

  Judged deleted = JudgeFirstPhase(kPid, plan, sent, {std::string("\n"), std::string(kDeleted)},
                                   /*leaving=*/false, desired);
  EXPECT_THAT(deleted.gone, ElementsAre(key));

  Judged gone = JudgeFirstPhase(
      kPid, plan, sent, {std::string(kNoSuchServer), std::string(kNoSuchServer)}, false, desired);
  EXPECT_THAT(gone.gone, ElementsAre(key));
  EXPECT_THAT(gone.stale, IsEmpty());

  // On a frozen worker only `del server` goes: HAProxy refuses the maintenance step there.
  plan::Plan frozen;
  plan::PlanServerDelete("be_app", "dyn", /*frozen=*/true, &frozen);
  EXPECT_THAT(Lines(Sent(kPid, frozen)), ElementsAre("del server be_app/dyn"));
  Judged frozen_gone = JudgeFirstPhase(kPid, frozen, Sent(kPid, frozen), {std::string(kDeleted)},
                                       /*leaving=*/true, desired);
  EXPECT_THAT(frozen_gone.gone, ElementsAre(key));
  // One in rotation there cannot go: it stays, reported frozen, not as an unexpected refusal.
  Judged frozen_kept = JudgeFirstPhase(
      kPid, frozen, Sent(kPid, frozen),
      {std::string("Only servers in maintenance mode can be deleted.\n")}, true, desired);
  EXPECT_THAT(frozen_kept.gone, IsEmpty());
  EXPECT_FALSE(frozen_kept.refused_unexpectedly);
  ASSERT_THAT(frozen_kept.stale, SizeIs(1));
  EXPECT_EQ(frozen_kept.stale[0].reason, plan::kFrozenReason);

  // Anything else is a refusal, reported.
  Judged refused = JudgeFirstPhase(
      kPid, plan, sent,
      {std::string("\n"),
       std::string("This server cannot be removed at runtime due to other configuration "
                   "elements pointing to it.\n\n")},
      false, desired);
  EXPECT_THAT(refused.gone, IsEmpty());
  ASSERT_THAT(refused.refusals, SizeIs(1));
  EXPECT_EQ(refused.refusals[0].command, "del server be_app/dyn");
}

}  // namespace
}  // namespace hawk::reconcile

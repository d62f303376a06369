// Observing a worker (reconcile/observation.h): the commands, and what HAProxy's recorded replies
// to them say.

#include "agent/reconcile/observation.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/cli/command.h"
#include "agent/cli/wire.h"
#include "agent/parse/servers_state.h"
#include "agent/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::reconcile {
namespace {

using parse::testing::kVersions;
using parse::testing::ReadFixture;
using plan::testing::Desired;
using plan::testing::Spec;
using plan::testing::Table;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// src/map.c's reply to `show map <name>` for a map the worker does not have (no fixture has it).
constexpr char kUnknownMap[] = "Unknown map identifier. Please use #<id> or <file>.\n\n";

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

}  // namespace
}  // namespace hawk::reconcile

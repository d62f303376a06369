#include "agent/plan/server_lines.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::plan {
namespace {

using model::ServerState;
using testing::Desired;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Spec;

constexpr char kSlots[] =
    "global\n"
    "    master-worker\n"
    "backend be\n"
    "    balance roundrobin\n"
    "    server-template s 1-3 192.0.2.1:80 check disabled  # the slots\n"
    "    http-request return status 200 if FALSE\n"
    "backend other\n"
    "    server s1 192.0.2.9:80\n";

TEST(ServerLinesTest, TheManagedSlotsOfATemplateAreWrittenAndTheOthersKeepTheTemplate) {
  model::DesiredState desired =
      Desired()
          .Server("be", "s1", Spec("127.0.0.1", 8080, 7, ServerState::kReady))
          .Server("be", "s3", Spec("::1", 9090, absl::nullopt, ServerState::kMaint))
          .Build();
  ServerLines out = WriteDesiredServers(kSlots, desired);
  EXPECT_TRUE(out.changed);
  EXPECT_EQ(out.templates_expanded, 1);
  EXPECT_EQ(out.servers_written, 2);
  EXPECT_EQ(out.undeclared, 0);
  EXPECT_THAT(out.notes, IsEmpty());
  EXPECT_EQ(out.config,
            "global\n"
            "    master-worker\n"
            "backend be\n"
            "    balance roundrobin\n"
            "    # hawk --write-servers: expanded server-template s 1-3 192.0.2.1:80 check "
            "disabled  # the slots\n"
            "    server s1 127.0.0.1:8080 check weight 7\n"
            "    server s2 192.0.2.1:80 check disabled\n"
            "    server s3 [::1]:9090 check disabled\n"
            "    # hawk --write-servers: end of server-template s\n"
            "    http-request return status 200 if FALSE\n"
            "backend other\n"
            "    server s1 192.0.2.9:80\n");
}

TEST(ServerLinesTest, AWrittenConfigurationReadsBackAsItsTemplate) {
  model::DesiredState first =
      Desired().Server("be", "s2", Spec("127.0.0.2", 81, 3, ServerState::kReady)).Build();
  ServerLines once = WriteDesiredServers(kSlots, first);
  // The same desired state: the same bytes (a reload writes nothing new).
  ServerLines twice = WriteDesiredServers(once.config, first);
  EXPECT_FALSE(twice.changed);
  EXPECT_EQ(twice.config, once.config);
  // Another desired state: as if written over the operator's template.
  model::DesiredState second =
      Desired().Server("be", "s1", Spec("127.0.0.3", 82, absl::nullopt, absl::nullopt)).Build();
  EXPECT_EQ(WriteDesiredServers(once.config, second).config,
            WriteDesiredServers(kSlots, second).config);
  // No managed slot left: the operator's configuration, byte for byte.
  model::DesiredState none = Desired().Server("other", "s9", Spec("127.0.0.1")).Build();
  ServerLines back = WriteDesiredServers(once.config, none);
  EXPECT_EQ(back.config, kSlots);
  EXPECT_EQ(back.undeclared, 1);
}

TEST(ServerLinesTest, AServerLineKeepsEveryOtherWordAndItsComment) {
  constexpr char kConfig[] =
      "backend be\n"
      "\tserver web1 10.0.0.1:80 cookie disabled weight 10 check inter 2s disabled # keep\n"
      "\tserver web2 10.0.0.2 maxconn 5\n"
      "\tserver web3 \"10.0.0.3:80\" enabled\n";
  model::DesiredState desired =
      Desired()
          .Server("be", "web1", Spec("10.0.0.9", 8080, 20, ServerState::kReady))
          .Server("be", "web2", Spec("10.0.0.8", absl::nullopt, absl::nullopt, ServerState::kMaint))
          .Server("be", "web3", Spec("10.0.0.7", absl::nullopt, 0, absl::nullopt))
          .Build();
  ServerLines out = WriteDesiredServers(kConfig, desired);
  EXPECT_EQ(out.config,
            "backend be\n"
            "\tserver web1 10.0.0.9:8080 cookie disabled weight 20 check inter 2s # keep\n"
            "\tserver web2 10.0.0.8 maxconn 5 disabled\n"
            "\tserver web3 10.0.0.7:80 enabled weight 0\n");
  EXPECT_EQ(out.servers_written, 3);
  EXPECT_FALSE(out.changed == false);
}

TEST(ServerLinesTest, WhatTheConfigurationCannotCarryIsNamedAndLeftAsConfigured) {
  constexpr char kConfig[] =
      "listen app\n"
      "    bind :80\n"
      "    server dns app.internal:80 resolvers dns\n"
      "    server sock /run/app.sock\n"
      "    server ip 10.0.0.1:80\n"
      "    server-template t 1-2 app.internal:80 resolvers dns\n";
  model::DesiredState desired =
      Desired()
          .Server("app", "dns", Spec("10.0.0.5", 80))
          .Server("app", "sock", Spec("10.0.0.6", 80))
          .Server("app", "ip", Spec("web.internal", 81, absl::nullopt, ServerState::kDrain))
          .Server("app", "t1", Spec("10.0.0.7", 80))
          .Server("app", "gone", Spec("gone.internal", 80))
          .Build();
  ServerLines out = WriteDesiredServers(kConfig, desired);
  // The port of `ip` is written; its hostname is not.
  EXPECT_THAT(out.config, HasSubstr("    server ip 10.0.0.1:81\n"));
  EXPECT_THAT(out.config, HasSubstr("    server dns app.internal:80 resolvers dns\n"));
  EXPECT_THAT(out.config, HasSubstr("    server sock /run/app.sock\n"));
  EXPECT_THAT(out.config, HasSubstr("    server-template t 1-2 app.internal:80 resolvers dns\n"));
  EXPECT_EQ(out.undeclared, 1);  // gone: a hostname, which `add server` cannot create either
  EXPECT_EQ(out.runtime_written, 0);
  ASSERT_EQ(out.notes.size(), 5u);
  EXPECT_THAT(out.notes[0], HasSubstr("app/dns: not written: its configured address "
                                      "\"app.internal:80\" is not an IP literal"));
  EXPECT_THAT(out.notes[1], HasSubstr("app/sock: not written"));
  EXPECT_THAT(out.notes[2], HasSubstr("app/ip: not written: its address is the hostname "
                                      "\"web.internal\""));
  EXPECT_THAT(out.notes[3], HasSubstr("app/ip: not written: DRAIN has no configuration keyword"));
  EXPECT_THAT(out.notes[4], HasSubstr("app/t1-2: not written: the template's address"));
}

TEST(ServerLinesTest, ServersASectionDoesNotDeclareAreWrittenInHawksBlockAndReadBack) {
  constexpr char kConfig[] =
      "backend be_app\n"
      "    balance roundrobin\n"
      "    server web1 10.0.0.1:80\n"
      "\n"
      "backend be_other\n"
      "    server o1 10.0.0.9:80";  // no newline at the end of the file
  model::DesiredState desired =
      Desired()
          .Server("be_app", "web1", Spec("10.0.0.1", 80))
          .Server("be_app", "dyn_b", Spec("2001:db8::2", 8080, 7, ServerState::kMaint))
          .Server("be_app", "dyn_a", Spec("10.0.0.2", 8080))
          .Server("be_app", "by_name", Spec("app.internal", 80))  // not creatable: not written
          .Server("be_other", "dyn_c", Spec("10.0.0.3", 80, absl::nullopt, ServerState::kReady))
          .Build();
  ServerLines out = WriteDesiredServers(kConfig, desired);
  EXPECT_EQ(out.config,
            "backend be_app\n"
            "    balance roundrobin\n"
            "    server web1 10.0.0.1:80\n"
            "\n"
            "    # hawk --write-servers: servers created at runtime\n"
            "    server dyn_a 10.0.0.2:8080\n"
            "    server dyn_b [2001:db8::2]:8080 weight 7 disabled\n"
            "    # hawk --write-servers: end of servers created at runtime\n"
            "backend be_other\n"
            "    server o1 10.0.0.9:80\n"
            "    # hawk --write-servers: servers created at runtime\n"
            "    server dyn_c 10.0.0.3:80\n"
            "    # hawk --write-servers: end of servers created at runtime\n");
  EXPECT_EQ(out.runtime_written, 3);
  EXPECT_EQ(out.undeclared, 1);
  EXPECT_THAT(ServersInHawkBlocks(out.config),
              ElementsAre(std::pair<std::string, std::string>{"be_app", "dyn_a"},
                          std::pair<std::string, std::string>{"be_app", "dyn_b"},
                          std::pair<std::string, std::string>{"be_other", "dyn_c"}));

  // Written again from the same state: the same bytes.
  ServerLines again = WriteDesiredServers(out.config, desired);
  EXPECT_EQ(again.config, out.config);
  EXPECT_FALSE(again.changed);

  // A server that left the desired state leaves the block; an empty block goes.
  model::DesiredState fewer = Desired()
                                  .Server("be_app", "dyn_a", Spec("10.0.0.2", 8080))
                                  .Server("be_other", "o1", Spec("10.0.0.9", 80))
                                  .Build();
  ServerLines shrunk = WriteDesiredServers(out.config, fewer);
  EXPECT_EQ(shrunk.config,
            "backend be_app\n"
            "    balance roundrobin\n"
            "    server web1 10.0.0.1:80\n"
            "\n"
            "    # hawk --write-servers: servers created at runtime\n"
            "    server dyn_a 10.0.0.2:8080\n"
            "    # hawk --write-servers: end of servers created at runtime\n"
            "backend be_other\n"
            "    server o1 10.0.0.9:80\n");  // the newline the block brought stays
  EXPECT_THAT(ServersInHawkBlocks(shrunk.config),
              ElementsAre(std::pair<std::string, std::string>{"be_app", "dyn_a"}));
}

TEST(ServerLinesTest, NothingManagedLeavesTheBytesAsTheyWere) {
  constexpr char kConfig[] = "backend be\n  server a1 1.2.3.4:80\n  server-template s 5 1.2.3.4";
  ServerLines out = WriteDesiredServers(kConfig, Desired().Build());
  EXPECT_FALSE(out.changed);
  EXPECT_EQ(out.config, kConfig);
  // A template on the last line, without a newline, expands the same way.
  ServerLines slots = WriteDesiredServers(
      kConfig,
      Desired().Server("be", "s2", Spec("10.0.0.1", 80, absl::nullopt, absl::nullopt)).Build());
  EXPECT_EQ(slots.config,
            "backend be\n  server a1 1.2.3.4:80\n"
            "  # hawk --write-servers: expanded server-template s 5 1.2.3.4\n"
            "  server s1 1.2.3.4\n  server s2 10.0.0.1:80\n  server s3 1.2.3.4\n"
            "  server s4 1.2.3.4\n  server s5 1.2.3.4\n"
            "  # hawk --write-servers: end of server-template s");
  EXPECT_EQ(WriteDesiredServers(slots.config, Desired().Build()).config, kConfig);
}

TEST(ServerLinesTest, AMarkerWithoutItsEndIsACommentLikeAnyOther) {
  std::string config = absl::StrCat("backend be\n    ", kTemplateBeginMarker,
                                    "server-template s 1-2 1.2.3.4:80\n    server s1 1.2.3.4:80\n");
  ServerLines out = WriteDesiredServers(
      config,
      Desired().Server("be", "s1", Spec("10.0.0.1", 80, absl::nullopt, absl::nullopt)).Build());
  EXPECT_EQ(out.config,
            absl::StrCat("backend be\n    ", kTemplateBeginMarker,
                         "server-template s 1-2 1.2.3.4:80\n    server s1 10.0.0.1:80\n"));
}

TEST(ServerLinesTest, TenThousandSlotsAreWrittenInOnePass) {
  Desired desired;
  for (int i = 1; i <= 10000; ++i) {
    desired.Server("be", absl::StrCat("s", i),
                   Spec("127.0.0.1", 8000 + i % 1000, absl::nullopt, ServerState::kReady));
  }
  ServerLines out = WriteDesiredServers(
      "backend be\n    server-template s 1-10000 192.0.2.1:80 disabled\n", desired.Build());
  EXPECT_EQ(out.servers_written, 10000);
  EXPECT_THAT(out.config, HasSubstr("    server s10000 127.0.0.1:8000\n"));
  // Only the marker that keeps the template says `disabled`.
  EXPECT_EQ(out.config.find(" disabled"), out.config.rfind(" disabled"));
}

}  // namespace
}  // namespace hawk::plan

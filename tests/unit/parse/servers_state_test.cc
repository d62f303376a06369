#include "agent/parse/servers_state.h"

#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::parse {
namespace {

using testing::Endings;
using ::testing::HasSubstr;
using testing::kVersions;
using testing::ReadFixture;

auto Typed(const ServerStateRow& r) {
  return std::tie(r.backend_id, r.backend, r.server_id, r.server, r.address, r.op_state,
                  r.admin_state, r.user_weight, r.initial_weight, r.seconds_since_last_change,
                  r.check_status, r.check_result, r.check_health, r.check_state, r.agent_state,
                  r.backend_forced_id, r.server_forced_id, r.fqdn, r.port, r.srv_record, r.use_ssl,
                  r.check_port, r.check_addr, r.agent_addr, r.agent_port);
}

constexpr absl::string_view kHeader =
    "# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
    "srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health "
    "srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord "
    "srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port";

TEST(ServersStateTest, ColumnsMatchTheHeaderOfEveryVersion) {
  EXPECT_EQ(absl::StrCat("# ", absl::StrJoin(kServersStateColumns, " ")), kHeader);
  for (absl::string_view version : kVersions) {
    std::string reply = ReadFixture(version, "worker_show_servers_state_all.txt");
    EXPECT_THAT(reply, HasSubstr(absl::StrCat("\n", kHeader, "\n"))) << version;
  }
}

// The ids HAProxy gave be_app and be_other (2.6 and 3.0 number them one lower than 3.2 and 3.4),
// and o1's port (a free port picked when the fixtures were recorded).
struct Ids {
  int be_app;
  int be_other;
  int o1_port;
};
Ids IdsOf(absl::string_view version) {
  if (version == "2.6") return {2, 3, 35385};
  if (version == "3.0") return {2, 3, 39715};
  if (version == "3.2") return {3, 4, 37281};
  return {3, 4, 33043};
}

TEST(ServersStateTest, AllBackends) {
  for (absl::string_view version : kVersions) {
    const Ids ids = IdsOf(version);
    for (const std::string& reply :
         Endings(ReadFixture(version, "worker_show_servers_state_all.txt"))) {
      SCOPED_TRACE(absl::StrCat(version, " ending ", reply.size()));
      absl::StatusOr<std::vector<ServerStateRow>> rows = ParseServersState(reply);
      ASSERT_TRUE(rows.ok()) << rows.status();
      ASSERT_EQ(rows->size(), 5u);
      // server-template SRV 3 192.0.2.1:80 disabled → forced maintenance, configured-maint bit.
      const ServerStateRow& srv1 = (*rows)[0];
      EXPECT_EQ(srv1.backend_id, ids.be_app);
      EXPECT_EQ(srv1.backend, "be_app");
      EXPECT_EQ(srv1.server_id, 1);
      EXPECT_EQ(srv1.server, "SRV1");
      EXPECT_EQ(srv1.address, "192.0.2.1");
      EXPECT_EQ(srv1.op_state, kOpStopped);
      EXPECT_EQ(srv1.admin_state, kAdminFMaint | kAdminCMaint);
      EXPECT_TRUE(srv1.in_maintenance());
      EXPECT_FALSE(srv1.draining());
      EXPECT_EQ(srv1.user_weight, 1);
      EXPECT_EQ(srv1.initial_weight, 1);
      EXPECT_EQ(srv1.check_status, 1);
      EXPECT_EQ(srv1.check_state, kCheckPaused);
      EXPECT_EQ(srv1.fqdn, "");
      EXPECT_EQ(srv1.port, 80);
      EXPECT_EQ(srv1.srv_record, "");
      EXPECT_EQ(srv1.check_addr, "");
      EXPECT_EQ(srv1.agent_addr, "");
      EXPECT_EQ(srv1.columns.size(), kServersStateColumnCount);
      EXPECT_EQ(srv1.columns.at("srv_fqdn"), "-");
      EXPECT_EQ(srv1.columns.at("srv_admin_state"), "5");

      const ServerStateRow& o1 = (*rows)[4];
      EXPECT_EQ(o1.backend_id, ids.be_other);
      EXPECT_EQ(o1.backend, "be_other");
      EXPECT_EQ(o1.server, "o1");
      EXPECT_EQ(o1.address, "127.0.0.1");
      EXPECT_EQ(o1.op_state, kOpRunning);
      EXPECT_EQ(o1.admin_state, 0);
      EXPECT_FALSE(o1.in_maintenance());
      EXPECT_EQ(o1.user_weight, 50);
      EXPECT_EQ(o1.initial_weight, 50);
      EXPECT_EQ(o1.port, ids.o1_port);
      EXPECT_EQ(o1.check_state, 0);
      // A server without checks: 2.6, 3.0 and 3.2 print check_health 2, 3.4 prints 0.
      EXPECT_EQ(o1.check_health, version == "3.4" ? 0 : 2);
    }
  }
}

TEST(ServersStateTest, OneBackendAndLeavingWorker) {
  for (absl::string_view version : kVersions) {
    SCOPED_TRACE(version);
    absl::StatusOr<std::vector<ServerStateRow>> be_app =
        ParseServersState(ReadFixture(version, "worker_show_servers_state_be_app.txt"));
    ASSERT_TRUE(be_app.ok()) << be_app.status();
    ASSERT_EQ(be_app->size(), 4u);
    for (const ServerStateRow& row : *be_app) EXPECT_EQ(row.backend, "be_app");
    EXPECT_EQ((*be_app)[3].server, "web1");

    absl::StatusOr<std::vector<ServerStateRow>> old =
        ParseServersState(ReadFixture(version, "old_worker_show_servers_state.txt"));
    ASSERT_TRUE(old.ok()) << old.status();
    ASSERT_EQ(old->size(), 5u);
    // SRV1 was set to 127.0.0.1 and weight 10, `state ready` cleared FMAINT; CMAINT stays and
    // does not mean maintenance.
    EXPECT_EQ((*old)[0].address, "127.0.0.1");
    EXPECT_EQ((*old)[0].admin_state, kAdminCMaint);
    EXPECT_FALSE((*old)[0].in_maintenance());
    EXPECT_EQ((*old)[0].user_weight, 10);
    EXPECT_EQ((*old)[0].op_state, kOpRunning);
    // `add server be_app/fresh` on the leaving worker: starts in forced maintenance.
    EXPECT_EQ((*old)[4].server, "fresh");
    EXPECT_EQ((*old)[4].admin_state, kAdminFMaint);
    EXPECT_TRUE((*old)[4].in_maintenance());
    EXPECT_EQ((*old)[4].server_id, 5);
  }
}

TEST(ServersStateTest, RoundTripsThroughTheStateFile) {
  for (absl::string_view version : kVersions) {
    for (const char* file :
         {"worker_show_servers_state_all.txt", "worker_show_servers_state_be_app.txt",
          "old_worker_show_servers_state.txt"}) {
      SCOPED_TRACE(absl::StrCat(version, "/", file));
      std::string reply = ReadFixture(version, file);
      absl::StatusOr<std::vector<ServerStateRow>> rows = ParseServersState(reply);
      ASSERT_TRUE(rows.ok()) << rows.status();
      std::string state_file = FormatServersStateFile(*rows);
      // HAProxy's own text, minus the CLI's blank-line terminator.
      EXPECT_EQ(state_file, reply.substr(0, reply.size() - 1));
      absl::StatusOr<std::vector<ServerStateRow>> again = ParseServersState(state_file);
      ASSERT_TRUE(again.ok()) << again.status();
      ASSERT_EQ(again->size(), rows->size());
      for (size_t i = 0; i < rows->size(); ++i) {
        EXPECT_TRUE(Typed((*again)[i]) == Typed((*rows)[i])) << i;
        EXPECT_EQ((*again)[i].columns, (*rows)[i].columns) << i;
      }
    }
  }
}

TEST(ServersStateTest, WriterUsesTheTypedFields) {
  ServerStateRow row;
  row.backend_id = 7;
  row.backend = "be";
  row.server_id = 2;
  row.server = "s";
  row.address = "10.0.0.1";
  row.op_state = kOpRunning;
  row.admin_state = kAdminFDrain;
  row.user_weight = 30;
  row.initial_weight = 10;
  row.seconds_since_last_change = 5000000000;
  row.fqdn = "web.example.com";
  row.port = 8080;
  row.columns["srv_port"] = "1";  // stale raw text: the typed field wins
  std::string text = FormatServersStateFile({row});
  EXPECT_EQ(text, absl::StrCat("1\n", kHeader,
                               "\n7 be 2 s 10.0.0.1 2 8 30 10 5000000000 0 0 0 0 0 0 0 "
                               "web.example.com 8080 - 0 0 - - 0\n"));
  absl::StatusOr<std::vector<ServerStateRow>> back = ParseServersState(text);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 1u);
  row.columns = (*back)[0].columns;
  EXPECT_TRUE(Typed((*back)[0]) == Typed(row));
  EXPECT_TRUE((*back)[0].draining());
  EXPECT_EQ(FormatServersStateFile({}), absl::StrCat("1\n", kHeader, "\n"));
}

TEST(ServersStateTest, ExtraAndReorderedColumns) {
  absl::StatusOr<std::vector<ServerStateRow>> rows = ParseServersState(
      "1\n"
      "# srv_name be_id be_name srv_id srv_addr srv_op_state srv_admin_state srv_uweight "
      "srv_iweight srv_future_thing\n"
      "s1 3 be 1 10.0.0.1 2 0 5 6 whatever\n"
      "# a comment line\n"
      "s2 3 be 2 - 0 1 1 1 x\n");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].server, "s1");
  EXPECT_EQ((*rows)[0].backend_id, 3);
  EXPECT_EQ((*rows)[0].user_weight, 5);
  EXPECT_EQ((*rows)[0].initial_weight, 6);
  EXPECT_EQ((*rows)[0].port, 0);  // absent column: default
  EXPECT_EQ((*rows)[0].columns.at("srv_future_thing"), "whatever");
  EXPECT_EQ((*rows)[1].address, "");  // "-"
}

TEST(ServersStateTest, NoServers) {
  for (const std::string& reply : Endings(absl::StrCat("1\n", kHeader, "\n\n"))) {
    absl::StatusOr<std::vector<ServerStateRow>> rows = ParseServersState(reply);
    ASSERT_TRUE(rows.ok()) << rows.status();
    EXPECT_TRUE(rows->empty());
  }
}

TEST(ServersStateTest, NameDashIsKept) {
  absl::StatusOr<std::vector<ServerStateRow>> rows =
      ParseServersState(absl::StrCat("1\n", kHeader,
                                     "\n3 - 1 - - 0 0 1 1 0 0 0 0 0 0 0 0 - 0 - 0 "
                                     "0 - - 0\n"));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ((*rows)[0].backend, "-");
  EXPECT_EQ((*rows)[0].server, "-");
  EXPECT_EQ((*rows)[0].address, "");
}

TEST(ServersStateTest, Errors) {
  const std::string good_row = "3 be_app 1 SRV1 192.0.2.1 0 5 1 1 0 1 0 0 8 0 0 0 - 80 - 0 0 - - 0";
  const std::string head = absl::StrCat("1\n", kHeader, "\n");
  struct Bad {
    std::string reply;
    std::string message;
  };
  const std::vector<Bad> cases = {
      {"", "empty reply"},
      {"\n\n", "empty reply"},
      {"1\n", "no \"# be_id"},
      {"2\n# be_id be_name\n", "unsupported format version"},
      {"Can't find backend.\n\n", "line 1 \"Can't find backend.\": expected the format version"},
      {"No such backend.\n\n", "expected the format version"},
      {"1\nbe_id be_name\n", "expected the \"# be_id"},
      {"1\n#\n", "expected the \"# be_id"},
      {"1\n# srv_id srv_name\n", "required column be_id"},
      {"1\n# be_id be_id srv_id\n", "appears twice"},
      {"1\n# be_id be_name srv_id srv_name srv_addr\n", "required column srv_op_state"},
      {head + "3 be_app 1 SRV1\n", "expected 25 fields, got 4"},
      {head + good_row + " extra\n", "expected 25 fields, got 26"},
      {head + absl::StrReplaceAll(good_row, {{" 80 ", " x80 "}}) + "\n", "srv_port"},
      {head + absl::StrReplaceAll(good_row, {{" 80 ", " 99999999999 "}}) + "\n", "srv_port"},
      {head + absl::StrReplaceAll(good_row, {{"3 be_app", "0x3 be_app"}}) + "\n", "be_id"},
      {head + good_row + "\n\n" + good_row + "\n", "empty line"},
      {absl::StrCat("1\n# ", std::string(300 * 2, 'a')), ""},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.reply);
    absl::StatusOr<std::vector<ServerStateRow>> rows = ParseServersState(bad.reply);
    ASSERT_FALSE(rows.ok());
    EXPECT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(rows.status().message(), HasSubstr(bad.message));
    EXPECT_THAT(rows.status().message(), HasSubstr("show servers state"));
  }
}

TEST(ServersStateTest, TooManyColumns) {
  std::string header = "1\n# be_id";
  for (int i = 0; i < 300; ++i) absl::StrAppend(&header, " c", i);
  absl::StatusOr<std::vector<ServerStateRow>> rows = ParseServersState(header);
  ASSERT_FALSE(rows.ok());
  EXPECT_THAT(rows.status().message(), HasSubstr("over the limit"));
}

TEST(ServersStateTest, PipelinedRepliesAreNotOneReply) {
  for (absl::string_view version : kVersions) {
    absl::StatusOr<std::vector<ServerStateRow>> rows =
        ParseServersState(ReadFixture(version, "pipelined_two_commands.txt"));
    ASSERT_FALSE(rows.ok()) << version;
    EXPECT_THAT(rows.status().message(), HasSubstr("empty line"));
  }
}

}  // namespace
}  // namespace hawk::parse

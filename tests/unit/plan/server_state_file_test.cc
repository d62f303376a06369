#include "agent/plan/server_state_file.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/parse/servers_state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"
#include "tests/unit/plan/desired_builder.h"

namespace hawk::plan {
namespace {

using model::ServerState;
using parse::kAdminCMaint;
using parse::kAdminFDrain;
using parse::kAdminFMaint;
using parse::kAdminIDrain;
using parse::kAdminIMaint;
using parse::ServerStateRow;
using parse::testing::ReadFixture;
using testing::Desired;
using ::testing::HasSubstr;
using testing::Spec;
using ::testing::StartsWith;

// Versions whose recorded `show servers state` (no argument) hawk seeds a reload from.
constexpr const char* kFixtureVersions[] = {"2.6", "3.0", "3.4"};

std::vector<ServerStateRow> FixtureRows(absl::string_view version) {
  absl::StatusOr<std::vector<ServerStateRow>> rows =
      parse::ParseServersState(ReadFixture(version, "worker_show_servers_state_all.txt"));
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? *rows : std::vector<ServerStateRow>{};
}

// A row's 25 standard columns as the server-state file writes them: equal lines, equal rows.
std::string Line(const ServerStateRow& row) {
  std::vector<std::string> lines = absl::StrSplit(parse::FormatServersStateFile({row}), '\n');
  return lines.size() >= 3 ? lines[2] : "";
}

std::vector<std::string> Lines(const std::vector<ServerStateRow>& rows) {
  std::vector<std::string> lines;
  for (const ServerStateRow& row : rows) lines.push_back(Line(row));
  return lines;
}

model::DesiredState OneServer(const std::string& backend, const std::string& server,
                              model::ServerSpec spec) {
  return Desired().Server(backend, server, std::move(spec));
}

struct Case {
  const char* name;
  const char* backend;
  const char* server;
  // The srv_admin_state the row holds before (-1: as recorded).
  int admin_before;
  model::ServerSpec want;
  // Applied to the row before the change to give the expected row.
  std::function<void(ServerStateRow*)> expect;
};

// be_app/web1 is 127.0.0.1:port, admin 0, weight 1; be_app/SRV1 is 192.0.2.1:80 with admin 5
// (FMAINT | CMAINT: `disabled` in the configuration), weight 1.
std::vector<Case> Cases() {
  return {
      {"IPv4 address into srv_addr", "be_app", "web1", -1, Spec("10.1.2.3"),
       [](ServerStateRow* r) { r->address = "10.1.2.3"; }},
      {"IPv6 address into srv_addr", "be_app", "web1", -1, Spec("2001:db8::5"),
       [](ServerStateRow* r) { r->address = "2001:db8::5"; }},
      {"hostname into srv_fqdn, srv_addr untouched", "be_app", "web1", -1,
       Spec("api.internal.example"), [](ServerStateRow* r) { r->fqdn = "api.internal.example"; }},
      {"same address: nothing changes", "be_app", "web1", -1, Spec("127.0.0.1"),
       [](ServerStateRow*) {}},
      {"port into srv_port", "be_app", "web1", -1, Spec("127.0.0.1", 9090),
       [](ServerStateRow* r) { r->port = 9090; }},
      {"weight into srv_uweight, srv_iweight kept", "be_app", "web1", -1,
       Spec("127.0.0.1", absl::nullopt, 77), [](ServerStateRow* r) { r->user_weight = 77; }},
      {"weight 0 is a weight", "be_other", "o1", -1, Spec("127.0.0.1", absl::nullopt, 0),
       [](ServerStateRow* r) { r->user_weight = 0; }},
      {"every field at once", "be_app", "SRV2", -1,
       Spec("10.9.9.9", 8443, 256, ServerState::kReady),
       [](ServerStateRow* r) {
         r->address = "10.9.9.9";
         r->port = 8443;
         r->user_weight = 256;
         r->admin_state = kAdminCMaint;
       }},
      {"MAINT sets FMAINT", "be_app", "web1", 0,
       Spec("127.0.0.1", absl::nullopt, absl::nullopt, ServerState::kMaint),
       [](ServerStateRow* r) { r->admin_state = kAdminFMaint; }},
      {"MAINT clears FDRAIN", "be_app", "web1", kAdminFDrain,
       Spec("127.0.0.1", absl::nullopt, absl::nullopt, ServerState::kMaint),
       [](ServerStateRow* r) { r->admin_state = kAdminFMaint; }},
      {"MAINT on a server already in FMAINT", "be_app", "SRV1", -1,
       Spec("192.0.2.1", absl::nullopt, absl::nullopt, ServerState::kMaint),
       [](ServerStateRow* r) { r->admin_state = kAdminFMaint | kAdminCMaint; }},
      {"DRAIN sets FDRAIN", "be_app", "web1", 0,
       Spec("127.0.0.1", absl::nullopt, absl::nullopt, ServerState::kDrain),
       [](ServerStateRow* r) { r->admin_state = kAdminFDrain; }},
      {"DRAIN clears FMAINT and keeps CMAINT", "be_app", "SRV1", -1,
       Spec("192.0.2.1", absl::nullopt, absl::nullopt, ServerState::kDrain),
       [](ServerStateRow* r) { r->admin_state = kAdminFDrain | kAdminCMaint; }},
      {"READY clears FMAINT and keeps CMAINT", "be_app", "SRV1", -1,
       Spec("192.0.2.1", absl::nullopt, absl::nullopt, ServerState::kReady),
       [](ServerStateRow* r) { r->admin_state = kAdminCMaint; }},
      {"READY clears both forced bits, inherited bits kept", "be_app", "web1",
       kAdminFMaint | kAdminIMaint | kAdminFDrain | kAdminIDrain | 0x40,
       Spec("127.0.0.1", absl::nullopt, absl::nullopt, ServerState::kReady),
       [](ServerStateRow* r) { r->admin_state = kAdminIMaint | kAdminIDrain | 0x40; }},
      {"no state: admin bits untouched", "be_app", "web1", kAdminFMaint | kAdminFDrain,
       Spec("127.0.0.1", 22001), [](ServerStateRow* r) { r->port = 22001; }},
  };
}

TEST(ServerStateFileTest, AppliesOneDesiredServer) {
  for (const char* version : kFixtureVersions) {
    for (const Case& c : Cases()) {
      SCOPED_TRACE(absl::StrCat(version, ": ", c.name));
      std::vector<ServerStateRow> rows = FixtureRows(version);
      ASSERT_EQ(rows.size(), 5u);
      size_t target = rows.size();
      for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].backend == c.backend && rows[i].server == c.server) target = i;
      }
      ASSERT_LT(target, rows.size());
      if (c.admin_before >= 0) rows[target].admin_state = c.admin_before;
      std::vector<ServerStateRow> expected = rows;
      c.expect(&expected[target]);

      std::vector<ServerStateRow> applied =
          ApplyDesiredToServerRows(rows, OneServer(c.backend, c.server, c.want));
      EXPECT_EQ(Lines(applied), Lines(expected));
      const ServerStateRow& got = applied[target];
      const ServerStateRow& want = expected[target];
      EXPECT_EQ(got.address, want.address);
      EXPECT_EQ(got.fqdn, want.fqdn);
      EXPECT_EQ(got.port, want.port);
      EXPECT_EQ(got.user_weight, want.user_weight);
      EXPECT_EQ(got.initial_weight, rows[target].initial_weight);
      EXPECT_EQ(got.admin_state, want.admin_state);
      EXPECT_EQ(got.op_state, rows[target].op_state);
    }
  }
}

TEST(ServerStateFileTest, UnmanagedServersAreUntouched) {
  for (const char* version : kFixtureVersions) {
    SCOPED_TRACE(version);
    std::vector<ServerStateRow> rows = FixtureRows(version);
    model::DesiredState desired =
        Desired()
            // Same server name as be_other/o1, but in another backend.
            .Server("be_app", "o1", Spec("10.0.0.1", 1, 1, ServerState::kMaint))
            // Not in the worker at all.
            .Server("be_app", "SRV_new", Spec("10.0.0.2", 2, 2, ServerState::kDrain))
            // A backend the worker does not have.
            .Server("be_missing", "web1", Spec("10.0.0.3", 3, 3));
    EXPECT_EQ(Lines(ApplyDesiredToServerRows(rows, desired)), Lines(rows));
    EXPECT_EQ(Lines(ApplyDesiredToServerRows(rows, model::DesiredState{})), Lines(rows));
    EXPECT_TRUE(ApplyDesiredToServerRows({}, desired).empty());
  }
}

// Several servers in several backends, the way a controller pushes a whole state.
model::DesiredState WholeState() {
  return Desired()
      .Server("be_app", "SRV1", Spec("10.0.0.11", 8081, 10, ServerState::kReady))
      .Server("be_app", "SRV2", Spec("srv2.example.com", 8082, absl::nullopt, ServerState::kDrain))
      .Server("be_app", "SRV3",
              Spec("192.0.2.1", absl::nullopt, absl::nullopt, ServerState::kMaint))
      .Server("be_app", "web1", Spec("::1", 22001, 100, ServerState::kReady))
      .Server("be_other", "o1", Spec("127.0.0.2", absl::nullopt, 5));
}

TEST(ServerStateFileTest, WholeStateOverTheFixture) {
  for (const char* version : kFixtureVersions) {
    SCOPED_TRACE(version);
    std::vector<ServerStateRow> applied =
        ApplyDesiredToServerRows(FixtureRows(version), WholeState());
    ASSERT_EQ(applied.size(), 5u);
    // SRV1: address, port, weight; READY leaves CMAINT (5 → 4).
    EXPECT_EQ(applied[0].server, "SRV1");
    EXPECT_EQ(applied[0].address, "10.0.0.11");
    EXPECT_EQ(applied[0].port, 8081);
    EXPECT_EQ(applied[0].user_weight, 10);
    EXPECT_EQ(applied[0].admin_state, kAdminCMaint);
    // SRV2: a hostname goes to srv_fqdn; DRAIN: 5 → CMAINT | FDRAIN.
    EXPECT_EQ(applied[1].server, "SRV2");
    EXPECT_EQ(applied[1].address, "192.0.2.1");
    EXPECT_EQ(applied[1].fqdn, "srv2.example.com");
    EXPECT_EQ(applied[1].port, 8082);
    EXPECT_EQ(applied[1].user_weight, 1);
    EXPECT_EQ(applied[1].admin_state, kAdminCMaint | kAdminFDrain);
    EXPECT_TRUE(applied[1].draining());
    // SRV3: MAINT over FMAINT | CMAINT.
    EXPECT_EQ(applied[2].admin_state, kAdminFMaint | kAdminCMaint);
    EXPECT_TRUE(applied[2].in_maintenance());
    EXPECT_EQ(applied[2].port, 80);
    // web1: IPv6 literal.
    EXPECT_EQ(applied[3].address, "::1");
    EXPECT_EQ(applied[3].fqdn, "");
    EXPECT_EQ(applied[3].user_weight, 100);
    EXPECT_EQ(applied[3].admin_state, 0);
    // be_other/o1: weight only; srv_iweight stays the configuration's.
    EXPECT_EQ(applied[4].address, "127.0.0.2");
    EXPECT_EQ(applied[4].user_weight, 5);
    EXPECT_EQ(applied[4].initial_weight, 50);
  }
}

TEST(ServerStateFileTest, FileReparsesToTheSameRows) {
  std::string header = absl::StrCat("# ", absl::StrJoin(parse::kServersStateColumns, " "));
  for (const char* version : kFixtureVersions) {
    SCOPED_TRACE(version);
    std::vector<ServerStateRow> rows = FixtureRows(version);
    std::string file = DesiredServersStateFile(rows, WholeState());
    EXPECT_THAT(file, StartsWith("1\n# be_id "));
    std::vector<std::string> lines = absl::StrSplit(file, '\n');
    ASSERT_EQ(lines.size(), 2u + rows.size() + 1u);  // version, header, rows, "" after the last
    EXPECT_EQ(lines[1], header);
    EXPECT_EQ(lines.back(), "");
    EXPECT_EQ(file, parse::FormatServersStateFile(ApplyDesiredToServerRows(rows, WholeState())));

    absl::StatusOr<std::vector<ServerStateRow>> reparsed = parse::ParseServersState(file);
    ASSERT_TRUE(reparsed.ok()) << reparsed.status();
    EXPECT_EQ(Lines(*reparsed), Lines(ApplyDesiredToServerRows(rows, WholeState())));
    ASSERT_EQ(reparsed->size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ((*reparsed)[i].backend_id, rows[i].backend_id);
      EXPECT_EQ((*reparsed)[i].backend, rows[i].backend);
      EXPECT_EQ((*reparsed)[i].server_id, rows[i].server_id);
      EXPECT_EQ((*reparsed)[i].server, rows[i].server);
    }
    EXPECT_EQ((*reparsed)[1].fqdn, "srv2.example.com");
    EXPECT_EQ((*reparsed)[3].address, "::1");
    // Writing what was read back gives the same bytes.
    EXPECT_EQ(parse::FormatServersStateFile(*reparsed), file);
    // Applying the same state again changes nothing.
    EXPECT_EQ(DesiredServersStateFile(*reparsed, WholeState()), file);
  }
}

TEST(ServerStateFileTest, EmptyFile) {
  std::string file = DesiredServersStateFile({}, WholeState());
  EXPECT_THAT(file, StartsWith("1\n# be_id "));
  EXPECT_THAT(file, HasSubstr(" srv_agent_port\n"));
  absl::StatusOr<std::vector<ServerStateRow>> reparsed = parse::ParseServersState(file);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_TRUE(reparsed->empty());
}

}  // namespace
}  // namespace hawk::plan

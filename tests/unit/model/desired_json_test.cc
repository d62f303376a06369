#include "agent/model/desired_json.h"

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/base/json_writer.h"
#include "agent/base/status_field.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"

namespace hawk::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr absl::string_view kIssueExample = R"({"version": "v42", "generation": 42,
 "backends": [{"name": "be_app", "servers": [
   {"name": "SRV_2", "address": "192.0.2.1", "port": 8080, "state": "MAINT"},
   {"name": "SRV_1", "address": "10.0.0.5", "port": 8080, "weight": 100, "state": "READY"}]}],
 "maps": [{"name": "/etc/haproxy/hosts.map", "entries": [
   {"key": "b.example.com", "value": "be_other"},
   {"key": "a.example.com", "value": "be_app"}]}],
 "acls": [{"name": "/etc/haproxy/blocked.acl", "patterns": ["192.168.0.0/16", "10.0.0.0/8"]}]})";

using Entries = std::vector<std::pair<absl::string_view, absl::string_view>>;

// The patterns of an ACL table, sorted.
std::vector<absl::string_view> SortedPatterns(const StringTable& table) {
  std::vector<absl::string_view> out;
  for (const auto& [pattern, unused] : table.Sorted()) out.push_back(pattern);
  return out;
}

TEST(DesiredJsonTest, ParsesTheIssueExampleIndexedByName) {
  absl::StatusOr<DesiredState> state = ParseDesiredState(kIssueExample);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->version, "v42");
  EXPECT_EQ(state->generation, 42);
  ASSERT_EQ(state->backends.size(), 1u);
  ASSERT_TRUE(state->backends.contains("be_app"));
  const DesiredBackend& backend = state->backends.at("be_app");
  ASSERT_EQ(backend.servers.size(), 2u);
  EXPECT_EQ(backend.servers.at("SRV_1"), (ServerSpec{"10.0.0.5", 8080, 100, ServerState::kReady}));
  EXPECT_EQ(backend.servers.at("SRV_2"),
            (ServerSpec{"192.0.2.1", 8080, absl::nullopt, ServerState::kMaint}));
  ASSERT_EQ(state->maps.size(), 1u);
  const StringTable* map = state->FindMap("/etc/haproxy/hosts.map");
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(map->Sorted(), (Entries{{"a.example.com", "be_app"}, {"b.example.com", "be_other"}}));
  ASSERT_EQ(state->acls.size(), 1u);
  const StringTable* acl = state->FindAcl("/etc/haproxy/blocked.acl");
  ASSERT_NE(acl, nullptr);
  EXPECT_THAT(SortedPatterns(*acl), ElementsAre("10.0.0.0/8", "192.168.0.0/16"));
  EXPECT_EQ(acl->Find("10.0.0.0/8"), absl::string_view(""));  // a set: values are empty
}

TEST(DesiredJsonTest, LooksUpAndCountsWhatItHolds) {
  absl::StatusOr<DesiredState> state = ParseDesiredState(kIssueExample);
  ASSERT_TRUE(state.ok()) << state.status();
  const ServerSpec* srv = state->FindServer("be_app", "SRV_2");
  ASSERT_NE(srv, nullptr);
  EXPECT_EQ(srv->address, "192.0.2.1");
  EXPECT_EQ(state->FindServer("be_app", "SRV_3"), nullptr);
  EXPECT_EQ(state->FindServer("be_other", "SRV_1"), nullptr);
  EXPECT_EQ(state->FindMap("/etc/haproxy/blocked.acl"), nullptr);  // an ACL, not a map
  EXPECT_EQ(state->FindAcl("/etc/haproxy/hosts.map"), nullptr);
  EXPECT_EQ(state->server_count(), 2u);
  EXPECT_EQ(state->map_entry_count(), 2u);
  EXPECT_EQ(state->acl_pattern_count(), 2u);
  DesiredState::Memory memory = state->MemoryUsage();
  EXPECT_GT(memory.servers, 0u);
  EXPECT_GT(memory.map_entries, 0u);
  EXPECT_GT(memory.acl_patterns, 0u);
  EXPECT_EQ(memory.total(), memory.servers + memory.map_entries + memory.acl_patterns);
  EXPECT_EQ(DesiredState{}.server_count(), 0u);
}

TEST(DesiredJsonTest, WritesCanonicalProto3Json) {
  absl::StatusOr<DesiredState> state = ParseDesiredState(kIssueExample);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(
      DesiredStateToJson(*state),
      R"({"version":"v42","generation":"42","backends":[{"name":"be_app","servers":[)"
      R"({"name":"SRV_1","address":"10.0.0.5","port":8080,"weight":100,"state":"READY"},)"
      R"({"name":"SRV_2","address":"192.0.2.1","port":8080,"state":"MAINT"}]}],)"
      R"("maps":[{"name":"/etc/haproxy/hosts.map","entries":[)"
      R"({"key":"a.example.com","value":"be_app"},{"key":"b.example.com","value":"be_other"}]}],)"
      R"("acls":[{"name":"/etc/haproxy/blocked.acl","patterns":["10.0.0.0/8","192.168.0.0/16"]}]})");
  EXPECT_EQ(DesiredStateToJson(DesiredState{}),
            R"({"version":"","backends":[],"maps":[],"acls":[]})");
}

TEST(DesiredJsonTest, FollowsTheProto3MappingForDefaultsNullsAndStrings) {
  absl::StatusOr<DesiredState> state = ParseDesiredState(
      R"({"version": "", "generation": "9223372036854775807", "backends": [
           {"name": "be", "servers": [{"name": "s", "address": "::1", "port": "80",
                                       "weight": null, "state": null}]},
           {"name": "empty", "servers": null}],
          "maps": null, "acls": []})");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->version, "");
  EXPECT_EQ(state->generation, int64_t{9223372036854775807});
  ASSERT_EQ(state->backends.size(), 2u);
  EXPECT_EQ(state->backends.at("be").servers.at("s"),
            (ServerSpec{"::1", 80, absl::nullopt, absl::nullopt}));
  ASSERT_TRUE(state->backends.contains("empty"));
  EXPECT_TRUE(state->backends.at("empty").servers.empty());
  EXPECT_TRUE(state->maps.empty());

  absl::StatusOr<DesiredState> empty = ParseDesiredState("{}");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, DesiredState{});
  absl::StatusOr<DesiredState> nulls = ParseDesiredState(
      R"({"version": null, "generation": null, "backends": null, "maps": null, "acls": null})");
  ASSERT_TRUE(nulls.ok()) << nulls.status();
  EXPECT_EQ(*nulls, DesiredState{});
}

TEST(DesiredJsonTest, AcceptsTheBoundaryValues) {
  absl::StatusOr<DesiredState> state = ParseDesiredState(absl::StrCat(
      R"({"generation": 0, "version": ")", std::string(kMaxVersionBytes, '~'),
      R"(", "backends": [{"name": ")", std::string(kMaxIdentifierBytes, 'b'), R"(", "servers": [)",
      R"({"name": "a", "address": "1.2.3.4", "port": 1, "weight": 0, "state": "DRAIN"},)",
      R"({"name": "b", "address": "2001:db8::1", "port": 65535, "weight": 256},)",
      R"({"name": "c", "address": "::ffff:10.0.0.1"},)",
      R"({"name": "d", "address": "backend-1.example.com"},)",
      R"({"name": "e", "address": "localhost"},)",
      R"({"name": "f.x:y-z_0", "address": "1.2.3.4a"}]}],)", R"("maps": [{"name": "/)",
      std::string(kMaxFilePathBytes - 1, 'm'), R"(", "entries": [)", R"({"key": ")",
      std::string(kMaxEntryBytes, 'k'), R"(", "value": ")", std::string(kMaxEntryBytes, 'v'),
      R"("},)",
      R"({"key": " lead;ing\\ \"#'\t", "value": "x y\tz;\\ é 日本 😀 \u0001 \u007f"}]}]})"));
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->generation, 0);
  EXPECT_EQ(state->version, std::string(kMaxVersionBytes, '~'));
  const DesiredBackend& backend = state->backends.at(std::string(kMaxIdentifierBytes, 'b'));
  ASSERT_EQ(backend.servers.size(), 6u);
  EXPECT_EQ(backend.servers.at("a").weight, 0);
  EXPECT_EQ(backend.servers.at("a").port, 1);
  EXPECT_EQ(backend.servers.at("a").state, ServerState::kDrain);
  EXPECT_EQ(backend.servers.at("b").port, 65535);
  EXPECT_EQ(backend.servers.at("b").weight, 256);
  EXPECT_EQ(backend.servers.at("f.x:y-z_0").address, "1.2.3.4a");
  const StringTable* map = state->FindMap("/" + std::string(kMaxFilePathBytes - 1, 'm'));
  ASSERT_NE(map, nullptr);
  ASSERT_EQ(map->size(), 2u);
  EXPECT_EQ(map->Find(std::string(kMaxEntryBytes, 'k')),
            absl::string_view(std::string(kMaxEntryBytes, 'v')));
  EXPECT_EQ(map->Find(" lead;ing\\ \"#'\t"), absl::string_view("x y\tz;\\ é 日本 😀 \x01 \x7f"));
}

TEST(DesiredJsonTest, IsIpLiteral) {
  for (absl::string_view yes :
       {"10.0.0.5", "0.0.0.0", "::1", "::", "2001:db8::1", "::ffff:192.0.2.1", "fe80::1"}) {
    EXPECT_TRUE(IsIpLiteral(yes)) << yes;
  }
  for (absl::string_view no : std::vector<absl::string_view>{
           "", "1.2.3", "1.2.3.999", "01.2.3.4", "1.2.3.4 ", " 1.2.3.4", "[::1]", "fe80::1%eth0",
           "::1/128", "example.com", "1.2.3.4:80", absl::string_view("1.2.3.4\0x", 9)}) {
    EXPECT_FALSE(IsIpLiteral(no)) << no;
  }
}

TEST(DesiredJsonTest, ServerStateNames) {
  EXPECT_STREQ(ServerStateName(ServerState::kReady), "READY");
  EXPECT_STREQ(ServerStateName(ServerState::kDrain), "DRAIN");
  EXPECT_STREQ(ServerStateName(ServerState::kMaint), "MAINT");
  EXPECT_EQ(ServerStateFromName("DRAIN"), ServerState::kDrain);
  EXPECT_EQ(ServerStateFromName("drain"), absl::nullopt);
}

TEST(DesiredJsonTest, SameContentIgnoresTheLabels) {
  absl::StatusOr<DesiredState> a = ParseDesiredState(kIssueExample);
  ASSERT_TRUE(a.ok());
  DesiredState b = *a;
  b.version = "v43";
  b.generation = 43;
  EXPECT_TRUE(SameContent(*a, b));
  EXPECT_FALSE(*a == b);
  b.maps.at("/etc/haproxy/hosts.map").Set("a.example.com", "other");
  EXPECT_FALSE(SameContent(*a, b));
  DesiredState c = *a;
  c.backends.at("be_app").servers.at("SRV_1").weight = 1;
  EXPECT_FALSE(SameContent(*a, c));
  DesiredState d = *a;
  d.acls.at("/etc/haproxy/blocked.acl").Erase("10.0.0.0/8");
  EXPECT_FALSE(SameContent(*a, d));
}

// ---- The hostile corpus ----

// Documents with one member list in a known place.
std::string Top(absl::string_view members) { return absl::StrCat("{", members, "}"); }
// backends[1] (backends[0] is valid).
std::string Backend(absl::string_view members) {
  return absl::StrCat(R"({"backends":[{"name":"be0"},{)", members, "}]}");
}
// backends[0].servers[1] (servers[0] is valid).
std::string Server(absl::string_view members) {
  return absl::StrCat(
      R"({"backends":[{"name":"be","servers":[{"name":"s1","address":"10.0.0.1"},{)", members,
      "}]}]}");
}
// backends[0].servers[1] with a valid name and address plus `extra`.
std::string ServerWith(absl::string_view extra) {
  return Server(absl::StrCat(R"("name":"s2","address":"10.0.0.2",)", extra));
}
std::string Address(absl::string_view json_string) {
  return Server(absl::StrCat(R"("name":"s2","address":)", json_string));
}
// maps[0].
std::string Map(absl::string_view members) { return absl::StrCat(R"({"maps":[{)", members, "}]}"); }
// maps[0].entries[0].
std::string Entry(absl::string_view members) {
  return absl::StrCat(R"({"maps":[{"name":"/m","entries":[{)", members, "}]}]}");
}
// acls[0].
std::string Acl(absl::string_view members) { return absl::StrCat(R"({"acls":[{)", members, "}]}"); }
// acls[0].patterns.
std::string Patterns(absl::string_view items) {
  return absl::StrCat(R"({"acls":[{"name":"/a","patterns":[)", items, "]}]}");
}

struct HostileCase {
  const char* what;
  std::string json;
  std::string field;    // "" for errors about the whole document
  std::string message;  // a part of the message that says why
};

std::vector<HostileCase> HostileCorpus() {
  const std::string kIdChars = "must contain only [A-Za-z0-9_.:-]";
  const std::string kNotAddress = "must be an IPv4 or IPv6 literal or a hostname";
  const std::string kPort = "must be an integer in 1..65535";
  const std::string kWeight = "must be an integer in 0..256";
  const std::string kGeneration = "must be an integer in 0..9223372036854775807";
  const std::string kStates = R"(must be one of "READY", "DRAIN", "MAINT")";
  const std::string kFilePath = "must be a file path of printable ASCII without spaces";
  const std::string kLine = "must not contain LF, CR or NUL";
  const std::string kS2 = "backends[0].servers[1]";
  return {
      // Identifiers: nothing that ends a word, a command or starts a prefix.
      {"backend ;", Backend(R"("name":"be;shutdown sessions server be/s")"), "backends[1].name",
       kIdChars + R"(, got "be;shutdown sessions server be/s" (byte ';' at offset 2))"},
      {"backend space", Backend(R"("name":"be app")"), "backends[1].name",
       "(byte space at offset 2)"},
      {"backend LF", Backend(R"("name":"be\nreload")"), "backends[1].name",
       "(byte 0x0a at offset 2)"},
      {"backend tab", Backend(R"("name":"be\t")"), "backends[1].name", "(byte 0x09 at offset 2)"},
      {"backend NUL", Backend(R"("name":"be\u0000x")"), "backends[1].name",
       "(byte 0x00 at offset 2)"},
      {"backend @", Backend(R"("name":"@!1")"), "backends[1].name", "(byte '@' at offset 0)"},
      {"backend #", Backend(R"("name":"#1")"), "backends[1].name", "(byte '#' at offset 0)"},
      {"backend /", Backend(R"("name":"be/s")"), "backends[1].name", "(byte '/' at offset 2)"},
      {"backend UTF-8", Backend(R"("name":"bé")"), "backends[1].name", "(byte 0xc3 at offset 1)"},
      {"backend empty", Backend(R"("name":"")"), "backends[1].name", "must not be empty"},
      {"backend too long", Backend(absl::StrCat(R"("name":")", std::string(128, 'b'), "\"")),
       "backends[1].name", "must be at most 127 bytes, got 128"},
      {"backend no name", Backend(R"("servers":[])"), "backends[1].name", "required"},
      {"backend null name", Backend(R"("name":null)"), "backends[1].name", "required"},
      {"backend name type", Backend(R"("name":42)"), "backends[1].name",
       "must be a string, got a number"},
      {"backend duplicate", Backend(R"("name":"be0")"), "backends[1].name",
       R"(duplicate backend name "be0" (also backends[0]))"},
      {"server ;", Server(R"("name":"s;1","address":"10.0.0.2")"), kS2 + ".name",
       "(byte ';' at offset 1)"},
      {"server space", Server(R"("name":"s 1","address":"10.0.0.2")"), kS2 + ".name",
       "(byte space at offset 1)"},
      {"server LF", Server(R"("name":"s\n1","address":"10.0.0.2")"), kS2 + ".name",
       "(byte 0x0a at offset 1)"},
      {"server CR", Server(R"("name":"s\r","address":"10.0.0.2")"), kS2 + ".name",
       "(byte 0x0d at offset 1)"},
      {"server @", Server(R"("name":"@1","address":"10.0.0.2")"), kS2 + ".name",
       "(byte '@' at offset 0)"},
      {"server #", Server(R"("name":"#3","address":"10.0.0.2")"), kS2 + ".name",
       "(byte '#' at offset 0)"},
      {"server backslash", Server(R"("name":"s\\","address":"10.0.0.2")"), kS2 + ".name",
       "(byte '\\' at offset 1)"},
      {"server no name", Server(R"("address":"10.0.0.2")"), kS2 + ".name", "required"},
      {"server duplicate", Server(R"("name":"s1","address":"10.0.0.2")"), kS2 + ".name",
       R"(duplicate server name "s1" (also servers[0]))"},

      // Addresses.
      {"address ;", Address(R"("1.2.3.4; shutdown sessions server be/s")"), kS2 + ".address",
       kNotAddress + R"(, got "1.2.3.4; shutdown sessions server be/s": byte ';' at offset 7)"},
      {"address LF", Address(R"("1.2.3.4\nreload")"), kS2 + ".address",
       "byte 0x0a at offset 7 is not allowed in a hostname"},
      {"address NUL", Address(R"("1.2.3.4\u0000")"), kS2 + ".address",
       "byte 0x00 at offset 7 is not allowed in a hostname"},
      {"address prefix", Address(R"("@!1")"), kS2 + ".address", "byte '@' at offset 0"},
      {"address space", Address(R"("10.0.0.1 ")"), kS2 + ".address", "byte space at offset 8"},
      {"address bad IPv4", Address(R"("1.2.3.999")"), kS2 + ".address",
       "not a valid IPv4 literal, and a hostname needs a letter"},
      {"address brackets", Address(R"("[::1]")"), kS2 + ".address",
       "not a valid IPv6 literal (write it without brackets, zone id or port)"},
      {"address zone", Address(R"("fe80::1%eth0")"), kS2 + ".address", "not a valid IPv6 literal"},
      {"address with port", Address(R"("10.0.0.1:80")"), kS2 + ".address",
       "not a valid IPv6 literal"},
      {"address label -", Address(R"("-a.example.com")"), kS2 + ".address",
       "a hostname label neither starts nor ends with '-'"},
      {"address empty label", Address(R"("a..example.com")"), kS2 + ".address",
       "a hostname has no empty labels"},
      {"address trailing dot", Address(R"("example.com.")"), kS2 + ".address",
       "a hostname has no empty labels"},
      {"address long label", Address(absl::StrCat("\"", std::string(64, 'a'), ".com\"")),
       kS2 + ".address", "a hostname label has at most 63 bytes"},
      {"address long name",
       Address(absl::StrCat("\"", std::string(63, 'a'), ".", std::string(63, 'b'), ".",
                            std::string(63, 'c'), ".", std::string(63, 'd'), "\"")),
       kS2 + ".address", "a hostname has at most 253 bytes"},
      {"address empty", Address(R"("")"), kS2 + ".address", "must not be empty"},
      {"address number", Address("167772161"), kS2 + ".address", "must be a string, got a number"},
      {"address missing", Server(R"("name":"s2")"), kS2 + ".address", "required"},
      {"address null", Server(R"("name":"s2","address":null)"), kS2 + ".address", "required"},

      // Ports and weights: integers in range, nothing else.
      {"port too big", ServerWith(R"("port":70000)"), kS2 + ".port", kPort + ", got 70000"},
      {"port zero", ServerWith(R"("port":0)"), kS2 + ".port", kPort + ", got 0"},
      {"port negative", ServerWith(R"("port":-1)"), kS2 + ".port", kPort + ", got -1"},
      {"port fraction", ServerWith(R"("port":1.5)"), kS2 + ".port", kPort + ", got 1.5"},
      {"port exponent", ServerWith(R"("port":1e3)"), kS2 + ".port",
       kPort + ", got 1000 written with a fraction or exponent"},
      {"port integral double", ServerWith(R"("port":80.0)"), kS2 + ".port",
       kPort + ", got 80 written with a fraction or exponent"},
      {"port suffix", ServerWith(R"("port":"80x")"), kS2 + ".port", kPort + R"(, got "80x")"},
      {"port command", ServerWith(R"("port":"80; reload")"), kS2 + ".port",
       kPort + R"(, got "80; reload")"},
      {"port leading space", ServerWith(R"("port":" 80")"), kS2 + ".port",
       kPort + R"(, got " 80")"},
      {"port leading zero", ServerWith(R"("port":"080")"), kS2 + ".port", kPort + R"(, got "080")"},
      {"port plus", ServerWith(R"("port":"+80")"), kS2 + ".port", kPort + R"(, got "+80")"},
      {"port string range", ServerWith(R"("port":"70000")"), kS2 + ".port",
       kPort + R"(, got "70000")"},
      {"port bool", ServerWith(R"("port":true)"), kS2 + ".port", kPort + ", got a boolean"},
      {"port array", ServerWith(R"("port":[80])"), kS2 + ".port", kPort + ", got an array"},
      {"port object", ServerWith(R"("port":{"a":1})"), kS2 + ".port", kPort + ", got an object"},
      {"port uint64", ServerWith(R"("port":18446744073709551615)"), kS2 + ".port",
       kPort + ", got 18446744073709551615"},
      {"weight too big", ServerWith(R"("weight":257)"), kS2 + ".weight", kWeight + ", got 257"},
      {"weight negative", ServerWith(R"("weight":-1)"), kS2 + ".weight", kWeight + ", got -1"},
      {"weight spaced", ServerWith(R"("weight":"1 0")"), kS2 + ".weight",
       kWeight + R"(, got "1 0")"},
      {"weight percent", ServerWith(R"("weight":"50%")"), kS2 + ".weight",
       kWeight + R"(, got "50%")"},

      // States: the enum names only.
      {"state lower case", ServerWith(R"("state":"ready")"), kS2 + ".state",
       kStates + R"(, got "ready")"},
      {"state UP", ServerWith(R"("state":"UP")"), kS2 + ".state", kStates + R"(, got "UP")"},
      {"state number", ServerWith(R"("state":1)"), kS2 + ".state", kStates + ", got a number"},
      {"state command", ServerWith(R"("state":"READY; reload")"), kS2 + ".state",
       kStates + R"(, got "READY; reload")"},
      {"state LF", ServerWith(R"("state":"READY\n")"), kS2 + ".state",
       kStates + R"(, got "READY\n")"},

      // Top level.
      {"version space", Top(R"("version":"v 1")"), "version",
       R"(must be printable ASCII without spaces, got "v 1" (byte space at offset 1))"},
      {"version LF", Top(R"("version":"v1\nreload")"), "version", "(byte 0x0a at offset 2)"},
      {"version too long", Top(absl::StrCat(R"("version":")", std::string(129, 'v'), "\"")),
       "version", "must be at most 128 bytes, got 129"},
      {"version type", Top(R"("version":42)"), "version", "must be a string, got a number"},
      {"generation negative", Top(R"("generation":-1)"), "generation", kGeneration + ", got -1"},
      {"generation suffix", Top(R"("generation":"42x")"), "generation",
       kGeneration + R"(, got "42x")"},
      {"generation fraction", Top(R"("generation":1.5)"), "generation", kGeneration + ", got 1.5"},
      {"generation overflow", Top(R"("generation":"9223372036854775808")"), "generation",
       kGeneration + R"(, got "9223372036854775808")"},
      {"generation uint64", Top(R"("generation":9223372036854775808)"), "generation",
       kGeneration + ", got 9223372036854775808"},
      {"generation bool", Top(R"("generation":false)"), "generation", "got a boolean"},
      {"unknown top field", Top(R"("version":"v1","foo":1)"), "foo", "unknown field"},
      {"field names are case-sensitive", Top(R"("Backends":[])"), "Backends", "unknown field"},
      {"odd unknown key", Top(R"("a b;c":1)"), R"(["a b;c"])", "unknown field"},
      {"unknown backend field", Backend(R"("name":"be1","foo":[[[{}]]])"), "backends[1].foo",
       "unknown field"},
      {"unknown server field", ServerWith(R"("foo":null)"), kS2 + ".foo", "unknown field"},
      {"unknown entry field", Entry(R"("key":"k","value":"v","ttl":1)"), "maps[0].entries[0].ttl",
       "unknown field"},
      {"unknown acl field", Acl(R"("name":"/a","entries":[])"), "acls[0].entries", "unknown field"},
      {"duplicate top key", Top(R"("version":"a","version":"b")"), "version",
       "duplicate key in the same object"},
      {"duplicate null key", Top(R"("backends":null,"backends":[])"), "backends",
       "duplicate key in the same object"},
      {"duplicate server key", ServerWith(R"("port":80,"port":81)"), kS2 + ".port",
       "duplicate key in the same object"},
      {"duplicate entry key", Entry(R"("key":"k","value":"v","value":"w")"),
       "maps[0].entries[0].value", "duplicate key in the same object"},
      {"backends object", Top(R"("backends":{})"), "backends", "must be an array, got an object"},
      {"backends string", Top(R"("backends":"be")"), "backends", "must be an array, got a string"},
      {"backend null", Top(R"("backends":[null])"), "backends[0]", "must be an object, got null"},
      {"nested arrays", Top(R"("backends":[[[[[[]]]]]])"), "backends[0]",
       "must be an object, got an array"},
      {"servers object", Backend(R"("name":"be1","servers":{"name":"s"})"), "backends[1].servers",
       "must be an array, got an object"},
      {"server string", Backend(R"("name":"be1","servers":["s1"])"), "backends[1].servers[0]",
       "must be an object, got a string"},
      {"maps number", Top(R"("maps":1)"), "maps", "must be an array, got a number"},
      {"acls bool", Top(R"("acls":true)"), "acls", "must be an array, got a boolean"},
      {"deep junk in an unknown field",
       Top(absl::StrCat(R"("junk":)", std::string(500, '['), std::string(500, ']'))), "junk",
       "unknown field"},

      // Whole-document errors carry no field.
      {"truncated", R"({"backends":[{"name":"be")", "", "desired state is not valid JSON"},
      {"truncated string", R"({"version":"v)", "", "desired state is not valid JSON"},
      {"empty body", "", "", "desired state is not valid JSON"},
      {"trailing garbage", "{} {}", "", "desired state is not valid JSON"},
      {"trailing comma", R"({"version":"v",})", "", "desired state is not valid JSON"},
      {"comment", R"({/* x */})", "", "desired state is not valid JSON"},
      {"single quotes", R"({'version':'v'})", "", "desired state is not valid JSON"},
      {"invalid UTF-8", "{\"version\":\"v\xff\"}", "", "not valid UTF-8"},
      {"overlong UTF-8", "{\"maps\":[{\"name\":\"/m\",\"entries\":[{\"key\":\"\xc0\xaf\"}]}]}", "",
       "not valid UTF-8"},
      {"too deep", std::string(2000, '[') + std::string(2000, ']'), "",
       "desired state is not valid JSON"},
      {"top-level array", "[]", "", "desired state must be a JSON object, got an array"},
      {"top-level null", "null", "", "desired state must be a JSON object, got null"},
      {"top-level string", R"("{}")", "", "desired state must be a JSON object, got a string"},

      // Map and ACL names go unescaped into CLI lines.
      {"map space", Map(R"("name":"/a b")"), "maps[0].name",
       kFilePath + R"(, ';', '\', '#', '<' or quotes, got "/a b" (byte space at offset 2))"},
      {"map ;", Map(R"("name":"/a;b")"), "maps[0].name", "(byte ';' at offset 2)"},
      {"map LF", Map(R"("name":"/a\nb")"), "maps[0].name", "(byte 0x0a at offset 2)"},
      {"map NUL", Map(R"("name":"/a\u0000")"), "maps[0].name", "(byte 0x00 at offset 2)"},
      {"map tab", Map(R"("name":"/a\tb")"), "maps[0].name", "(byte 0x09 at offset 2)"},
      {"map #", Map(R"("name":"/a#b")"), "maps[0].name", "(byte '#' at offset 2)"},
      {"map backslash", Map(R"("name":"/a\\ b")"), "maps[0].name", "(byte '\\' at offset 2)"},
      {"map quote", Map(R"("name":"/a\"b")"), "maps[0].name", "(byte '\"' at offset 2)"},
      {"map apostrophe", Map(R"("name":"/a'b")"), "maps[0].name", "(byte ''' at offset 2)"},
      {"map UTF-8", Map(R"("name":"/é")"), "maps[0].name", "(byte 0xc3 at offset 1)"},
      // `<<` at the end of a line opens HAProxy 2.6's payload mode, at the start of the last
      // word 3.x's: a name sent as `show map <name>` must never end a line that way.
      {"map payload opener", Map(R"("name":"/tmp/x<<")"), "maps[0].name", "(byte '<' at offset 6)"},
      {"map custom payload opener", Map(R"("name":"/<<EOF")"), "maps[0].name",
       "(byte '<' at offset 1)"},
      {"acl payload opener", Acl(R"("name":"/a<<")"), "acls[0].name", "(byte '<' at offset 2)"},
      {"map relative", Map(R"("name":"hosts.map")"), "maps[0].name",
       R"(must be an absolute file path starting with '/', got "hosts.map")"},
      {"map reference", Map(R"("name":"#1")"), "maps[0].name", "must be an absolute file path"},
      {"map version prefix", Map(R"("name":"@1")"), "maps[0].name",
       "must be an absolute file path"},
      {"map empty", Map(R"("name":"")"), "maps[0].name", "must not be empty"},
      {"map too long", Map(absl::StrCat(R"("name":"/)", std::string(1024, 'm'), "\"")),
       "maps[0].name", "must be at most 1024 bytes, got 1025"},
      {"map no name", Map(R"("entries":[])"), "maps[0].name", "required"},
      {"map duplicate", Top(R"("maps":[{"name":"/m"},{"name":"/m"}])"), "maps[1].name",
       R"(duplicate map name "/m" (also maps[0]))"},
      {"acl space", Acl(R"("name":"/a b")"), "acls[0].name", "(byte space at offset 2)"},
      {"acl duplicate", Top(R"("acls":[{"name":"/a"},{"name":"/b"},{"name":"/a"}])"),
       "acls[2].name", R"(duplicate ACL name "/a" (also acls[0]))"},
      {"a map and an ACL may share a file name",
       Top(R"("maps":[{"name":"/x"}],"acls":[{"name":"/x"}],"foo":1)"), "foo", "unknown field"},

      // Map entries: LF, CR and NUL cannot be escaped.
      {"key LF", Entry(R"("key":"a\nshow proc","value":"v")"), "maps[0].entries[0].key",
       kLine +
           R"(, which cannot be escaped on a CLI line, got "a\nshow proc" (byte 0x0a at offset 1))"},
      {"key CR", Entry(R"("key":"a\r","value":"v")"), "maps[0].entries[0].key",
       "(byte 0x0d at offset 1)"},
      {"key NUL", Entry(R"("key":"a\u0000b","value":"v")"), "maps[0].entries[0].key",
       "(byte 0x00 at offset 1)"},
      {"value LF", Entry(R"("key":"k","value":"v\nreload")"), "maps[0].entries[0].value",
       "(byte 0x0a at offset 1)"},
      {"value CR LF", Entry(R"("key":"k","value":"v\r\n")"), "maps[0].entries[0].value",
       "(byte 0x0d at offset 1)"},
      {"value NUL", Entry(R"("key":"k","value":"\u0000")"), "maps[0].entries[0].value",
       "(byte 0x00 at offset 0)"},
      {"key empty", Entry(R"("key":"","value":"v")"), "maps[0].entries[0].key",
       "must not be empty"},
      {"value empty", Entry(R"("key":"k","value":"")"), "maps[0].entries[0].value",
       "must not be empty"},
      {"value missing", Entry(R"("key":"k")"), "maps[0].entries[0].value",
       "required (HAProxy maps need a value)"},
      {"key missing", Entry(R"("value":"v")"), "maps[0].entries[0].key", "required"},
      {"key type", Entry(R"("key":1,"value":"v")"), "maps[0].entries[0].key",
       "must be a string, got a number"},
      {"key too long",
       Entry(absl::StrCat(R"("key":")", std::string(4097, 'k'), R"(","value":"v")")),
       "maps[0].entries[0].key", "must be at most 4096 bytes, got 4097"},
      {"value too long",
       Entry(absl::StrCat(R"("key":"k","value":")", std::string(4097, 'v'), "\"")),
       "maps[0].entries[0].value", "must be at most 4096 bytes, got 4097"},
      {"entry string", Map(R"("name":"/m","entries":["k v"])"), "maps[0].entries[0]",
       "must be an object, got a string"},
      {"duplicate key",
       Map(R"("name":"/m","entries":[{"key":"w","value":"1"},{"key":"x","value":"2"},)"
           R"({"key":"y","value":"3"},{"key":"x","value":"4"}])"),
       "maps[0].entries[3].key", R"(duplicate key "x" (also entries[1]))"},
      {"duplicate key with the same value",
       Map(R"("name":"/m","entries":[{"key":"x","value":"1"},{"key":"x","value":"1"}])"),
       "maps[0].entries[1].key", R"(duplicate key "x" (also entries[0]))"},
      {"duplicate hostile key",
       Map(R"("name":"/m","entries":[{"key":"a b;c","value":"1"},{"key":"d","value":"2"},)"
           R"({"key":"a b;c","value":"3"}])"),
       "maps[0].entries[2].key", R"(duplicate key "a b;c" (also entries[0]))"},

      // ACL patterns.
      {"pattern LF", Patterns(R"("10.0.0.0/8\nreload")"), "acls[0].patterns[0]",
       kLine + R"(, which cannot be escaped on a CLI line, got "10.0.0.0/8\nreload")"},
      {"pattern NUL", Patterns(R"("a", "\u0000")"), "acls[0].patterns[1]",
       "(byte 0x00 at offset 0)"},
      {"pattern empty", Patterns(R"("")"), "acls[0].patterns[0]", "must not be empty"},
      {"pattern type", Patterns(R"(["a"])"), "acls[0].patterns[0]",
       "must be a string, got an array"},
      {"pattern null", Patterns(R"(null)"), "acls[0].patterns[0]", "must be a string, got null"},
      {"pattern duplicate", Patterns(R"("x", "y", "x")"), "acls[0].patterns[2]",
       R"(duplicate pattern "x" (also patterns[0]))"},
      {"pattern duplicate later", Patterns(R"("x", "y", "z", "y")"), "acls[0].patterns[3]",
       R"(duplicate pattern "y" (also patterns[1]))"},

      // Wrong types in the remaining places.
      {"server name type", Server(R"("name":true,"address":"10.0.0.2")"), kS2 + ".name",
       "must be a string, got a boolean"},
      {"version object", Top(R"("version":{"v":1})"), "version", "must be a string, got an object"},
      {"map name type", Map(R"("name":["/m"])"), "maps[0].name", "must be a string, got an array"},
      {"acl name type", Acl(R"("name":{})"), "acls[0].name", "must be a string, got an object"},
      {"entries type", Map(R"("name":"/m","entries":"k v")"), "maps[0].entries",
       "must be an array, got a string"},
      {"patterns type", Acl(R"("name":"/a","patterns":{"p":1})"), "acls[0].patterns",
       "must be an array, got an object"},
      {"value type", Entry(R"("key":"k","value":1)"), "maps[0].entries[0].value",
       "must be a string, got a number"},
      {"value bool", Entry(R"("key":"k","value":false)"), "maps[0].entries[0].value",
       "must be a string, got a boolean"},
      {"entry null", Map(R"("name":"/m","entries":[null])"), "maps[0].entries[0]",
       "must be an object, got null"},
      {"acl array", Top(R"("acls":[["/a"]])"), "acls[0]", "must be an object, got an array"},

      // The first error in document order wins.
      {"first error wins", R"({"backends":[{"name":"be;x","servers":[{"port":0}]}],"foo":1})",
       "backends[0].name", "(byte ';' at offset 2)"},
      {"first error wins inside a server", Server(R"("port":0,"name":"s;2","address":"1.2.3.4;")"),
       kS2 + ".port", kPort},
      {"long values are cut in messages", Address(absl::StrCat("\"", std::string(300, 'a'), ";\"")),
       kS2 + ".address", R"(aaaa..." (301 bytes): byte ';' at offset 300)"},
  };
}

TEST(DesiredJsonTest, RejectsTheHostileCorpus) {
  for (const HostileCase& c : HostileCorpus()) {
    SCOPED_TRACE(absl::StrCat(c.what, ": ", c.json.substr(0, 200)));
    absl::StatusOr<DesiredState> state = ParseDesiredState(c.json);
    ASSERT_FALSE(state.ok());
    EXPECT_EQ(state.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(base::FieldOf(state.status()), c.field);
    EXPECT_THAT(std::string(state.status().message()), HasSubstr(c.message));
    if (!c.field.empty()) {
      EXPECT_THAT(std::string(state.status().message()), StartsWith(c.field + ": "));
    }
  }
}

// A raw control byte inside a JSON string is not JSON; either way it must not get through.
TEST(DesiredJsonTest, RejectsRawControlBytesInStrings) {
  for (char c : {'\n', '\r', '\0', '\t', '\x01'}) {
    std::string json = R"({"maps":[{"name":"/m","entries":[{"key":"a)";
    json.push_back(c);
    json += R"(b","value":"v"}]}]})";
    absl::StatusOr<DesiredState> state = ParseDesiredState(json);
    ASSERT_FALSE(state.ok()) << static_cast<int>(c);
    EXPECT_EQ(state.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(base::FieldOf(state.status()), "");
    EXPECT_THAT(std::string(state.status().message()),
                HasSubstr("desired state is not valid JSON"));
  }
}

TEST(DesiredJsonTest, RejectsTooManyEntriesAndPatterns) {
  auto entries = [](size_t n) {
    std::string json = R"({"maps":[{"name":"/m","entries":[)";
    for (size_t i = 0; i < n; ++i) {
      absl::StrAppend(&json, i ? "," : "", R"({"key":"k)", i, R"(","value":"v"})");
    }
    return json + "]}]}";
  };
  absl::StatusOr<DesiredState> ok = ParseDesiredState(entries(kMaxMapEntries));
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_NE(ok->FindMap("/m"), nullptr);
  EXPECT_EQ(ok->FindMap("/m")->size(), kMaxMapEntries);
  // An entry costs its bytes (about 12 here with the record header) and a hash slot, not two
  // std::string objects and a hash slot (about 110 bytes).
  EXPECT_LT(ok->MemoryUsage().map_entries, kMaxMapEntries * 32);
  absl::StatusOr<DesiredState> big = ParseDesiredState(entries(kMaxMapEntries + 1));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(base::FieldOf(big.status()), "maps[0].entries");
  EXPECT_THAT(std::string(big.status().message()),
              HasSubstr(absl::StrCat("must hold at most ", kMaxMapEntries, " entries, got ",
                                     kMaxMapEntries + 1)));

  std::string patterns = R"({"acls":[{"name":"/a","patterns":[)";
  for (size_t i = 0; i <= kMaxAclPatterns; ++i) absl::StrAppend(&patterns, i ? "," : "", "\"p\"");
  absl::StatusOr<DesiredState> acl = ParseDesiredState(patterns + "]}]}");
  ASSERT_FALSE(acl.ok());
  EXPECT_EQ(base::FieldOf(acl.status()), "acls[0].patterns");
  EXPECT_THAT(std::string(acl.status().message()),
              HasSubstr(absl::StrCat("must hold at most ", kMaxAclPatterns, " patterns")));
}

// ---- Round trip over random valid states ----

class StateGenerator {
 public:
  explicit StateGenerator(uint32_t seed) : rng_(seed) {}

  DesiredState Next() {
    DesiredState state;
    if (Coin()) state.version = Text(kVersionChars, 1, 20);
    if (Coin()) state.generation = Coin() ? Int(0, 1000) : int64_t{9223372036854775807};
    for (int i = Int(0, 4); i > 0; --i) {
      DesiredBackend& backend = state.backends[Text(kIdChars, 1, 12)];
      for (int j = Int(0, 5); j > 0; --j) {
        ServerSpec spec;
        spec.address = Pick({"10.0.0.5", "192.0.2.1", "::1", "2001:db8::42", "::ffff:1.2.3.4",
                             "app.example.com", "localhost", "xn--bcher-kva.example"});
        if (Coin()) spec.port = Int(1, 65535);
        if (Coin()) spec.weight = Int(0, 256);
        if (Coin()) {
          spec.state = Pick({ServerState::kReady, ServerState::kDrain, ServerState::kMaint});
        }
        backend.servers[Text(kIdChars, 1, 12)] = spec;
      }
    }
    for (int i = Int(0, 3); i > 0; --i) {
      StringTable& map = state.maps["/" + Text(kPathChars, 1, 30)];
      for (int j = Int(0, 20); j > 0; --j) map.Set(Hostile(), Hostile());
    }
    for (int i = Int(0, 3); i > 0; --i) {
      StringTable& acl = state.acls["/" + Text(kPathChars, 1, 30)];
      for (int j = Int(0, 20); j > 0; --j) acl.Set(Hostile(), "");
    }
    return state;
  }

  // The same content as a document with every list and every server's members in a random
  // order.
  std::string ShuffledJson(const DesiredState& state) {
    base::JsonWriter w;
    w.BeginObject();
    w.Key("version").String(state.version);
    if (state.generation) w.Key("generation").Int(*state.generation);
    w.Key("backends").BeginArray();
    for (const auto& [name, backend] : Shuffled(SortedByName(state.backends))) {
      w.BeginObject();
      w.Key("servers").BeginArray();
      for (const auto& [server, spec] : Shuffled(SortedByName(backend->servers))) {
        std::vector<std::function<void()>> members = {
            [&, server = server] { w.Key("name").String(*server); },
            [&, spec = spec] { w.Key("address").String(spec->address); },
            [&, spec = spec] {
              if (spec->port) w.Key("port").Int(*spec->port);
            },
            [&, spec = spec] {
              if (spec->weight) w.Key("weight").String(absl::StrCat(*spec->weight));
            },
            [&, spec = spec] {
              if (spec->state) w.Key("state").String(ServerStateName(*spec->state));
            },
        };
        w.BeginObject();
        for (const auto& member : Shuffled(std::move(members))) member();
        w.EndObject();
      }
      w.EndArray();
      w.Key("name").String(*name);
      w.EndObject();
    }
    w.EndArray();
    w.Key("acls").BeginArray();
    for (const auto& [name, table] : Shuffled(SortedByName(state.acls))) {
      w.BeginObject();
      w.Key("name").String(*name);
      w.Key("patterns").BeginArray();
      for (const auto& [pattern, unused] : Shuffled(table->Sorted())) w.String(pattern);
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.Key("maps").BeginArray();
    for (const auto& [name, table] : Shuffled(SortedByName(state.maps))) {
      w.BeginObject();
      w.Key("entries").BeginArray();
      for (const auto& [key, value] : Shuffled(table->Sorted())) {
        w.BeginObject();
        w.Key("value").String(value);
        w.Key("key").String(key);
        w.EndObject();
      }
      w.EndArray();
      w.Key("name").String(*name);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return w.Take();
  }

 private:
  static constexpr absl::string_view kVersionChars =
      "abcXYZ0123456789!#$%&()*+,-./:;<=>?@[]^_`{|}~\"'\\";
  static constexpr absl::string_view kIdChars = "abcxyzABCXYZ0123456789_.:-";
  static constexpr absl::string_view kPathChars = "abcxyz0123456789/._-+=,@!$%&()[]{}~";

  template <typename T>
  std::vector<T> Shuffled(std::vector<T> items) {
    std::shuffle(items.begin(), items.end(), rng_);
    return items;
  }
  bool Coin() { return Int(0, 1) == 1; }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  template <typename T>
  T Pick(std::initializer_list<T> items) {
    return items.begin()[Int(0, static_cast<int>(items.size()) - 1)];
  }
  std::string Text(absl::string_view chars, int min, int max) {
    std::string out;
    for (int n = Int(min, max); n > 0; --n) {
      out.push_back(chars[Int(0, static_cast<int>(chars.size()) - 1)]);
    }
    return out;
  }
  // Valid but hostile key/value/pattern text: spaces, tabs, ';', '#', '\', quotes, JSON
  // metacharacters, control bytes other than LF/CR/NUL, multi-byte UTF-8.
  std::string Hostile() {
    static const std::vector<std::string> pieces = {
        " ",  "\t", ";",   "#",   "\\", "\"", "'",         "{",       "}",       "[",    "]",
        ",",  ":",  "@",   "@!1", "a",  "Z",  "0",         "\x01",    "\x1f",    "\x7f", "é",
        "日", "😀",  "\\;", "<<",  "/",  "%",  "show proc", "\\u0000", "\xc2\xa0"};
    std::string out;
    for (int n = Int(1, 8); n > 0; --n) out += pieces[Int(0, static_cast<int>(pieces.size()) - 1)];
    return out;
  }

  std::mt19937 rng_;
};

TEST(DesiredJsonTest, RoundTripsRandomValidStates) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    StateGenerator generator(seed);
    DesiredState state = generator.Next();
    std::string json = DesiredStateToJson(state);
    SCOPED_TRACE(absl::StrCat("seed ", seed, ": ", json.substr(0, 300)));
    absl::StatusOr<DesiredState> parsed = ParseDesiredState(json);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, state);
    EXPECT_EQ(DesiredStateToJson(*parsed), json);
    // Order in the document does not matter: the state is indexed by name and key.
    std::string shuffled_json = generator.ShuffledJson(state);
    absl::StatusOr<DesiredState> shuffled = ParseDesiredState(shuffled_json);
    ASSERT_TRUE(shuffled.ok()) << shuffled.status() << "\n" << shuffled_json.substr(0, 300);
    EXPECT_EQ(*shuffled, state);
    EXPECT_EQ(DesiredStateToJson(*shuffled), json);
  }
}

}  // namespace
}  // namespace hawk::model

#include "agent/model/delta_json.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/base/status_field.h"
#include "agent/model/desired_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"

namespace hawk::model {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Deltas have no operator==: tables compare by content (their order in the record is their
// own iteration order), everything else exactly.
void ExpectSameTables(const std::vector<TableDelta>& a, const std::vector<TableDelta>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].name);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].create, b[i].create);
    EXPECT_EQ(a[i].drop, b[i].drop);
    EXPECT_EQ(a[i].set, b[i].set);
    EXPECT_EQ(a[i].erase, b[i].erase);
  }
}

void ExpectSameDelta(const Delta& a, const Delta& b) {
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.generation, b.generation);
  ASSERT_EQ(a.backends.size(), b.backends.size());
  for (size_t i = 0; i < a.backends.size(); ++i) {
    SCOPED_TRACE(a.backends[i].name);
    EXPECT_EQ(a.backends[i].name, b.backends[i].name);
    EXPECT_EQ(a.backends[i].create, b.backends[i].create);
    EXPECT_EQ(a.backends[i].drop, b.backends[i].drop);
    EXPECT_EQ(a.backends[i].servers, b.backends[i].servers);
  }
  ExpectSameTables(a.maps, b.maps);
  ExpectSameTables(a.acls, b.acls);
}

void ExpectRoundTrip(const Delta& delta) {
  std::string json = DeltaToJson(delta);
  SCOPED_TRACE(json.substr(0, 400));
  absl::StatusOr<Delta> parsed = ParseDeltaJson(json);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ExpectSameDelta(*parsed, delta);
  // The record replays to the same state as the delta itself.
  EXPECT_EQ(StateFromDelta(*parsed), StateFromDelta(delta));
}

BackendDelta Backend(std::string name, bool create, bool drop,
                     std::vector<std::pair<std::string, absl::optional<ServerSpec>>> servers) {
  return BackendDelta{std::move(name), create, drop, std::move(servers)};
}

TableDelta Table(std::string name, bool create, bool drop,
                 std::vector<std::pair<std::string, std::string>> set,
                 std::vector<std::string> erase) {
  TableDelta t;
  t.name = std::move(name);
  t.create = create;
  t.drop = drop;
  for (const auto& [k, v] : set) t.set.Set(k, v);
  for (const std::string& k : erase) t.erase.Set(k, "");
  return t;
}

TEST(DeltaJsonTest, WritesTheDocumentedRecord) {
  Delta delta;
  delta.version = "v43";
  delta.generation = 43;
  delta.backends.push_back(
      Backend("be_app", true, false,
              {{"SRV_1", ServerSpec{"10.0.0.6", 8080, absl::nullopt, ServerState::kDrain}},
               {"SRV_2", absl::nullopt}}));
  delta.maps.push_back(Table("/etc/haproxy/hosts.map", false, false, {{"b.example.com", "be_b"}},
                             {"a.example.com"}));
  delta.acls.push_back(Table("/etc/haproxy/blocked.acl", false, false, {{"10.1.0.0/16", ""}}, {}));
  EXPECT_EQ(DeltaToJson(delta),
            R"({"version":"v43","generation":"43","backends":[{"name":"be_app","create":true,)"
            R"("drop":false,"servers":[{"name":"SRV_1","spec":{"address":"10.0.0.6","port":8080,)"
            R"("state":"DRAIN"}},{"name":"SRV_2"}]}],"maps":[{"name":"/etc/haproxy/hosts.map",)"
            R"("create":false,"drop":false,"set":["b.example.com","be_b"],)"
            R"("erase":["a.example.com"]}],"acls":[{"name":"/etc/haproxy/blocked.acl",)"
            R"("create":false,"drop":false,"set":["10.1.0.0/16"],"erase":[]}]})");
  EXPECT_EQ(DeltaToJson(Delta{}), R"({"version":"","backends":[],"maps":[],"acls":[]})");
  ExpectRoundTrip(delta);
}

TEST(DeltaJsonTest, RoundTripsRepresentativeDeltas) {
  ExpectRoundTrip(Delta{});
  Delta labels;  // a change of labels only
  labels.version = "v-9.a";
  labels.generation = int64_t{9223372036854775807};
  ExpectRoundTrip(labels);
  Delta zero;
  zero.generation = 0;
  ExpectRoundTrip(zero);

  Delta objects;
  objects.version = "v2";
  objects.backends = {
      Backend("created", true, false,
              {{"a", ServerSpec{"2001:db8::1", 1, 0, ServerState::kReady}},
               {"b", ServerSpec{"backend-1.example.com", 65535, 256, ServerState::kMaint}},
               {"c", ServerSpec{"10.0.0.1", absl::nullopt, absl::nullopt, absl::nullopt}}}),
      Backend("created-empty", true, false, {}),
      Backend("dropped", false, true, {}),
      Backend("edited", false, false,
              {{"removed", absl::nullopt}, {"x.y:z-0", ServerSpec{"::1", {}, {}, {}}}}),
  };
  objects.maps = {
      Table("/created.map", true, false, {{"k", "v"}, {"k2", "v2"}}, {}),
      Table("/created-empty.map", true, false, {}, {}),
      Table("/dropped.map", false, true, {}, {}),
      Table("/edited.map", false, false,
            {{"key with spaces", "value; with\\backslash"},
             {" \t;#\"'{}[],:@!1<<", "é 日本 😀 \x01\x7f"},
             {"\\", ";"},
             {std::string(kMaxEntryBytes, 'k'), std::string(kMaxEntryBytes, 'v')}},
            {"gone key", "a;b", "c\\d"}),
  };
  objects.acls = {
      Table("/created.acl", true, false, {{"10.0.0.0/8", ""}, {"pattern with space", ""}}, {}),
      Table("/dropped.acl", false, true, {}, {}),
      Table("/edited.acl", false, false, {{"p;1", ""}}, {"p\\2", "p 3"}),
  };
  ExpectRoundTrip(objects);

  // Large tables: written in O(n) in the table's own order, read back whole.
  Delta big;
  TableDelta map;
  map.name = "/big.map";
  map.create = true;
  for (int i = 0; i < 20000; ++i) map.set.Set(absl::StrCat("host-", i, ".example.com"), "be");
  big.maps.push_back(std::move(map));
  ExpectRoundTrip(big);
}

// What the journal stores for a state (compaction's delta from nothing) and for PUTs.
TEST(DeltaJsonTest, RoundTripsTheDeltasOfStates) {
  absl::StatusOr<DesiredState> a = ParseDesiredState(R"({"version": "v1", "generation": 1,
      "backends": [{"name": "be", "servers": [{"name": "s1", "address": "10.0.0.1", "port": 80},
                                              {"name": "s2", "address": "10.0.0.2"}]}],
      "maps": [{"name": "/m", "entries": [{"key": "a b", "value": "1"}, {"key": "c;d", "value": "2"}]}],
      "acls": [{"name": "/a", "patterns": ["x\\y"]}]})");
  absl::StatusOr<DesiredState> b = ParseDesiredState(R"({"version": "v2", "generation": 2,
      "backends": [{"name": "be", "servers": [{"name": "s1", "address": "10.0.0.1", "port": 81}]},
                   {"name": "new"}],
      "maps": [{"name": "/m", "entries": [{"key": "a b", "value": "9"}, {"key": "e", "value": "3"}]}]})");
  ASSERT_TRUE(a.ok() && b.ok());
  ExpectRoundTrip(DeltaFromState(*a));
  ExpectRoundTrip(DeltaFromState(*b));
  Delta diff = DiffStates(*a, *b);
  ExpectRoundTrip(diff);
  absl::StatusOr<Delta> parsed = ParseDeltaJson(DeltaToJson(diff));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  DesiredState replayed = *a;
  ApplyDelta(*parsed, &replayed);
  EXPECT_EQ(replayed, *b);
}

struct BadRecord {
  const char* what;
  std::string json;
  std::string field;
  std::string message;
};

TEST(DeltaJsonTest, RejectsMalformedRecords) {
  // A valid record around one bad piece.
  auto backend = [](absl::string_view members) {
    return absl::StrCat(R"({"version":"v","backends":[{"name":"ok"},{)", members, "}]}");
  };
  auto server = [](absl::string_view members) {
    return absl::StrCat(R"({"backends":[{"name":"be","servers":[{)", members, "}]}]}");
  };
  auto map = [](absl::string_view members) {
    return absl::StrCat(R"({"maps":[{)", members, "}]}");
  };
  auto acl = [](absl::string_view members) {
    return absl::StrCat(R"({"acls":[{)", members, "}]}");
  };
  const std::vector<BadRecord> cases = {
      {"not JSON", R"({"version":)", "", "journal record is not valid JSON"},
      {"truncated", R"({"backends":[{"name":"be")", "", "journal record is not valid JSON"},
      {"empty", "", "", "journal record is not valid JSON"},
      {"array", "[]", "", "journal record must be a JSON object, got an array"},
      {"unknown field", R"({"version":"v","upsert":{}})", "upsert", "unknown field"},
      {"duplicate key", R"({"version":"v","version":"w"})", "version",
       "duplicate key in the same object"},
      {"version space", R"({"version":"v 1"})", "version", "must be printable ASCII"},
      {"generation negative", R"({"generation":"-1"})", "generation",
       "must be an integer in 0..9223372036854775807"},
      {"generation fraction", R"({"generation":1.5})", "generation", "must be an integer"},
      {"backends object", R"({"backends":{}})", "backends", "must be an array, got an object"},
      {"backend string", R"({"backends":["be"]})", "backends[0]",
       "must be an object, got a string"},
      {"backend without name", backend(R"("create":true)"), "backends[1].name", "required"},
      {"backend name", backend(R"("name":"be;reload")"), "backends[1].name",
       "(byte ';' at offset 2)"},
      {"backend name LF", backend(R"("name":"be\nshow proc")"), "backends[1].name",
       "(byte 0x0a at offset 2)"},
      {"backend unknown", backend(R"("name":"be","entries":[])"), "backends[1].entries",
       "unknown field"},
      {"create type", backend(R"("name":"be","create":1)"), "backends[1].create",
       "must be a boolean, got a number"},
      {"drop type", backend(R"("name":"be","drop":"true")"), "backends[1].drop",
       "must be a boolean, got a string"},
      {"servers type", backend(R"("name":"be","servers":{})"), "backends[1].servers",
       "must be an array, got an object"},
      {"server without name", server(R"("spec":{"address":"10.0.0.1"})"),
       "backends[0].servers[0].name", "required"},
      {"server name", server(R"("name":"s 1")"), "backends[0].servers[0].name",
       "(byte space at offset 1)"},
      {"server unknown", server(R"("name":"s","port":80)"), "backends[0].servers[0].port",
       "unknown field"},
      {"spec type", server(R"("name":"s","spec":"10.0.0.1")"), "backends[0].servers[0].spec",
       "must be an object, got a string"},
      {"spec without address", server(R"("name":"s","spec":{"port":80})"),
       "backends[0].servers[0].spec.address", "required"},
      {"spec address", server(R"("name":"s","spec":{"address":"1.2.3.4; reload"})"),
       "backends[0].servers[0].spec.address", "must be an IPv4 or IPv6 literal or a hostname"},
      {"spec port", server(R"("name":"s","spec":{"address":"::1","port":0})"),
       "backends[0].servers[0].spec.port", "must be an integer in 1..65535, got 0"},
      {"spec weight", server(R"("name":"s","spec":{"address":"::1","weight":257})"),
       "backends[0].servers[0].spec.weight", "must be an integer in 0..256, got 257"},
      {"spec state", server(R"("name":"s","spec":{"address":"::1","state":"UP"})"),
       "backends[0].servers[0].spec.state", "must be one of"},
      {"spec unknown", server(R"("name":"s","spec":{"address":"::1","fqdn":"x"})"),
       "backends[0].servers[0].spec.fqdn", "unknown field"},
      {"map without name", map(R"("create":true)"), "maps[0].name", "required"},
      {"map name", map(R"("name":"relative.map")"), "maps[0].name",
       "must be an absolute file path"},
      {"map name space", map(R"("name":"/a b")"), "maps[0].name", "(byte space at offset 2)"},
      {"map set odd", map(R"("name":"/m","set":["k","v","k2"])"), "maps[0].set",
       "must hold key, value pairs"},
      {"map set type", map(R"("name":"/m","set":{"k":"v"})"), "maps[0].set",
       "must be an array, got an object"},
      {"map set item", map(R"("name":"/m","set":["k",1])"), "maps[0].set[1]",
       "must be a string, got a number"},
      {"map key LF", map(R"("name":"/m","set":["k\nreload","v"])"), "maps[0].set[0]",
       "must not contain LF, CR or NUL"},
      {"map value empty", map(R"("name":"/m","set":["k",""])"), "maps[0].set[1]",
       "must not be empty"},
      {"map value NUL", map(R"("name":"/m","set":["k","\u0000"])"), "maps[0].set[1]",
       "(byte 0x00 at offset 0)"},
      {"map erase CR", map(R"("name":"/m","erase":["a","b\r"])"), "maps[0].erase[1]",
       "(byte 0x0d at offset 1)"},
      {"map erase empty", map(R"("name":"/m","erase":[""])"), "maps[0].erase[0]",
       "must not be empty"},
      {"map unknown", map(R"("name":"/m","entries":[])"), "maps[0].entries", "unknown field"},
      {"acl pattern LF", acl(R"("name":"/a","set":["p","q\n"])"), "acls[0].set[1]",
       "must not contain LF, CR or NUL"},
      {"acl create type", acl(R"("name":"/a","create":null,"drop":"no")"), "acls[0].drop",
       "must be a boolean, got a string"},
      {"acls type", R"({"acls":"x"})", "acls", "must be an array, got a string"},
  };
  for (const BadRecord& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.what, ": ", c.json));
    absl::StatusOr<Delta> delta = ParseDeltaJson(c.json);
    ASSERT_FALSE(delta.ok());
    EXPECT_EQ(delta.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(base::FieldOf(delta.status()), c.field);
    EXPECT_THAT(std::string(delta.status().message()), HasSubstr(c.message));
    if (!c.field.empty()) {
      EXPECT_THAT(std::string(delta.status().message()), StartsWith(c.field + ": "));
    }
  }
}

// Members may come in any order and be null (absent), as in any proto3 JSON.
TEST(DeltaJsonTest, ReadsMembersInAnyOrder) {
  absl::StatusOr<Delta> delta = ParseDeltaJson(
      R"({"acls":null,"maps":[{"erase":["x"],"set":["k","v"],"name":"/m","drop":null}],
          "generation":7,"backends":[{"servers":[{"spec":{"port":"80","address":"::1"},"name":"s"}],
          "name":"be"}]})");
  ASSERT_TRUE(delta.ok()) << delta.status();
  EXPECT_EQ(delta->version, "");
  EXPECT_EQ(delta->generation, 7);
  ASSERT_EQ(delta->backends.size(), 1u);
  EXPECT_FALSE(delta->backends[0].create);
  ASSERT_EQ(delta->backends[0].servers.size(), 1u);
  EXPECT_EQ(delta->backends[0].servers[0].second, (ServerSpec{"::1", 80, {}, {}}));
  ASSERT_EQ(delta->maps.size(), 1u);
  EXPECT_EQ(delta->maps[0].set.Find("k"), absl::string_view("v"));
  EXPECT_TRUE(delta->maps[0].erase.Contains("x"));
  EXPECT_TRUE(delta->acls.empty());
}

}  // namespace
}  // namespace hawk::model

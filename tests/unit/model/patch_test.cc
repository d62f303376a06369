#include "agent/model/patch.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/base/status_field.h"
#include "agent/model/desired_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::model {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr absl::string_view kHeld = R"({"version": "v1", "generation": 1,
 "backends": [{"name": "be", "servers": [
    {"name": "s1", "address": "10.0.0.1", "port": 80},
    {"name": "s2", "address": "10.0.0.2", "port": 80, "weight": 10, "state": "DRAIN"}]},
   {"name": "other", "servers": [{"name": "x", "address": "app.example.com"}]}],
 "maps": [{"name": "/m", "entries": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"},
                                     {"key": "c", "value": "3"}]}],
 "acls": [{"name": "/a", "patterns": ["10.0.0.0/8", "192.0.2.1"]}]})";

DesiredState Held() {
  absl::StatusOr<DesiredState> state = ParseDesiredState(kHeld);
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? *std::move(state) : DesiredState{};
}

std::map<std::string, std::string> Contents(const StringTable& table) {
  std::map<std::string, std::string> out;
  table.ForEach([&out](absl::string_view k, absl::string_view v) { out.emplace(k, v); });
  return out;
}

// Parses `json` against `held`, resolves it and applies it: the state after the PATCH.
DesiredState Patched(absl::string_view json, DesiredState held = Held()) {
  absl::StatusOr<StatePatch> patch = ParseStatePatch(json, held);
  EXPECT_TRUE(patch.ok()) << patch.status();
  if (!patch.ok()) return held;
  DesiredState state = held;
  AppliedDelta applied = ApplyDelta(PatchToDelta(*patch, held), &state);
  // Whatever a PATCH makes is a state a PUT would accept.
  absl::StatusOr<DesiredState> reparsed = ParseDesiredState(DesiredStateToJson(state));
  EXPECT_TRUE(reparsed.ok()) << reparsed.status();
  if (reparsed.ok()) {
    EXPECT_EQ(*reparsed, state);
  }
  // And it undoes exactly.
  DesiredState undone = state;
  UndoDelta(std::move(applied.undo), &undone);
  EXPECT_EQ(undone, held);
  return state;
}

// ---- Errors: each names its field ----

struct ErrorCase {
  const char* what;
  std::string json;
  std::string field;    // "" for errors about the whole body
  std::string message;  // a part of the message
};

std::vector<ErrorCase> ErrorCases() {
  const std::string kGeneration = "must be an integer in 0..9223372036854775807";
  const std::string kConflict = "is also upserted: a PATCH either upserts or removes an object";
  return {
      // The body.
      {"not JSON", "{", "", "state patch is not valid JSON"},
      {"empty body", "", "", "state patch is not valid JSON"},
      {"array", "[]", "", "state patch must be a JSON object, got an array"},
      {"invalid UTF-8", "{\"version\":\"\xff\"}", "", "not valid UTF-8"},

      // Top-level fields.
      {"unknown field", R"({"foo": 1})", "foo", "unknown field"},
      {"snake case", R"({"base_generation": 1})", "base_generation", "unknown field"},
      {"duplicate key", R"({"generation": 1, "generation": 2})", "generation",
       "duplicate key in the same object"},
      {"generation negative", R"({"generation": -1})", "generation", kGeneration + ", got -1"},
      {"generation fraction", R"({"generation": 1.5})", "generation", kGeneration},
      {"generation string", R"({"generation": "4x"})", "generation", kGeneration + R"(, got "4x")"},
      {"baseGeneration negative", R"({"baseGeneration": -3})", "baseGeneration",
       kGeneration + ", got -3"},
      {"baseGeneration bool", R"({"baseGeneration": true})", "baseGeneration",
       kGeneration + ", got a boolean"},
      {"version space", R"({"version": "v 2"})", "version",
       "must be printable ASCII without spaces"},
      {"version type", R"({"version": 2})", "version", "must be a string, got a number"},
      {"upsert type", R"({"upsert": []})", "upsert", "must be an object, got an array"},
      {"remove type", R"({"remove": "be"})", "remove", "must be an object, got a string"},

      // Upserts: the document's rules, under `upsert.`.
      {"upsert unknown list", R"({"upsert": {"services": []}})", "upsert.services",
       "unknown field"},
      {"upsert bad backend", R"({"upsert": {"backends": [{"name": "be;reload"}]}})",
       "upsert.backends[0].name", "(byte ';' at offset 2)"},
      {"upsert bad port",
       R"({"upsert": {"backends": [{"name": "be", "servers": [{"name": "s1"},)"
       R"({"name": "s2", "port": 0}]}]}})",
       "upsert.backends[0].servers[1].port", "must be an integer in 1..65535, got 0"},
      {"upsert bad address",
       R"({"upsert": {"backends": [{"name": "be", "servers": [{"name": "s1", "address": "1.2.3.4;x"}]}]}})",
       "upsert.backends[0].servers[0].address", "must be an IPv4 or IPv6 literal or a hostname"},
      {"upsert empty address",
       R"({"upsert": {"backends": [{"name": "be", "servers": [{"name": "s1", "address": ""}]}]}})",
       "upsert.backends[0].servers[0].address", "must not be empty"},
      {"upsert server without name",
       R"({"upsert": {"backends": [{"name": "be", "servers": [{"port": 81}]}]}})",
       "upsert.backends[0].servers[0].name", "required"},
      {"upsert duplicate server",
       R"({"upsert": {"backends": [{"name": "be", "servers": [{"name": "s1"}, {"name": "s1"}]}]}})",
       "upsert.backends[0].servers[1].name", R"(duplicate server name "s1" (also servers[0]))"},
      {"upsert duplicate backend", R"({"upsert": {"backends": [{"name": "be"}, {"name": "be"}]}})",
       "upsert.backends[1].name", R"(duplicate backend name "be" (also backends[0]))"},
      {"upsert duplicate key",
       R"({"upsert": {"maps": [{"name": "/m", "entries": [{"key": "k", "value": "1"},)"
       R"({"key": "j", "value": "2"}, {"key": "k", "value": "3"}]}]}})",
       "upsert.maps[0].entries[2].key", R"(duplicate key "k" (also entries[0]))"},
      {"upsert duplicate pattern",
       R"({"upsert": {"acls": [{"name": "/a", "patterns": ["p", "p"]}]}})",
       "upsert.acls[0].patterns[1]", R"(duplicate pattern "p" (also patterns[0]))"},
      {"upsert value LF",
       R"({"upsert": {"maps": [{"name": "/m", "entries": [{"key": "k", "value": "v\nreload"}]}]}})",
       "upsert.maps[0].entries[0].value", "must not contain LF, CR or NUL"},
      {"upsert entry without value",
       R"({"upsert": {"maps": [{"name": "/m", "entries": [{"key": "k"}]}]}})",
       "upsert.maps[0].entries[0].value", "required (HAProxy maps need a value)"},
      {"upsert map name", R"({"upsert": {"maps": [{"name": "m"}]}})", "upsert.maps[0].name",
       "must be an absolute file path"},

      // A new server needs an address; a held one does not.
      {"new server in a held backend",
       R"({"upsert": {"backends": [{"name": "be", "servers": [{"name": "s1", "weight": 1},)"
       R"({"name": "s9", "port": 81}]}]}})",
       "upsert.backends[0].servers[1].address", "required for a server hawk does not manage yet"},
      {"new server in a new backend",
       R"({"upsert": {"backends": [{"name": "be"}, {"name": "new", "servers": [{"name": "n1"}]}]}})",
       "upsert.backends[1].servers[0].address", "required for a server hawk does not manage yet"},
      {"a held server's name in another backend",
       R"({"upsert": {"backends": [{"name": "other", "servers": [{"name": "s1", "weight": 3}]}]}})",
       "upsert.backends[0].servers[0].address", "required for a server hawk does not manage yet"},

      // Removals.
      {"remove unknown list", R"({"remove": {"servers": []}})", "remove.servers", "unknown field"},
      {"remove backends type", R"({"remove": {"backends": {"name": "be"}}})", "remove.backends",
       "must be an array, got an object"},
      {"remove backend string", R"({"remove": {"backends": ["be"]}})", "remove.backends[0]",
       "must be an object, got a string"},
      {"remove backend without name", R"({"remove": {"backends": [{"servers": ["s1"]}]}})",
       "remove.backends[0].name", "required"},
      {"remove backend name", R"({"remove": {"backends": [{"name": "be x"}]}})",
       "remove.backends[0].name", "(byte space at offset 2)"},
      {"remove duplicate backend", R"({"remove": {"backends": [{"name": "be"}, {"name": "be"}]}})",
       "remove.backends[1].name", R"(duplicate name "be" (also backends[0]))"},
      {"remove server name",
       R"({"remove": {"backends": [{"name": "be", "servers": ["s1", "s2;reload"]}]}})",
       "remove.backends[0].servers[1]", "(byte ';' at offset 2)"},
      {"remove server type", R"({"remove": {"backends": [{"name": "be", "servers": [1]}]}})",
       "remove.backends[0].servers[0]", "must be a string, got a number"},
      {"remove backend keys", R"({"remove": {"backends": [{"name": "be", "keys": ["s1"]}]}})",
       "remove.backends[0].keys", "unknown field"},
      {"remove map name", R"({"remove": {"maps": [{"name": "/m;x"}]}})", "remove.maps[0].name",
       "(byte ';' at offset 2)"},
      {"remove map key LF", R"({"remove": {"maps": [{"name": "/m", "keys": ["a", "b\nc"]}]}})",
       "remove.maps[0].keys[1]", "must not contain LF, CR or NUL"},
      {"remove map key empty", R"({"remove": {"maps": [{"name": "/m", "keys": [""]}]}})",
       "remove.maps[0].keys[0]", "must not be empty"},
      {"remove map patterns", R"({"remove": {"maps": [{"name": "/m", "patterns": ["a"]}]}})",
       "remove.maps[0].patterns", "unknown field"},
      {"remove acl keys", R"({"remove": {"acls": [{"name": "/a", "keys": ["a"]}]}})",
       "remove.acls[0].keys", "unknown field"},
      {"remove acl pattern NUL",
       R"({"remove": {"acls": [{"name": "/a", "patterns": ["\u0000"]}]}})",
       "remove.acls[0].patterns[0]", "(byte 0x00 at offset 0)"},
      {"remove duplicate map",
       R"({"remove": {"maps": [{"name": "/m"}, {"name": "/x"}, {"name": "/m"}]}})",
       "remove.maps[2].name", R"(duplicate name "/m" (also maps[0]))"},

      // Upserted and removed: refused, whatever the member order.
      {"backend both",
       R"({"upsert": {"backends": [{"name": "be"}]}, "remove": {"backends": [{"name": "be", "whole": true}]}})",
       "remove.backends[0]", "backend be " + kConflict},
      {"backend both, remove first",
       R"({"remove": {"backends": [{"name": "other"}, {"name": "be", "whole": true}]}, "upsert": {"backends": [{"name": "be"}]}})",
       "remove.backends[1]", "backend be " + kConflict},
      {"server both",
       R"({"upsert": {"backends": [{"name": "be", "servers": [{"name": "s1", "weight": 5}]}]},)"
       R"("remove": {"backends": [{"name": "be", "servers": ["s2", "s1"]}]}})",
       "remove.backends[0].servers", "server be/s1 " + kConflict},
      {"map both",
       R"({"upsert": {"maps": [{"name": "/m"}]}, "remove": {"maps": [{"name": "/m", "whole": true}]}})",
       "remove.maps[0]", "map /m " + kConflict},
      {"key both",
       R"({"upsert": {"maps": [{"name": "/m", "entries": [{"key": "a b", "value": "9"}]}]},)"
       R"("remove": {"maps": [{"name": "/m", "keys": ["c", "a b"]}]}})",
       "remove.maps[0].keys", R"(key "a b" )" + kConflict},
      {"acl both",
       R"({"upsert": {"acls": [{"name": "/a"}]}, "remove": {"acls": [{"name": "/a", "whole": true}]}})",
       "remove.acls[0]", "ACL /a " + kConflict},
      {"pattern both",
       R"({"upsert": {"acls": [{"name": "/a", "patterns": ["p"]}]},)"
       R"("remove": {"acls": [{"name": "/a", "patterns": ["p"]}]}})",
       "remove.acls[0].patterns", R"(pattern "p" )" + kConflict},
  };
}

TEST(PatchTest, EveryErrorNamesItsField) {
  DesiredState held = Held();
  for (const ErrorCase& c : ErrorCases()) {
    SCOPED_TRACE(absl::StrCat(c.what, ": ", c.json));
    absl::StatusOr<StatePatch> patch = ParseStatePatch(c.json, held);
    ASSERT_FALSE(patch.ok());
    EXPECT_EQ(patch.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(base::FieldOf(patch.status()), c.field);
    EXPECT_THAT(std::string(patch.status().message()), HasSubstr(c.message));
    if (!c.field.empty()) {
      EXPECT_THAT(std::string(patch.status().message()), StartsWith(c.field + ": "));
    }
  }
}

// The state after the PATCH stays within the document limits (desired_json.h).
TEST(PatchTest, LimitsCountWhatTheStateWouldHold) {
  struct Case {
    const char* what;
    std::function<void(DesiredState*)> fill;
    std::string ok_json;  // at the limit
    std::string over_json;
    std::string field;
    std::string message;
  };
  auto entries = [](size_t n) {
    StringTable table;
    table.Reserve(n, n * 8);
    for (size_t i = 0; i < n; ++i) table.Set(absl::StrCat("k", i), "v");
    return table;
  };
  std::vector<Case> cases = {
      {"backends",
       [](DesiredState* s) {
         for (size_t i = 0; i < kMaxBackends; ++i) s->backends[absl::StrCat("b", i)];
       },
       R"({"upsert": {"backends": [{"name": "b7"}]}})",
       R"({"upsert": {"backends": [{"name": "b7"}, {"name": "new"}]}})", "upsert.backends",
       absl::StrCat("would make ", kMaxBackends + 1, " backends; at most ", kMaxBackends)},
      {"servers",
       [](DesiredState* s) {
         auto& servers = s->backends["big"].servers;
         for (size_t i = 0; i < kMaxServersPerBackend; ++i) {
           servers[absl::StrCat("s", i)] = ServerSpec{"10.0.0.1", {}, {}, {}};
         }
       },
       R"({"upsert": {"backends": [{"name": "big", "servers": [{"name": "s1", "weight": 1}]}]}})",
       R"({"upsert": {"backends": [{"name": "small"}, {"name": "big", "servers": [)"
       R"({"name": "s1", "weight": 1}, {"name": "new", "address": "10.0.0.9"}]}]}})",
       "upsert.backends[1].servers",
       absl::StrCat("would make ", kMaxServersPerBackend + 1, " servers in backend big; at most ",
                    kMaxServersPerBackend)},
      {"maps",
       [](DesiredState* s) {
         for (size_t i = 0; i < kMaxMaps; ++i) s->maps[absl::StrCat("/m", i)];
       },
       R"({"upsert": {"maps": [{"name": "/m3"}]}})", R"({"upsert": {"maps": [{"name": "/new"}]}})",
       "upsert.maps", absl::StrCat("would make ", kMaxMaps + 1, " maps; at most ", kMaxMaps)},
      {"ACLs",
       [](DesiredState* s) {
         for (size_t i = 0; i < kMaxAcls; ++i) s->acls[absl::StrCat("/a", i)];
       },
       R"({"upsert": {"acls": [{"name": "/a3"}]}})", R"({"upsert": {"acls": [{"name": "/new"}]}})",
       "upsert.acls", absl::StrCat("would make ", kMaxAcls + 1, " ACLs; at most ", kMaxAcls)},
      {"map entries", [&](DesiredState* s) { s->maps["/big"] = entries(kMaxMapEntries); },
       R"({"upsert": {"maps": [{"name": "/big", "entries": [{"key": "k5", "value": "w"}]}]}})",
       R"({"upsert": {"maps": [{"name": "/x"}, {"name": "/big", "entries": [)"
       R"({"key": "k5", "value": "w"}, {"key": "new", "value": "w"}]}]}})",
       "upsert.maps[1].entries",
       absl::StrCat("would make ", kMaxMapEntries + 1, " entries in /big; at most ",
                    kMaxMapEntries)},
      {"ACL patterns", [&](DesiredState* s) { s->acls["/big"] = entries(kMaxAclPatterns); },
       R"({"upsert": {"acls": [{"name": "/big", "patterns": ["k5"]}]}})",
       R"({"upsert": {"acls": [{"name": "/big", "patterns": ["k5", "new"]}]}})",
       "upsert.acls[0].patterns",
       absl::StrCat("would make ", kMaxAclPatterns + 1, " patterns in /big; at most ",
                    kMaxAclPatterns)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    DesiredState held;
    c.fill(&held);
    absl::StatusOr<StatePatch> ok = ParseStatePatch(c.ok_json, held);
    EXPECT_TRUE(ok.ok()) << ok.status();
    absl::StatusOr<StatePatch> over = ParseStatePatch(c.over_json, held);
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(base::FieldOf(over.status()), c.field);
    EXPECT_THAT(std::string(over.status().message()), HasSubstr(c.message));
  }
}

TEST(PatchTest, ReadsGenerationsAndVersion) {
  DesiredState held = Held();
  absl::StatusOr<StatePatch> patch =
      ParseStatePatch(R"({"generation": "9223372036854775807", "baseGeneration": 1,
                          "version": "v2"})",
                      held);
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_EQ(patch->generation, int64_t{9223372036854775807});
  EXPECT_EQ(patch->base_generation, 1);
  EXPECT_EQ(patch->version, "v2");

  absl::StatusOr<StatePatch> empty = ParseStatePatch("{}", held);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->generation, absl::nullopt);
  EXPECT_EQ(empty->base_generation, absl::nullopt);
  EXPECT_EQ(empty->version, absl::nullopt);
  // null is absent (proto3).
  absl::StatusOr<StatePatch> nulls = ParseStatePatch(
      R"({"generation": null, "baseGeneration": null, "version": null, "upsert": null,
          "remove": null})",
      held);
  ASSERT_TRUE(nulls.ok()) << nulls.status();
  EXPECT_EQ(nulls->generation, absl::nullopt);
  EXPECT_EQ(nulls->version, absl::nullopt);
  // `version` is an optional string: "" is present, and clears the label.
  absl::StatusOr<StatePatch> cleared =
      ParseStatePatch(R"({"version": "", "baseGeneration": "0"})", held);
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  EXPECT_EQ(cleared->version, "");
  EXPECT_EQ(cleared->base_generation, 0);
  EXPECT_EQ(PatchToDelta(*cleared, held).version, "");
}

TEST(PatchTest, KeepsTheVersionAndGenerationWhenAbsent) {
  DesiredState held = Held();
  absl::StatusOr<StatePatch> patch = ParseStatePatch(
      R"({"upsert": {"backends": [{"name": "be", "servers": [{"name": "s1", "weight": 7}]}]}})",
      held);
  ASSERT_TRUE(patch.ok()) << patch.status();
  Delta delta = PatchToDelta(*patch, held);
  EXPECT_EQ(delta.version, "v1");
  EXPECT_EQ(delta.generation, 1);
  absl::StatusOr<StatePatch> labelled =
      ParseStatePatch(R"({"generation": 5, "version": "v5"})", held);
  ASSERT_TRUE(labelled.ok()) << labelled.status();
  Delta labels = PatchToDelta(*labelled, held);
  EXPECT_EQ(labels.version, "v5");
  EXPECT_EQ(labels.generation, 5);
  EXPECT_TRUE(labels.empty());
}

TEST(PatchTest, MergesPartialServers) {
  DesiredState state = Patched(R"({"upsert": {"backends": [{"name": "be", "servers": [
      {"name": "s2", "weight": 50},
      {"name": "s1", "address": "10.0.0.9"},
      {"name": "s3", "address": "backend-3.example.com", "state": "MAINT"}]}]}})");
  // Listed fields replace; the others are kept.
  EXPECT_EQ(*state.FindServer("be", "s2"), (ServerSpec{"10.0.0.2", 80, 50, ServerState::kDrain}));
  EXPECT_EQ(*state.FindServer("be", "s1"),
            (ServerSpec{"10.0.0.9", 80, absl::nullopt, absl::nullopt}));
  EXPECT_EQ(*state.FindServer("be", "s3"), (ServerSpec{"backend-3.example.com", absl::nullopt,
                                                       absl::nullopt, ServerState::kMaint}));
  EXPECT_EQ(*state.FindServer("other", "x"), (ServerSpec{"app.example.com", {}, {}, {}}));
  EXPECT_EQ(state.version, "v1");
  EXPECT_EQ(state.generation, 1);
  // A listed field set to its held value changes nothing.
  DesiredState held = Held();
  absl::StatusOr<StatePatch> same = ParseStatePatch(
      R"({"upsert": {"backends": [{"name": "be", "servers": [{"name": "s1", "port": 80}]}]}})",
      held);
  ASSERT_TRUE(same.ok()) << same.status();
  DesiredState copy = held;
  EXPECT_TRUE(ApplyDelta(PatchToDelta(*same, held), &copy).summary.empty());
  EXPECT_EQ(copy, held);
}

TEST(PatchTest, UpsertsTablesByKey) {
  DesiredState state = Patched(R"({"upsert": {
      "maps": [{"name": "/m", "entries": [{"key": "a", "value": "10"}, {"key": "z z;\\", "value": "26"}]},
               {"name": "/new.map", "entries": [{"key": "k", "value": "v"}]}],
      "acls": [{"name": "/a", "patterns": ["198.51.100.0/24"]}, {"name": "/new.acl"}]}})");
  EXPECT_EQ(
      Contents(*state.FindMap("/m")),
      (std::map<std::string, std::string>{{"a", "10"}, {"b", "2"}, {"c", "3"}, {"z z;\\", "26"}}));
  EXPECT_EQ(Contents(*state.FindMap("/new.map")), (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_EQ(Contents(*state.FindAcl("/a")),
            (std::map<std::string, std::string>{
                {"10.0.0.0/8", ""}, {"192.0.2.1", ""}, {"198.51.100.0/24", ""}}));
  ASSERT_NE(state.FindAcl("/new.acl"), nullptr);  // managed, empty
  EXPECT_TRUE(state.FindAcl("/new.acl")->empty());

  // A table not managed yet becomes managed with exactly what is upserted: replaced everywhere.
  DesiredState held = Held();
  absl::StatusOr<StatePatch> patch = ParseStatePatch(
      R"({"upsert": {"maps": [{"name": "/new.map", "entries": [{"key": "k", "value": "v"}]}]}})",
      held);
  ASSERT_TRUE(patch.ok()) << patch.status();
  Delta delta = PatchToDelta(*patch, held);
  ASSERT_EQ(delta.maps.size(), 1u);
  EXPECT_TRUE(delta.maps[0].create);
  AppliedDelta applied = ApplyDelta(delta, &held);
  ASSERT_EQ(applied.summary.maps.size(), 1u);
  EXPECT_TRUE(applied.summary.maps[0].replace);
}

TEST(PatchTest, UpsertsNewBackends) {
  DesiredState held = Held();
  absl::StatusOr<StatePatch> patch = ParseStatePatch(
      R"({"upsert": {"backends": [{"name": "new", "servers": [{"name": "n1", "address": "::1"}]},
                                  {"name": "empty"}]}})",
      held);
  ASSERT_TRUE(patch.ok()) << patch.status();
  Delta delta = PatchToDelta(*patch, held);
  ASSERT_EQ(delta.backends.size(), 2u);
  EXPECT_EQ(delta.backends[0].name, "empty");  // sorted by name
  EXPECT_TRUE(delta.backends[0].create);
  EXPECT_EQ(delta.backends[1].name, "new");
  EXPECT_TRUE(delta.backends[1].create);
  DesiredState state = Patched(
      R"({"upsert": {"backends": [{"name": "new", "servers": [{"name": "n1", "address": "::1"}]},
                                  {"name": "empty"}]}})");
  EXPECT_EQ(*state.FindServer("new", "n1"), (ServerSpec{"::1", {}, {}, {}}));
  ASSERT_TRUE(state.backends.contains("empty"));
  EXPECT_TRUE(state.backends.at("empty").servers.empty());
}

TEST(PatchTest, RemovesServersEntriesAndPatterns) {
  DesiredState state = Patched(R"({"version": "v2", "generation": 2, "remove": {
      "backends": [{"name": "be", "servers": ["s1", "s1"]}],
      "maps": [{"name": "/m", "keys": ["a", "c"]}],
      "acls": [{"name": "/a", "patterns": ["192.0.2.1"]}]}})");
  EXPECT_EQ(state.FindServer("be", "s1"), nullptr);
  EXPECT_NE(state.FindServer("be", "s2"), nullptr);
  EXPECT_EQ(Contents(*state.FindMap("/m")), (std::map<std::string, std::string>{{"b", "2"}}));
  EXPECT_EQ(Contents(*state.FindAcl("/a")),
            (std::map<std::string, std::string>{{"10.0.0.0/8", ""}}));
  EXPECT_EQ(state.version, "v2");
  EXPECT_EQ(state.generation, 2);
}

TEST(PatchTest, RemovingWhatIsNotThereIsANoOp) {
  DesiredState held = Held();
  absl::StatusOr<StatePatch> patch = ParseStatePatch(R"({"remove": {
      "backends": [{"name": "nope"}, {"name": "gone", "servers": ["x"]}, {"name": "be", "servers": ["s9"]}],
      "maps": [{"name": "/nope"}, {"name": "/m", "keys": ["zzz"]}, {"name": "/gone", "keys": ["a"]}],
      "acls": [{"name": "/nope", "patterns": ["p"]}, {"name": "/a", "patterns": ["p"]}]}})",
                                                     held);
  ASSERT_TRUE(patch.ok()) << patch.status();
  Delta delta = PatchToDelta(*patch, held);
  // Nothing about objects hawk does not hold (an erase in a table not held would manage it).
  for (const BackendDelta& b : delta.backends) EXPECT_EQ(b.name, "be");
  for (const TableDelta& t : delta.maps) EXPECT_EQ(t.name, "/m");
  for (const TableDelta& t : delta.acls) EXPECT_EQ(t.name, "/a");
  DesiredState state = held;
  AppliedDelta applied = ApplyDelta(delta, &state);
  EXPECT_TRUE(applied.summary.empty());
  EXPECT_EQ(state, held);
}

TEST(PatchTest, RemovesWholeObjects) {
  DesiredState held = Held();
  absl::StatusOr<StatePatch> patch = ParseStatePatch(
      R"({"remove": {"backends": [{"name": "be", "whole": true}], "maps": [{"name": "/m", "whole": true}],
                     "acls": [{"name": "/a", "whole": true}]}})",
      held);
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_TRUE(patch->remove_backends.at("be").whole);
  EXPECT_TRUE(patch->remove_maps.at("/m").whole);
  EXPECT_TRUE(patch->remove_acls.at("/a").whole);
  Delta delta = PatchToDelta(*patch, held);
  ASSERT_EQ(delta.backends.size(), 1u);
  EXPECT_TRUE(delta.backends[0].drop);
  DesiredState state = held;
  AppliedDelta applied = ApplyDelta(delta, &state);
  EXPECT_FALSE(state.backends.contains("be"));
  EXPECT_TRUE(state.backends.contains("other"));
  EXPECT_EQ(state.FindMap("/m"), nullptr);
  EXPECT_EQ(state.FindAcl("/a"), nullptr);
  EXPECT_EQ(applied.summary.backends_dropped, std::vector<std::string>{"be"});
  EXPECT_EQ(applied.summary.servers.size(), 2u);  // s1 and s2, no longer managed
  for (const ServerChange& c : applied.summary.servers) EXPECT_FALSE(c.managed_after);
  ASSERT_EQ(applied.summary.maps.size(), 1u);
  EXPECT_TRUE(applied.summary.maps[0].dropped);
  Patched(
      R"({"remove": {"backends": [{"name": "be", "whole": true}], "maps": [{"name": "/m", "whole": true}]}})");

  // Named without a list, or with an empty one, removes nothing: proto3 printers omit empty
  // lists, and that must never mean "everything".
  EXPECT_EQ(Patched(R"({"remove": {"backends": [{"name": "be"}], "maps": [{"name": "/m"}]}})"),
            held);
  // whole with a list is refused.
  EXPECT_EQ(ParseStatePatch(
                R"({"remove": {"maps": [{"name": "/m", "whole": true, "keys": ["a"]}]}})", held)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<StatePatch> empty_lists = ParseStatePatch(
      R"({"remove": {"backends": [{"name": "be", "servers": []}], "maps": [{"name": "/m", "keys": []}]}})",
      held);
  ASSERT_TRUE(empty_lists.ok()) << empty_lists.status();
  EXPECT_FALSE(empty_lists->remove_backends.at("be").whole);
  EXPECT_FALSE(empty_lists->remove_maps.at("/m").whole);
  EXPECT_EQ(Patched(R"({"remove": {"backends": [{"name": "be", "servers": []}]}})"), held);
}

// Upserting some keys of a map and removing others in one PATCH: each key changes once, with
// its value before.
TEST(PatchTest, UpsertAndRemoveInOneTable) {
  DesiredState held = Held();
  absl::StatusOr<StatePatch> patch = ParseStatePatch(
      R"({"upsert": {"maps": [{"name": "/m", "entries": [{"key": "a", "value": "10"}, {"key": "d", "value": "4"}]}],
                     "backends": [{"name": "be", "servers": [{"name": "s1", "port": 81}]}]},
          "remove": {"maps": [{"name": "/m", "keys": ["b"]}],
                     "backends": [{"name": "be", "servers": ["s2"]}]}})",
      held);
  ASSERT_TRUE(patch.ok()) << patch.status();
  DesiredState state = held;
  AppliedDelta applied = ApplyDelta(PatchToDelta(*patch, held), &state);
  EXPECT_EQ(Contents(*state.FindMap("/m")),
            (std::map<std::string, std::string>{{"a", "10"}, {"c", "3"}, {"d", "4"}}));
  EXPECT_EQ(state.FindServer("be", "s1")->port, 81);
  EXPECT_EQ(state.FindServer("be", "s2"), nullptr);
  std::map<std::string, absl::optional<std::string>> keys;  // key → value before
  for (const TableChange& change : applied.summary.maps) {
    EXPECT_EQ(change.name, "/m");
    EXPECT_FALSE(change.replace);
    change.existed.ForEach([&](absl::string_view k, absl::string_view v) {
      EXPECT_TRUE(keys.emplace(k, std::string(v)).second) << k;
    });
    change.was_absent.ForEach([&](absl::string_view k, absl::string_view) {
      EXPECT_TRUE(keys.emplace(k, absl::nullopt).second) << k;
    });
  }
  EXPECT_EQ(keys, (std::map<std::string, absl::optional<std::string>>{
                      {"a", "1"}, {"b", "2"}, {"d", absl::nullopt}}));
  EXPECT_EQ(applied.summary.servers.size(), 2u);
  UndoDelta(std::move(applied.undo), &state);
  EXPECT_EQ(state, held);
}

}  // namespace
}  // namespace hawk::model

#include "agent/model/delta.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/base/json_writer.h"
#include "agent/model/desired_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_oracle.h"
#include "tests/unit/model/state_generator.h"

namespace hawk::model {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

ServerSpec Spec(std::string address, absl::optional<int> port = absl::nullopt,
                absl::optional<int> weight = absl::nullopt,
                absl::optional<ServerState> state = absl::nullopt) {
  return ServerSpec{std::move(address), port, weight, state};
}

StringTable Table(std::initializer_list<std::pair<absl::string_view, absl::string_view>> entries) {
  StringTable table;
  for (const auto& [key, value] : entries) table.Set(key, value);
  return table;
}

std::map<std::string, std::string> Contents(const StringTable& table) {
  std::map<std::string, std::string> out;
  table.ForEach([&out](absl::string_view k, absl::string_view v) { out.emplace(k, v); });
  return out;
}

// ---- What a summary must say, computed from the states before and after ----

using ServerKey = std::pair<std::string, std::string>;

std::set<ServerKey> AllServers(const DesiredState& a, const DesiredState& b) {
  std::set<ServerKey> out;
  for (const DesiredState* s : {&a, &b}) {
    for (const auto& [backend, servers] : s->backends) {
      for (const auto& [server, spec] : servers.servers) out.emplace(backend, server);
    }
  }
  return out;
}

absl::optional<ServerSpec> SpecIn(const DesiredState& state, const ServerKey& key) {
  const ServerSpec* spec = state.FindServer(key.first, key.second);
  return spec == nullptr ? absl::nullopt : absl::optional<ServerSpec>(*spec);
}

// Checks `summary` against the change from `before` to `after`: each changed object once, with
// its value before, and nothing else.
void ExpectSummaryDescribes(const ChangeSummary& summary, const DesiredState& before,
                            const DesiredState& after) {
  EXPECT_EQ(summary.version, after.version);
  EXPECT_EQ(summary.generation, after.generation);
  // Servers.
  std::set<ServerKey> listed;
  for (const ServerChange& change : summary.servers) {
    ServerKey key(change.backend, change.server);
    SCOPED_TRACE(absl::StrCat("server ", key.first, "/", key.second));
    EXPECT_TRUE(listed.insert(key).second) << "listed twice";
    EXPECT_EQ(change.before, SpecIn(before, key));
    EXPECT_EQ(change.managed_after, SpecIn(after, key).has_value());
  }
  for (const ServerKey& key : AllServers(before, after)) {
    if (SpecIn(before, key) != SpecIn(after, key)) {
      EXPECT_TRUE(listed.contains(key))
          << "changed, not listed: " << key.first << "/" << key.second;
    } else {
      EXPECT_FALSE(listed.contains(key)) << "unchanged, listed: " << key.first << "/" << key.second;
    }
  }
  // Backends.
  std::vector<std::string> created, dropped;
  for (const auto& [name, backend] : after.backends) {
    if (!before.backends.contains(name)) created.push_back(name);
  }
  for (const auto& [name, backend] : before.backends) {
    if (!after.backends.contains(name)) dropped.push_back(name);
  }
  std::vector<std::string> summary_created = summary.backends_created;
  std::vector<std::string> summary_dropped = summary.backends_dropped;
  for (auto* v : {&created, &dropped, &summary_created, &summary_dropped}) {
    std::sort(v->begin(), v->end());
  }
  EXPECT_EQ(summary_created, created);
  EXPECT_EQ(summary_dropped, dropped);
  // Tables.
  auto tables = [](const std::vector<TableChange>& changes,
                   const absl::flat_hash_map<std::string, StringTable>& from,
                   const absl::flat_hash_map<std::string, StringTable>& to, const char* what) {
    std::set<std::string> names;
    for (const TableChange& change : changes) {
      SCOPED_TRACE(absl::StrCat(what, " ", change.name));
      EXPECT_TRUE(names.insert(change.name).second) << "listed twice";
      auto was = from.find(change.name);
      auto now = to.find(change.name);
      if (now == to.end()) {
        EXPECT_TRUE(change.dropped);
        EXPECT_NE(was, from.end());
        continue;
      }
      EXPECT_FALSE(change.dropped);
      if (was == from.end()) {
        EXPECT_TRUE(change.replace) << "a newly managed table is replaced";
        continue;
      }
      // Held before and after: exactly the keys that differ, each with its value before.
      std::set<std::string> differing;
      was->second.ForEach([&](absl::string_view k, absl::string_view v) {
        if (now->second.Find(k) != absl::optional<absl::string_view>(v)) differing.emplace(k);
      });
      now->second.ForEach([&](absl::string_view k, absl::string_view) {
        if (!was->second.Contains(k)) differing.emplace(k);
      });
      EXPECT_FALSE(differing.empty()) << "listed without a change";
      double limit = std::max(static_cast<double>(kReplaceMinKeys),
                              kReplaceAboveFraction * static_cast<double>(now->second.size()));
      EXPECT_EQ(change.replace, static_cast<double>(differing.size()) > limit);
      if (change.replace) {
        EXPECT_EQ(change.changed_keys(), 0u);
        continue;
      }
      EXPECT_EQ(change.changed_keys(), differing.size());
      change.existed.ForEach([&](absl::string_view k, absl::string_view v) {
        EXPECT_EQ(was->second.Find(k), absl::optional<absl::string_view>(v)) << k;
        EXPECT_TRUE(differing.contains(std::string(k))) << k;
      });
      change.was_absent.ForEach([&](absl::string_view k, absl::string_view) {
        EXPECT_FALSE(was->second.Contains(k)) << k;
        EXPECT_TRUE(differing.contains(std::string(k))) << k;
      });
    }
    std::set<std::string> all;
    for (const auto& [name, t] : from) all.insert(name);
    for (const auto& [name, t] : to) all.insert(name);
    for (const std::string& name : all) {
      auto was = from.find(name);
      auto now = to.find(name);
      bool changed = was == from.end() || now == to.end() || !(was->second == now->second);
      EXPECT_EQ(names.contains(name), changed) << what << " " << name;
    }
  };
  tables(summary.maps, before.maps, after.maps, "map");
  tables(summary.acls, before.acls, after.acls, "ACL");
}

// ---- Properties over random states and deltas (fixed seeds) ----

TEST(DeltaTest, ApplyThenUndoRestoresExactly) {
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    Generator gen(seed);
    DesiredState original = gen.State();
    SCOPED_TRACE(absl::StrCat("seed ", seed, ": ", DesiredStateToJson(original)));
    // Several changes on top of each other, undone newest first (a failed journal batch).
    DesiredState state = original;
    std::vector<Undo> undos;
    std::vector<DesiredState> history;
    for (int n = gen.Int(1, 4); n > 0; --n) {
      history.push_back(state);
      Delta delta = gen.DeltaFor(state);
      undos.push_back(ApplyDelta(delta, &state).undo);
    }
    while (!undos.empty()) {
      UndoDelta(std::move(undos.back()), &state);
      undos.pop_back();
      ASSERT_EQ(state, history.back()) << DesiredStateToJson(state);
      EXPECT_EQ(DesiredStateToJson(state), DesiredStateToJson(history.back()));
      history.pop_back();
    }
    EXPECT_EQ(state, original);
  }
}

TEST(DeltaTest, TheSummaryListsEachChangedObjectOnceWithItsValueBefore) {
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    Generator gen(seed);
    DesiredState before = gen.State();
    Delta delta = gen.DeltaFor(before);
    DesiredState after = before;
    AppliedDelta applied = ApplyDelta(delta, &after);
    SCOPED_TRACE(absl::StrCat("seed ", seed, ": ", DesiredStateToJson(before), " -> ",
                              DesiredStateToJson(after)));
    ExpectSummaryDescribes(applied.summary, before, after);
    // Applying the same delta again changes nothing: replaying a journal record is idempotent.
    DesiredState again = after;
    AppliedDelta twice = ApplyDelta(delta, &again);
    EXPECT_EQ(again, after);
    EXPECT_TRUE(twice.summary.empty());
  }
}

TEST(DeltaTest, DiffStatesAppliedToFromGivesTo) {
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    Generator gen(seed);
    DesiredState from = gen.State();
    DesiredState to = gen.Coin() ? gen.Mutated(from) : gen.State();
    SCOPED_TRACE(absl::StrCat("seed ", seed, ": ", DesiredStateToJson(from), " -> ",
                              DesiredStateToJson(to)));
    Delta delta = DiffStates(from, to);
    EXPECT_EQ(delta.version, to.version);
    EXPECT_EQ(delta.generation, to.generation);
    DesiredState state = from;
    AppliedDelta applied = ApplyDelta(delta, &state);
    ASSERT_EQ(state, to);
    ExpectSummaryDescribes(applied.summary, from, to);
    EXPECT_EQ(delta.empty(), SameContent(from, to));
    UndoDelta(std::move(applied.undo), &state);
    EXPECT_EQ(state, from);
    // From nothing and back.
    EXPECT_EQ(StateFromDelta(DeltaFromState(to)), to);
  }
}

// A document of `state` as a controller might write it: lists in random order, and an empty
// list sometimes written as an omitted member (both mean "none").
std::string ShuffledDocument(const DesiredState& state, Generator& gen, std::mt19937& rng) {
  auto shuffled = [&rng](auto items) {
    std::shuffle(items.begin(), items.end(), rng);
    return items;
  };
  base::JsonWriter w;
  w.BeginObject();
  if (!state.version.empty()) w.Key("version").String(state.version);
  if (state.generation) w.Key("generation").Int(*state.generation);
  if (!state.backends.empty() || gen.Coin()) {
    w.Key("backends").BeginArray();
    for (const auto& [name, backend] : shuffled(SortedByName(state.backends))) {
      w.BeginObject().Key("name").String(*name);
      if (!backend->servers.empty() || gen.Coin()) {
        w.Key("servers").BeginArray();
        for (const auto& [server, spec] : shuffled(SortedByName(backend->servers))) {
          w.BeginObject().Key("name").String(*server).Key("address").String(spec->address);
          if (spec->port) w.Key("port").Int(*spec->port);
          if (spec->weight) w.Key("weight").Int(*spec->weight);
          if (spec->state) w.Key("state").String(ServerStateName(*spec->state));
          w.EndObject();
        }
        w.EndArray();
      }
      w.EndObject();
    }
    w.EndArray();
  }
  for (bool acl : {false, true}) {
    const auto& tables = acl ? state.acls : state.maps;
    if (tables.empty() && gen.Coin()) continue;
    w.Key(acl ? "acls" : "maps").BeginArray();
    for (const auto& [name, table] : shuffled(SortedByName(tables))) {
      w.BeginObject().Key("name").String(*name);
      if (!table->empty() || gen.Coin()) {
        w.Key(acl ? "patterns" : "entries").BeginArray();
        for (const auto& [key, value] : shuffled(table->Sorted())) {
          if (acl) {
            w.String(key);
          } else {
            w.BeginObject().Key("key").String(key).Key("value").String(value).EndObject();
          }
        }
        w.EndArray();
      }
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  return w.Take();
}

TEST(DeltaTest, ADocumentReadAsADeltaIsTheDiffOfItsState) {
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    Generator gen(seed);
    std::mt19937 rng(seed);
    DesiredState held = gen.Coin() ? gen.State() : DesiredState{};
    DesiredState next = gen.Coin() ? gen.Mutated(held) : gen.State();
    std::string doc = ShuffledDocument(next, gen, rng);
    SCOPED_TRACE(absl::StrCat("seed ", seed, ": ", DesiredStateToJson(held), " -> ", doc));
    absl::StatusOr<DesiredState> parsed = ParseDesiredState(doc);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_EQ(*parsed, next);
    absl::StatusOr<Delta> read = ParseDesiredStateAsDelta(doc, held);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, DiffStates(held, next));
  }
}

TEST(DeltaTest, ADocumentReadAsADeltaFailsAsItsParseDoes) {
  DesiredState held;
  held.backends["be"].servers["s1"] = Spec("10.0.0.1", 80);
  held.maps["/m"] = Table({{"a", "1"}, {"b", "2"}});
  held.acls["/a"] = Table({{"10.0.0.0/8", ""}});
  const absl::string_view kBadDocuments[] = {
      // a held key twice, the second time with another value; a new key twice
      R"({"maps":[{"name":"/m","entries":[{"key":"a","value":"1"},{"key":"a","value":"9"}]}]})",
      R"({"maps":[{"name":"/m","entries":[{"key":"n","value":"1"},{"key":"n","value":"1"}]}]})",
      R"({"acls":[{"name":"/a","patterns":["10.0.0.0/8","x","10.0.0.0/8"]}]})",
      R"({"backends":[{"name":"be","servers":[{"name":"s1","address":"10.0.0.1","port":80},)"
      R"({"name":"s1","address":"10.0.0.2"}]}]})",
      R"({"backends":[{"name":"be"},{"name":"be"}]})",
      R"({"maps":[{"name":"/m"},{"name":"/m","entries":[]}]})",
      // an invalid name after a valid list, a name missing, a bad value in a held table
      R"({"backends":[{"servers":[],"name":"be x"}]})",
      R"({"maps":[{"entries":[{"key":"a","value":"1"}]}]})",
      R"({"maps":[{"name":"/m","entries":[{"key":"a","value":"1\n2"}]}]})",
      R"({"backends":[{"name":"be","servers":[{"name":"s1","address":"10.0.0.1","port":0}]}]})",
  };
  for (absl::string_view doc : kBadDocuments) {
    SCOPED_TRACE(doc);
    absl::StatusOr<DesiredState> parsed = ParseDesiredState(doc);
    ASSERT_FALSE(parsed.ok());
    absl::StatusOr<Delta> read = ParseDesiredStateAsDelta(doc, held);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.status(), parsed.status());
  }
}

// ---- Specific cases ----

DesiredState Example() {
  DesiredState state;
  state.version = "v1";
  state.generation = 1;
  state.backends["be"].servers["s1"] = Spec("10.0.0.1", 80);
  state.backends["be"].servers["s2"] = Spec("10.0.0.2", 80, 10, ServerState::kDrain);
  state.backends["other"].servers["x"] = Spec("app.example.com");
  state.maps["/m"] = Table({{"a", "1"}, {"b", "2"}, {"c", "3"}});
  state.acls["/a"] = Table({{"10.0.0.0/8", ""}, {"192.0.2.1", ""}});
  return state;
}

TEST(DeltaTest, NoOpChangesAreLeftOut) {
  DesiredState state = Example();
  Delta delta;
  delta.version = "v2";
  delta.generation = 2;
  BackendDelta be;
  be.name = "be";
  be.servers.emplace_back("s1", Spec("10.0.0.1", 80));  // the same spec
  be.servers.emplace_back("gone", absl::nullopt);       // not managed anyway
  delta.backends.push_back(be);
  BackendDelta absent;
  absent.name = "absent";
  absent.drop = true;
  delta.backends.push_back(absent);
  TableDelta map;
  map.name = "/m";
  map.set.Set("a", "1");  // the same value
  map.erase.Set("zzz", "");
  delta.maps.push_back(std::move(map));
  TableDelta acl;
  acl.name = "/a";
  acl.set.Set("10.0.0.0/8", "");  // already there
  delta.acls.push_back(std::move(acl));
  TableDelta absent_acl;
  absent_acl.name = "/absent";
  absent_acl.drop = true;
  delta.acls.push_back(std::move(absent_acl));

  DesiredState expected = Example();
  expected.version = "v2";
  expected.generation = 2;
  AppliedDelta applied = ApplyDelta(delta, &state);
  EXPECT_EQ(state, expected);
  EXPECT_TRUE(applied.summary.empty());
  EXPECT_EQ(applied.summary.version, "v2");
  EXPECT_EQ(applied.summary.generation, 2);
  UndoDelta(std::move(applied.undo), &state);
  EXPECT_EQ(state, Example());
}

TEST(DeltaTest, ServerChangesCarryTheirValueBefore) {
  DesiredState state = Example();
  Delta delta;
  delta.version = "v1";
  delta.generation = 1;
  BackendDelta be;
  be.name = "be";
  be.servers.emplace_back("s1", Spec("10.0.0.9", 80));
  be.servers.emplace_back("s2", absl::nullopt);
  be.servers.emplace_back("s3", Spec("10.0.0.3"));
  delta.backends.push_back(be);
  AppliedDelta applied = ApplyDelta(delta, &state);
  ASSERT_EQ(applied.summary.servers.size(), 3u);
  const auto& changes = applied.summary.servers;
  EXPECT_EQ(changes[0].server, "s1");
  EXPECT_EQ(changes[0].before, Spec("10.0.0.1", 80));
  EXPECT_TRUE(changes[0].managed_after);
  EXPECT_EQ(changes[1].server, "s2");
  EXPECT_EQ(changes[1].before, Spec("10.0.0.2", 80, 10, ServerState::kDrain));
  EXPECT_FALSE(changes[1].managed_after);
  EXPECT_EQ(changes[2].server, "s3");
  EXPECT_EQ(changes[2].before, absl::nullopt);
  EXPECT_TRUE(changes[2].managed_after);
  EXPECT_THAT(applied.summary.backends_created, IsEmpty());
  EXPECT_EQ(state.FindServer("be", "s2"), nullptr);
  EXPECT_EQ(*state.FindServer("be", "s3"), Spec("10.0.0.3"));
  EXPECT_EQ(delta.object_count(), 3u);
}

TEST(DeltaTest, DroppedBackendsListTheirServersAsNoLongerManaged) {
  DesiredState state = Example();
  Delta delta;
  delta.version = "v1";
  delta.generation = 1;
  BackendDelta drop;
  drop.name = "be";
  drop.drop = true;
  delta.backends.push_back(drop);
  AppliedDelta applied = ApplyDelta(delta, &state);
  EXPECT_FALSE(state.backends.contains("be"));
  EXPECT_THAT(applied.summary.backends_dropped, ElementsAre("be"));
  std::vector<std::tuple<std::string, std::string, absl::optional<ServerSpec>, bool>> servers;
  for (const ServerChange& c : applied.summary.servers) {
    servers.emplace_back(c.backend, c.server, c.before, c.managed_after);
  }
  EXPECT_THAT(servers, UnorderedElementsAre(
                           std::make_tuple("be", "s1", Spec("10.0.0.1", 80), false),
                           std::make_tuple("be", "s2",
                                           Spec("10.0.0.2", 80, 10, ServerState::kDrain), false)));
  UndoDelta(std::move(applied.undo), &state);
  EXPECT_EQ(state, Example());
}

TEST(DeltaTest, CreatedBackendsAndTables) {
  DesiredState state = Example();
  Delta delta;
  delta.version = "v2";
  BackendDelta create;
  create.name = "new";
  create.create = true;
  create.servers.emplace_back("n1", Spec("10.1.0.1"));
  delta.backends.push_back(create);
  BackendDelta empty;
  empty.name = "empty";
  empty.create = true;  // managed with no servers yet
  delta.backends.push_back(empty);
  TableDelta map;
  map.name = "/new.map";
  map.create = true;
  map.set.Set("k", "v");
  delta.maps.push_back(map);
  TableDelta dropped;
  dropped.name = "/a";
  dropped.drop = true;
  delta.acls.push_back(dropped);
  AppliedDelta applied = ApplyDelta(delta, &state);
  EXPECT_THAT(applied.summary.backends_created, UnorderedElementsAre("new", "empty"));
  ASSERT_EQ(applied.summary.servers.size(), 1u);
  EXPECT_EQ(applied.summary.servers[0].before, absl::nullopt);
  ASSERT_EQ(applied.summary.maps.size(), 1u);
  EXPECT_TRUE(applied.summary.maps[0].replace);  // newly managed: workers hold their file's
  EXPECT_EQ(applied.summary.maps[0].changed_keys(), 0u);
  ASSERT_EQ(applied.summary.acls.size(), 1u);
  EXPECT_TRUE(applied.summary.acls[0].dropped);
  EXPECT_EQ(state.generation, absl::nullopt);
  EXPECT_EQ(state.version, "v2");
  EXPECT_TRUE(state.backends.contains("empty"));
  EXPECT_EQ(Contents(*state.FindMap("/new.map")), (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_EQ(state.FindAcl("/a"), nullptr);
  UndoDelta(std::move(applied.undo), &state);
  EXPECT_EQ(state, Example());
}

TEST(DeltaTest, CreateOnAHeldTableRemovesWhatIsNotListed) {
  DesiredState state = Example();  // /m: a=1 b=2 c=3
  Delta delta;
  delta.version = "v1";
  delta.generation = 1;
  TableDelta map;
  map.name = "/m";
  map.create = true;
  map.set = Table({{"a", "1"}, {"b", "20"}, {"d", "4"}});
  delta.maps.push_back(map);
  AppliedDelta applied = ApplyDelta(delta, &state);
  EXPECT_EQ(Contents(*state.FindMap("/m")),
            (std::map<std::string, std::string>{{"a", "1"}, {"b", "20"}, {"d", "4"}}));
  ASSERT_EQ(applied.summary.maps.size(), 1u);
  const TableChange& change = applied.summary.maps[0];
  EXPECT_FALSE(change.replace);
  EXPECT_EQ(Contents(change.existed), (std::map<std::string, std::string>{{"b", "2"}, {"c", "3"}}));
  EXPECT_EQ(Contents(change.was_absent), (std::map<std::string, std::string>{{"d", ""}}));
  UndoDelta(std::move(applied.undo), &state);
  EXPECT_EQ(state, Example());
}

TEST(DeltaTest, ATableChangeOverTheThresholdBecomesAReplace) {
  // max(kReplaceMinKeys, kReplaceAboveFraction × the size after the change) keys.
  for (size_t size : {size_t{500}, size_t{4000}}) {
    size_t limit = std::max(kReplaceMinKeys,
                            static_cast<size_t>(kReplaceAboveFraction * static_cast<double>(size)));
    for (size_t changed : {limit, limit + 1}) {
      SCOPED_TRACE(absl::StrCat(size, " entries, ", changed, " changed"));
      DesiredState state;
      StringTable& table = state.maps["/big"];
      for (size_t i = 0; i < size; ++i) table.Set(absl::StrCat("k", i), "old");
      DesiredState before = state;
      Delta delta;
      TableDelta map;
      map.name = "/big";
      for (size_t i = 0; i < changed; ++i) map.set.Set(absl::StrCat("k", i), "new");
      delta.maps.push_back(map);
      AppliedDelta applied = ApplyDelta(delta, &state);
      ASSERT_EQ(applied.summary.maps.size(), 1u);
      const TableChange& change = applied.summary.maps[0];
      EXPECT_EQ(change.replace, changed > limit);
      EXPECT_EQ(change.changed_keys(), change.replace ? 0u : changed);
      EXPECT_EQ(state.FindMap("/big")->Find("k0"), absl::string_view("new"));
      UndoDelta(std::move(applied.undo), &state);
      EXPECT_EQ(state, before);
    }
  }
}

TEST(DeltaTest, EmptyAndObjectCount) {
  Delta delta;
  EXPECT_TRUE(delta.empty());
  EXPECT_EQ(delta.object_count(), 0u);
  delta.version = "v9";
  delta.generation = 9;
  EXPECT_TRUE(delta.empty());  // labels only
  TableDelta map;
  map.name = "/m";
  map.set = Table({{"a", "1"}, {"b", "2"}});
  map.erase = Table({{"c", ""}});
  delta.maps.push_back(map);
  EXPECT_FALSE(delta.empty());
  EXPECT_EQ(delta.object_count(), 3u);

  // Equal states diff to an empty delta carrying the labels of `to`.
  DesiredState to = Example();
  to.version = "v7";
  to.generation = absl::nullopt;
  Delta diff = DiffStates(Example(), to);
  EXPECT_TRUE(diff.empty());
  EXPECT_EQ(diff.version, "v7");
  EXPECT_EQ(diff.generation, absl::nullopt);
  EXPECT_TRUE(DiffStates(DesiredState{}, DesiredState{}).empty());
  EXPECT_EQ(StateFromDelta(DeltaFromState(Example())), Example());
}

}  // namespace
}  // namespace hawk::model

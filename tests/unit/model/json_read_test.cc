// The reading kit's own rules (json_read.h), through the codecs that use it: On-Demand reads a
// document once, in order, so what the DOM gave for free is checked here — a document that is not
// JSON is reported as such whatever else is wrong with it, a list over its limit before its
// items, escapes anywhere (names, keys, values), and the functions that read a container again.

#include "agent/model/json_read.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/base/status_field.h"
#include "agent/model/delta.h"
#include "agent/model/delta_json.h"
#include "agent/model/desired_json.h"
#include "agent/model/patch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::model {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Every way a whole-state document is read: as a state, and as the change from an empty state
// and from `held`. Their statuses must agree.
std::vector<absl::Status> ReadWholeState(absl::string_view json, const DesiredState& held) {
  return {ParseDesiredState(json).status(), ParseDesiredStateAsDelta(json, DesiredState{}).status(),
          ParseDesiredStateAsDelta(json, held).status()};
}

DesiredState Held() {
  absl::StatusOr<DesiredState> held = ParseDesiredState(
      R"({"backends": [{"name": "be", "servers": [{"name": "s1", "address": "10.0.0.1"}]}],
          "maps": [{"name": "/m", "entries": [{"key": "a", "value": "1"}]}],
          "acls": [{"name": "/a", "patterns": ["p"]}]})");
  EXPECT_TRUE(held.ok()) << held.status();
  return held.ok() ? *held : DesiredState{};
}

TEST(JsonReadTest, ReadsEscapesInNamesKeysAndValues) {
  // Every member name written with an escape, every value with one or without.
  constexpr absl::string_view kEscaped = R"({"v\u0065rsion": "v\u0031",
    "g\u0065neration": "4\u0032",
    "b\u0061ckends": [{"n\u0061me": "b\u0065", "s\u0065rvers": [
      {"n\u0061me": "s\u0031", "\u0061ddress": "10.0.0.\u0031", "p\u006frt": 80,
       "st\u0061te": "RE\u0041DY"}]}],
    "m\u0061ps": [{"n\u0061me": "\/m\/x.m\u0061p", "entri\u0065s": [
      {"k\u0065y": "a\tb", "v\u0061lue": "\u00e9\ud83d\ude00"},
      {"key": "plain", "value": "x\\y\"z"}]}],
    "\u0061cls": [{"n\u0061me": "/\u0061", "p\u0061tterns": ["\u0070", "q\/r"]}]})";
  constexpr absl::string_view kPlain = R"({"version": "v1", "generation": "42",
    "backends": [{"name": "be", "servers": [
      {"name": "s1", "address": "10.0.0.1", "port": 80, "state": "READY"}]}],
    "maps": [{"name": "/m/x.map", "entries": [
      {"key": "a\tb", "value": "é😀"}, {"key": "plain", "value": "x\\y\"z"}]}],
    "acls": [{"name": "/a", "patterns": ["p", "q/r"]}]})";
  absl::StatusOr<DesiredState> escaped = ParseDesiredState(kEscaped);
  ASSERT_TRUE(escaped.ok()) << escaped.status();
  absl::StatusOr<DesiredState> plain = ParseDesiredState(kPlain);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(*escaped, *plain);
  EXPECT_EQ(escaped->FindMap("/m/x.map")->Find("a\tb"), "é😀");
  // Read as a change, each object is compared with the one held under its name, however the
  // name is written: nothing changes.
  absl::StatusOr<Delta> delta = ParseDesiredStateAsDelta(kEscaped, *plain);
  ASSERT_TRUE(delta.ok()) << delta.status();
  EXPECT_TRUE(delta->empty());
  EXPECT_EQ(delta->version, "v1");
  EXPECT_EQ(delta->generation, 42);
}

TEST(JsonReadTest, ADocumentThatIsNotJsonIsReportedAsSuchWhateverComesBefore) {
  // A field error first, then what makes the document not JSON.
  const std::string kNotJson[] = {
      R"({"foo": 1, "version": tru})",
      R"({"backends": [{"name": "be;x"}], "maps": [1,]})",
      R"({"version": "v 1"} x)",
      R"({"version": "v 1"}})",
      R"({"version": "\q"})",
      R"({"maps": [{"name": "/m", "entries": [{"key": "a", "value": "1"},)"
      R"({"key": "a", "value": "2"}]}], "x": [1 2]})",
      R"({"backends": [{"name": "be", "servers": [{"name": "s", "port": 0}]}], "acls": [)",
      absl::StrCat(R"({"foo": )", std::string(1024, '['), std::string(1024, ']'), "}"),
  };
  for (const std::string& json : kNotJson) {
    SCOPED_TRACE(json.substr(0, 200));
    for (const absl::Status& status : ReadWholeState(json, Held())) {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(status.message()), StartsWith("desired state is not valid JSON: "));
      EXPECT_EQ(base::FieldOf(status), "");
    }
    absl::Status patch = ParseStatePatch(json, Held()).status();
    EXPECT_THAT(std::string(patch.message()), StartsWith("state patch is not valid JSON: "));
    absl::Status record = ParseDeltaJson(json).status();
    EXPECT_THAT(std::string(record.message()), StartsWith("journal record is not valid JSON: "));
  }
  // The messages are the DOM's (simdjson's names for what is wrong).
  EXPECT_EQ(ParseDesiredState(R"({"version": "v1"} x)").status().message(),
            "desired state is not valid JSON: The JSON document has an improper structure: "
            "missing or superfluous commas, braces, missing keys, etc.");
  EXPECT_EQ(ParseDesiredState(R"({"foo": nul})").status().message(),
            "desired state is not valid JSON: Problem while parsing an atom starting with the "
            "letter 'n'");
  // As deep as the DOM went (1024 levels, the root's included), and no deeper.
  absl::Status deep = ParseDesiredState(absl::StrCat(R"({"foo": )", std::string(1023, '['),
                                                     std::string(1023, ']'), "}"))
                          .status();
  EXPECT_EQ(base::FieldOf(deep), "foo");
  EXPECT_THAT(std::string(deep.message()), HasSubstr("unknown field"));
  EXPECT_EQ(
      ParseDesiredState(
          absl::StrCat(R"({"foo": )", std::string(1024, '['), std::string(1024, ']'), "}"))
          .status()
          .message(),
      "desired state is not valid JSON: The JSON document was too deep (too many nested objects "
      "and arrays)");
}

TEST(JsonReadTest, AListOverItsLimitIsReportedBeforeItsItems) {
  // Too many servers, the first one invalid.
  std::string servers = R"({"backends": [{"name": "be", "servers": [{"name": "s;0"})";
  for (size_t i = 1; i <= kMaxServersPerBackend; ++i) {
    absl::StrAppend(&servers, R"(,{"name": "s)", i, R"(", "address": "10.0.0.1"})");
  }
  servers += "]}]}";
  for (const absl::Status& status : ReadWholeState(servers, Held())) {
    EXPECT_EQ(base::FieldOf(status), "backends[0].servers");
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(absl::StrCat("must hold at most ", kMaxServersPerBackend,
                                       " servers, got ", kMaxServersPerBackend + 1)));
  }
  // Too many maps, the last one invalid; and the same list within its limit reports the item.
  auto maps = [](size_t n) {
    std::string json = R"({"maps": [)";
    for (size_t i = 0; i < n; ++i) {
      absl::StrAppend(&json, i ? "," : "", R"({"name": "/m)", i, i + 1 == n ? " x" : "", R"("})");
    }
    return json + "]}";
  };
  for (const absl::Status& status : ReadWholeState(maps(kMaxMaps + 1), Held())) {
    EXPECT_EQ(base::FieldOf(status), "maps");
    EXPECT_THAT(
        std::string(status.message()),
        HasSubstr(absl::StrCat("must hold at most ", kMaxMaps, " maps, got ", kMaxMaps + 1)));
  }
  for (const absl::Status& status : ReadWholeState(maps(kMaxMaps), Held())) {
    EXPECT_EQ(base::FieldOf(status), absl::StrCat("maps[", kMaxMaps - 1, "].name"));
  }
}

TEST(JsonReadTest, ADuplicateNamesItsFirstOccurrenceHoweverItIsWritten) {
  constexpr absl::string_view kEntries = R"({"maps": [{"name": "/m", "entries": [
    {"key": "a\tb", "value": "1"}, {"key": "x", "value": "2"}, {"value": "3", "k\u0065y": "a\u0009b"}]}]})";
  DesiredState held;
  held.maps["/m"].Set("a\tb", "1");  // the duplicate is held: found through the table held
  for (const absl::Status& status : ReadWholeState(kEntries, held)) {
    EXPECT_EQ(base::FieldOf(status), "maps[0].entries[2].key");
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(R"(duplicate key "a\tb" (also entries[0]))"));
  }
  // Patterns long enough, and with escapes, that reading them all a second time to find the first
  // one takes more than the document's size: unescaped into the reader's own memory.
  std::string patterns = R"({"acls": [{"name": "/a", "patterns": [)";
  const size_t kCount = 1000;
  for (size_t i = 0; i < kCount; ++i) {
    absl::StrAppend(&patterns, i ? "," : "", "\"", i, std::string(4000, 'p'), "\\t\"");
  }
  absl::StrAppend(&patterns, ",\"", kCount - 1, std::string(4000, 'p'), "\\u0009\"]}]}");
  for (const absl::Status& status : ReadWholeState(patterns, Held())) {
    EXPECT_EQ(base::FieldOf(status), absl::StrCat("acls[0].patterns[", kCount, "]"));
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(absl::StrCat("(also patterns[", kCount - 1, "])")));
  }
}

TEST(JsonReadTest, APatchReadsItsMembersInItsOwnOrder) {
  // The upsert is read first whatever the document's order: the removal of what it upserts is a
  // conflict either way, with escaped member names too.
  DesiredState held = Held();
  const absl::string_view kOrders[] = {
      R"({"upsert": {"maps": [{"name": "/m", "entries": [{"key": "a", "value": "9"}]}]},
          "remove": {"maps": [{"name": "/m", "keys": ["a"]}]}})",
      R"({"r\u0065move": {"maps": [{"name": "/m", "keys": ["a"]}]},
          "ups\u0065rt": {"maps": [{"name": "/m", "entries": [{"key": "a", "value": "9"}]}]}})",
  };
  for (absl::string_view json : kOrders) {
    SCOPED_TRACE(json);
    absl::Status status = ParseStatePatch(json, held).status();
    EXPECT_EQ(base::FieldOf(status), "remove.maps[0].keys");
    EXPECT_THAT(std::string(status.message()), HasSubstr("is also upserted"));
  }
  absl::StatusOr<StatePatch> patch = ParseStatePatch(
      R"({"remove": {"acls": [{"name": "/a", "patterns": ["p"]}]}, "version": "v2",
          "upsert": {"backends": [{"servers": [{"name": "s2", "address": "10.0.0.2"}],
                                   "name": "be"}]}})",
      held);
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_EQ(patch->version, "v2");
  EXPECT_EQ(patch->upsert.backends.at("be").servers.at("s2").address, "10.0.0.2");
  EXPECT_TRUE(patch->remove_acls.at("/a").keys.Contains("p"));
}

}  // namespace
}  // namespace hawk::model

#include "agent/model/reload_json.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/base/status_field.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::model {
namespace {

using ::testing::HasSubstr;

// Bodies that reload the configuration file as it is: no `config`.
TEST(ReloadJsonTest, NoConfigMeansTheCurrentFile) {
  for (absl::string_view body :
       {"", " ", "\r\n\t ", "{}", " { } \n", R"({"config":null})", R"({ "config" : null })"}) {
    SCOPED_TRACE(body);
    absl::StatusOr<absl::optional<std::string>> parsed = ParseReloadRequest(body);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, absl::nullopt);
  }
}

TEST(ReloadJsonTest, ConfigText) {
  struct Case {
    std::string body;
    std::string config;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"config":"global\n"})", "global\n"},
           {R"({"config":"global\n    master-worker\n\tgrace 1s\r\n# é \"q\" \\ \/"})",
            "global\n    master-worker\n\tgrace 1s\r\n# é \"q\" \\ /"},
           {R"({"config":"\u00e9\ud83d\ude00"})", "\xc3\xa9\xf0\x9f\x98\x80"},
           {" \n{ \"config\" : \"x\" }\n ", "x"},
           {R"({"con\u0066ig":"escaped key"})", "escaped key"},
       }) {
    SCOPED_TRACE(c.body);
    absl::StatusOr<absl::optional<std::string>> parsed = ParseReloadRequest(c.body);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_TRUE(parsed->has_value());
    EXPECT_EQ(**parsed, c.config);
  }
}

TEST(ReloadJsonTest, Errors) {
  struct Case {
    const char* name;
    std::string body;
    std::string field;    // "" when the error is about the whole body
    const char* message;  // a substring
  };
  for (const Case& c : std::vector<Case>{
           {"not JSON", "global\n    master-worker\n", "", "not valid JSON"},
           {"truncated JSON", R"({"config":"glo)", "", "not valid JSON"},
           {"trailing garbage", R"({"config":"x"} x)", "", "not valid JSON"},
           {"an array", "[]", "", "must be a JSON object"},
           {"a string", R"("global\n")", "", "must be a JSON object"},
           {"null", "null", "", "must be a JSON object"},
           {"unknown field", R"({"cfg":"x"})", "cfg", "unknown field \"cfg\""},
           {"unknown field next to config", R"({"config":"x","force":true})", "force",
            "unknown field \"force\""},
           {"field names are case-sensitive", R"({"Config":"x"})", "Config", "unknown field"},
           {"duplicate config", R"({"config":"a","config":"b"})", "config", "duplicate"},
           {"duplicate config after null", R"({"config":null,"config":"b"})", "config",
            "duplicate"},
           {"a number", R"({"config":5})", "config", "must be a string"},
           {"an object", R"({"config":{"global":{}}})", "config", "must be a string"},
           {"an array of lines", R"({"config":["global"]})", "config", "must be a string"},
           {"a boolean", R"({"config":true})", "config", "must be a string"},
           {"empty", R"({"config":""})", "config", "must not be empty"},
           {"NUL inside", R"({"config":"a\u0000b"})", "config", "NUL"},
           {"NUL at the end", R"({"config":"global\n\u0000"})", "config", "NUL"},
           {"oversize",
            absl::StrCat(R"({"config":")", std::string(kMaxConfigBytes + 1, 'x'), R"("})"),
            "config", "at most 16777216 bytes"},
       }) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<absl::optional<std::string>> parsed = ParseReloadRequest(c.body);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(base::FieldOf(parsed.status()), c.field);
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.message));
  }
}

TEST(ReloadJsonTest, SizeLimitIsInclusive) {
  std::string config(kMaxConfigBytes, 'x');
  absl::StatusOr<absl::optional<std::string>> parsed =
      ParseReloadRequest(absl::StrCat(R"({"config":")", config, R"("})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ((*parsed)->size(), kMaxConfigBytes);
}

TEST(ReloadJsonTest, LongUnknownKeyIsCutInTheError) {
  std::string key(1000, 'k');
  absl::StatusOr<absl::optional<std::string>> parsed =
      ParseReloadRequest(absl::StrCat(R"({")", key, R"(":1})"));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(base::FieldOf(parsed.status()), std::string(64, 'k'));
  EXPECT_LT(parsed.status().message().size(), 200u);
}

}  // namespace
}  // namespace hawk::model

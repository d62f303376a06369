// Every parser over every fixture, every truncation of it, seeded mutations and garbage: each
// must return a value or an InvalidArgument error, never crash (run under ASan+UBSan too).

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/parse/maps.h"
#include "agent/parse/reload.h"
#include "agent/parse/reply.h"
#include "agent/parse/servers_state.h"
#include "agent/parse/show_info.h"
#include "agent/parse/show_proc.h"
#include "agent/parse/show_sess.h"
#include "agent/parse/show_version.h"
#include "agent/parse/text.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::parse {
namespace {

using testing::kVersions;
using testing::ReadFixture;

struct Parser {
  const char* name;
  std::function<absl::Status(absl::string_view)> run;
};

template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& result) {
  return result.status();
}

std::vector<Parser> Parsers() {
  return {
      {"show_proc", [](absl::string_view r) { return StatusOf(ParseShowProc(r)); }},
      {"show_info", [](absl::string_view r) { return StatusOf(ParseShowInfo(r)); }},
      {"servers_state", [](absl::string_view r) { return StatusOf(ParseServersState(r)); }},
      {"map_list", [](absl::string_view r) { return StatusOf(ParseMapList(r)); }},
      {"acl_list", [](absl::string_view r) { return StatusOf(ParseAclList(r)); }},
      {"map_entries",
       [](absl::string_view r) { return ForEachMapEntry(r, [](auto, auto, auto) {}); }},
      {"acl_entries", [](absl::string_view r) { return ForEachAclEntry(r, [](auto, auto) {}); }},
      {"show_sess", [](absl::string_view r) { return StatusOf(ParseShowSess(r)); }},
      {"reload", [](absl::string_view r) { return StatusOf(ParseReloadReply(r)); }},
      {"new_version", [](absl::string_view r) { return StatusOf(ParseNewVersion(r)); }},
      {"classify",
       [](absl::string_view r) {
         ClassifiedReply c = ClassifyMutationReply(r);
         (void)ClassifyMasterError(r);
         (void)ReplyCodeName(c.code);
         return absl::OkStatus();
       }},
      {"servers_state_roundtrip",
       [](absl::string_view r) {
         absl::StatusOr<std::vector<ServerStateRow>> rows = ParseServersState(r);
         if (!rows.ok()) return rows.status();
         absl::StatusOr<std::vector<ServerStateRow>> again =
             ParseServersState(FormatServersStateFile(*rows));
         if (!again.ok()) return again.status();
         if (again->size() != rows->size()) return absl::InternalError("row count changed");
         return absl::OkStatus();
       }},
  };
}

void Check(const std::vector<Parser>& parsers, absl::string_view input, absl::string_view what) {
  for (const Parser& parser : parsers) {
    absl::Status status = parser.run(input);
    if (status.ok()) continue;
    ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << parser.name << " on " << what << ": " << status;
    ASSERT_FALSE(status.message().empty()) << parser.name << " on " << what;
  }
}

std::vector<std::string> AllFixtures() {
  std::vector<std::string> texts;
  for (absl::string_view version : kVersions) {
    std::filesystem::path dir = absl::StrCat(HAWK_FIXTURES_DIR, "/haproxy-", version);
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) texts.push_back(ReadFixture(version, name));
  }
  return texts;
}

TEST(HostileTest, FixturesAndEveryTruncation) {
  std::vector<Parser> parsers = Parsers();
  std::vector<std::string> fixtures = AllFixtures();
  ASSERT_GE(fixtures.size(), 90u);
  for (size_t f = 0; f < fixtures.size(); ++f) {
    const std::string& text = fixtures[f];
    for (size_t cut = 0; cut <= text.size(); ++cut) {
      Check(parsers, absl::string_view(text).substr(0, cut),
            absl::StrCat("fixture ", f, " cut at ", cut));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(HostileTest, SeededMutations) {
  std::vector<Parser> parsers = Parsers();
  std::vector<std::string> fixtures = AllFixtures();
  std::mt19937 rng(20261202);
  const std::string specials[] = {"\n",          "\n\n",      " ",           "\t",
                                  "#",           "-",         "0x",          ":",
                                  "=",           "[",         "]",           "(",
                                  ")",           "\0",        "\xff",        "99999999999999999999",
                                  "-1",          "[failed: ", "# workers\n", "# old workers\n",
                                  "1\n",         "--\n",      "Success=1\n", "curr_ver=",
                                  ". curr_ver=", "fe=GLOBAL "};
  for (size_t f = 0; f < fixtures.size(); ++f) {
    for (int round = 0; round < 60; ++round) {
      std::string text = fixtures[f];
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        size_t at = text.empty() ? 0 : rng() % (text.size() + 1);
        switch (rng() % 4) {
          case 0:  // flip a byte
            if (at < text.size()) text[at] = static_cast<char>(rng() % 256);
            break;
          case 1:  // delete a run
            if (at < text.size()) text.erase(at, 1 + rng() % 16);
            break;
          case 2: {  // insert a token that parsers look for
            const std::string& s = specials[rng() % (sizeof(specials) / sizeof(specials[0]))];
            text.insert(at, s.empty() ? std::string(1, '\0') : s);
            break;
          }
          default: {  // duplicate a chunk
            size_t len = std::min<size_t>(text.size() - std::min(at, text.size()), rng() % 64);
            text.insert(at, text.substr(std::min(at, text.size()), len));
            break;
          }
        }
      }
      Check(parsers, text, absl::StrCat("fixture ", f, " mutation ", round));
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(HostileTest, Garbage) {
  std::vector<Parser> parsers = Parsers();
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string text(rng() % 300, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    Check(parsers, text, absl::StrCat("garbage ", round));
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Structure without sense.
  const std::vector<std::string> structured = {"\n\n\n\n",
                                               "#",
                                               "#<PID>",
                                               "#<PID>\n1 master",
                                               "1",
                                               "1\n#",
                                               "1\n# be_id",
                                               "0x",
                                               "0x1:",
                                               "0x1: fe",
                                               "# id",
                                               "# id (",
                                               "# id (file) description\n1 (",
                                               "Success=1\n--",
                                               "[3]: ",
                                               "[",
                                               "]: ",
                                               std::string(1 << 16, '\n'),
                                               std::string(1 << 16, ' '),
                                               std::string(1 << 16, '#')};
  for (const std::string& text : structured) Check(parsers, text, "structured garbage");
}

TEST(HostileTest, HugeReplyIsRefused) {
  std::string huge(kMaxReplyBytes + 1, 'a');
  for (const Parser& parser : Parsers()) {
    if (std::string(parser.name) == "classify") continue;
    absl::Status status = parser.run(huge);
    EXPECT_FALSE(status.ok()) << parser.name;
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << parser.name;
  }
}

}  // namespace
}  // namespace hawk::parse

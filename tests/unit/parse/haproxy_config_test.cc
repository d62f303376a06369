#include "agent/parse/haproxy_config.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::parse {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The settings each message names, in the order AdviseOnConfig reports them.
constexpr const char* kMasterWorker = "master-worker";
constexpr const char* kGrace = "grace";
constexpr const char* kHardStopAfter = "hard-stop-after";
constexpr const char* kIdleClose = "idle-close-on-response";

constexpr const char* kGlobal =
    "global\n"
    "    master-worker\n"
    "    grace 1s\n"
    "    hard-stop-after 30s\n";

constexpr const char* kBackend =
    "backend be_app\n"
    "    server SRV_1 127.0.0.1:8080\n";

struct Case {
  const char* name;
  std::string config;
  std::vector<const char*> missing;  // one message per entry, each naming that setting
};

std::vector<Case> Cases() {
  return {
      {"complete",
       absl::StrCat(kGlobal,
                    "defaults\n    mode http\n    option idle-close-on-response\n"
                    "frontend fe\n    bind :8080\n    default_backend be_app\n",
                    kBackend),
       {}},
      {"empty text: no proxy to warn about", "", {kMasterWorker, kGrace, kHardStopAfter}},
      {"no master-worker",
       "global\n    grace 1s\n    hard-stop-after 30s\n"
       "defaults\n    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {kMasterWorker}},
      {"no grace",
       "global\n    master-worker\n    hard-stop-after 30s\n"
       "defaults\n    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {kGrace}},
      {"grace 0s is no grace",
       "global\n    master-worker\n    grace 0s\n    hard-stop-after 30s\n"
       "defaults\n    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {kGrace}},
      {"grace 0 is no grace",
       "global\n    master-worker\n    grace 0\n    hard-stop-after 30s\n"
       "defaults\n    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {kGrace}},
      {"grace 0ms is no grace",
       "global\n    master-worker\n    grace 0ms\n    hard-stop-after 30s\n"
       "defaults\n    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {kGrace}},
      {"grace without a value is no grace",
       "global\n    master-worker\n    grace\n    hard-stop-after 30s\n"
       "defaults\n    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {kGrace}},
      {"grace 500ms counts",
       "global\n    master-worker\n    grace 500ms\n    hard-stop-after 30s\n"
       "defaults\n    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {}},
      {"no hard-stop-after",
       "global\n    master-worker\n    grace 1s\n"
       "defaults\n    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {kHardStopAfter}},
      {"no idle-close-on-response anywhere",
       absl::StrCat(kGlobal, "defaults\n    mode http\nfrontend fe\n    bind :80\n", kBackend),
       {kIdleClose}},
      {"nothing at all but a frontend",
       "frontend fe\n    bind :80\n",
       {kMasterWorker, kGrace, kHardStopAfter, kIdleClose}},
      {"defaults cover every frontend and listen",
       absl::StrCat(kGlobal,
                    "defaults\n    option idle-close-on-response\n"
                    "frontend fe1\n    bind :80\nfrontend fe2\n    bind :81\n"
                    "listen li\n    bind :82\n    server s 127.0.0.1:1\n",
                    kBackend),
       {}},
      {"in each of two frontends",
       absl::StrCat(kGlobal,
                    "frontend fe1\n    bind :80\n    option idle-close-on-response\n"
                    "frontend fe2\n    bind :81\n    option idle-close-on-response\n",
                    kBackend),
       {}},
      {"in only one of two frontends",
       absl::StrCat(kGlobal,
                    "frontend fe1\n    bind :80\n    option idle-close-on-response\n"
                    "frontend fe2\n    bind :81\n",
                    kBackend),
       {kIdleClose}},
      {"in a backend only does not count",
       absl::StrCat(kGlobal, "frontend fe\n    bind :80\n",
                    "backend be\n    option idle-close-on-response\n"),
       {kIdleClose}},
      {"in global does not count",
       absl::StrCat(kGlobal, "    option idle-close-on-response\nfrontend fe\n    bind :80\n"),
       {kIdleClose}},
      {"`no option` in defaults after `option`",
       absl::StrCat(kGlobal,
                    "defaults\n    option idle-close-on-response\n"
                    "    no option idle-close-on-response\nfrontend fe\n    bind :80\n"),
       {kIdleClose}},
      {"`option` in defaults after `no option`",
       absl::StrCat(kGlobal,
                    "defaults\n    no option idle-close-on-response\n"
                    "    option idle-close-on-response\nfrontend fe\n    bind :80\n"),
       {}},
      {"a listen section with it",
       absl::StrCat(kGlobal,
                    "listen li\n    bind :80\n    option idle-close-on-response\n"
                    "    server s 127.0.0.1:1\n"),
       {}},
      {"a listen section without it",
       absl::StrCat(kGlobal, "listen li\n    bind :80\n    server s 127.0.0.1:1\n"),
       {kIdleClose}},
      {"commented-out settings do not count",
       "global\n    master-worker\n    # grace 1s\n    #hard-stop-after 30s\n"
       "defaults\n#    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {kGrace, kHardStopAfter, kIdleClose}},
      {"a comment after a setting",
       "global # the process\n    master-worker # with -S\n    grace 1s#short\n"
       "    hard-stop-after 30s    # bound\n"
       "defaults\n    option idle-close-on-response # keep-alive\nfrontend fe\n    bind :80\n",
       {}},
      {"a commented-out section keyword keeps the section",
       "global\n    master-worker\n#defaults\n    grace 1s\n    hard-stop-after 30s\n"
       "frontend fe\n    option idle-close-on-response\n",
       {}},
      {"tabs, no indentation and CRLF",
       "global\r\n\tmaster-worker\r\n\tgrace\t2s\r\nhard-stop-after 1m\r\n"
       "defaults\r\n\t option \t idle-close-on-response\r\nfrontend\tfe\r\n\tbind :80\r\n",
       {}},
      {"indented section keywords",
       "  global\n  master-worker\n  grace 1s\n  hard-stop-after 30s\n"
       "  frontend fe\n  option idle-close-on-response\n",
       {}},
      {"settings outside global do not count",
       "global\n    daemon\n"
       "defaults\n    master-worker\n    grace 1s\n    hard-stop-after 30s\n"
       "    option idle-close-on-response\nfrontend fe\n    bind :80\n",
       {kMasterWorker, kGrace, kHardStopAfter}},
      {"settings in a second global section count",
       "global\n    master-worker\n"
       "defaults\n    option idle-close-on-response\nfrontend fe\n    bind :80\n"
       "global\n    grace 1s\n    hard-stop-after 30s\n",
       {}},
      {"other sections between global settings",
       "global\n    master-worker\nresolvers dns\n    grace 1s\npeers p\n    hard-stop-after 1s\n"
       "frontend fe\n    option idle-close-on-response\n",
       {kGrace, kHardStopAfter}},
      {"master-worker with an option",
       "global\n    master-worker no-exit-on-failure\n    grace 1s\n    hard-stop-after 30s\n"
       "frontend fe\n    option idle-close-on-response\n",
       {}},
  };
}

TEST(HaproxyConfigTest, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> advice = AdviseOnConfig(c.config);
    ASSERT_EQ(advice.size(), c.missing.size()) << absl::StrJoin(advice, "\n");
    for (size_t i = 0; i < advice.size(); ++i) {
      EXPECT_THAT(advice[i], HasSubstr(c.missing[i]));
    }
  }
}

TEST(HaproxyConfigTest, EachMessageNamesOnlyItsSetting) {
  std::vector<std::string> advice = AdviseOnConfig("frontend fe\n    bind :80\n");
  ASSERT_EQ(advice.size(), 4u);
  const char* settings[] = {kMasterWorker, kGrace, kHardStopAfter, kIdleClose};
  for (size_t i = 0; i < advice.size(); ++i) {
    SCOPED_TRACE(advice[i]);
    for (size_t j = 0; j < 4; ++j) {
      if (i == j) {
        EXPECT_THAT(advice[i], HasSubstr(settings[j]));
      } else {
        EXPECT_THAT(advice[i], ::testing::Not(HasSubstr(settings[j])));
      }
    }
  }
  EXPECT_THAT(advice[0], HasSubstr("-W"));
  EXPECT_THAT(advice[1], HasSubstr("Proxy is disabled."));
}

TEST(HaproxyConfigTest, HostileTextDoesNotCrash) {
  for (absl::string_view text :
       {absl::string_view("\n\n\n"), absl::string_view("#"), absl::string_view("\\#"),
        absl::string_view("global\\#\n"), absl::string_view("\0\0\0", 3),
        absl::string_view("no\nno option\noption\n"), absl::string_view("\t \r\n")}) {
    std::vector<std::string> advice = AdviseOnConfig(text);
    EXPECT_EQ(advice.size(), 3u);
  }
  EXPECT_THAT(AdviseOnConfig(absl::StrCat(kGlobal, "frontend fe\n option idle-close-on-response")),
              IsEmpty());  // no trailing newline
}

// HAProxy resets every option at each `defaults` section, so frontends after a second
// `defaults` without `option idle-close-on-response` do not have it.
TEST(HaproxyConfigTest, SecondDefaultsSectionResetsTheOption) {
  std::vector<std::string> advice =
      AdviseOnConfig(absl::StrCat(kGlobal,
                                  "defaults\n    option idle-close-on-response\n"
                                  "frontend fe1\n    bind :80\n"
                                  "defaults\n    mode http\n"
                                  "frontend fe2\n    bind :81\n"));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_THAT(advice[0], HasSubstr(kIdleClose));
}

// A frontend's `no option idle-close-on-response` overrides the defaults section.
TEST(HaproxyConfigTest, FrontendCanDisableTheDefaultsOption) {
  std::vector<std::string> advice =
      AdviseOnConfig(absl::StrCat(kGlobal,
                                  "defaults\n    option idle-close-on-response\n"
                                  "frontend fe1\n    bind :80\n"
                                  "frontend fe2\n    bind :81\n"
                                  "    no option idle-close-on-response\n"));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_THAT(advice[0], HasSubstr(kIdleClose));
}

// The option counts per proxy, not per line: a frontend that repeats it does not hide a
// frontend that lacks it.
TEST(HaproxyConfigTest, RepeatedOptionInOneFrontendDoesNotCoverAnother) {
  std::vector<std::string> advice =
      AdviseOnConfig(absl::StrCat(kGlobal,
                                  "frontend fe1\n    bind :80\n"
                                  "    option idle-close-on-response\n"
                                  "    option idle-close-on-response\n"
                                  "frontend fe2\n    bind :81\n"));
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_THAT(advice[0], HasSubstr(kIdleClose));
}

// HAProxy time values take the units us, ms, s, m, h and d; `grace 0m` (or 0us, 0h, 0d) is
// no grace at all.
TEST(HaproxyConfigTest, GraceZeroInAnyUnitIsNoGrace) {
  for (const char* zero : {"0m", "0us", "0h", "0d"}) {
    SCOPED_TRACE(zero);
    std::vector<std::string> advice =
        AdviseOnConfig(absl::StrCat("global\n    master-worker\n    grace ", zero,
                                    "\n    hard-stop-after 30s\nfrontend fe\n"
                                    "    option idle-close-on-response\n"));
    ASSERT_EQ(advice.size(), 1u);
    EXPECT_THAT(advice[0], HasSubstr(kGrace));
  }
}

// hawk reads `grace` to know until when a leaving worker cannot exit (registry/relay_policy.h).
TEST(HaproxyConfigTest, GraceFromConfigReadsTheGlobalGraceInHaproxysUnits) {
  struct GraceCase {
    std::string config;
    absl::optional<absl::Duration> grace;
  };
  std::vector<GraceCase> cases = {
      {"global\n    grace 2s\n", absl::Seconds(2)},
      {"global\n    grace 1500\n", absl::Milliseconds(1500)},  // milliseconds by default
      {"global\n    grace 250ms  # comment\n", absl::Milliseconds(250)},
      {"global\n    grace 1m\n    grace 3s\n", absl::Seconds(3)},  // the last one wins
      {"global\n    grace 2h\n", absl::Hours(2)},
      {"global\n    grace 0\n", absl::ZeroDuration()},
      {"global\n    master-worker\n", absl::ZeroDuration()},       // none: HAProxy's 0
      {"defaults\n    grace 5s\nglobal\n", absl::ZeroDuration()},  // not global
      {"global\n    grace 2x\n", absl::nullopt},                   // not a time
      {"global\n    grace\n", absl::nullopt},
      {"global\n    grace 1s 2s\n", absl::nullopt},
  };
  for (const GraceCase& c : cases) {
    SCOPED_TRACE(c.config);
    EXPECT_EQ(GraceFromConfig(c.config), c.grace);
  }
}

}  // namespace
}  // namespace hawk::parse

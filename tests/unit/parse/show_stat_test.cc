#include "agent/parse/show_stat.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/parse/fixture.h"

namespace hawk::parse {
namespace {

using testing::Endings;
using ::testing::HasSubstr;
using testing::ReadFixture;

// Three frontends (http with 2 requests served, tcp with none, a stats page read once).
TEST(ShowStatTest, FrontendFixtures) {
  for (const char* version : {"2.6", "3.4"}) {
    for (const std::string& reply : Endings(ReadFixture(version, "show_stat_frontends.txt"))) {
      SCOPED_TRACE(absl::StrCat(version, " ending ", reply.size()));
      absl::StatusOr<FrontendTotals> totals = ParseFrontendTotals(reply);
      ASSERT_TRUE(totals.ok()) << totals.status();
      EXPECT_EQ(totals->frontends, 3);
      EXPECT_EQ(totals->accepted, 3);
      EXPECT_EQ(totals->current, 0);
    }
  }
}

TEST(ShowStatTest, ColumnsByNameAndStotWithoutConnTot) {
  absl::StatusOr<FrontendTotals> totals = ParseFrontendTotals(
      "# pxname,stot,svname,scur,\nfe,7,FRONTEND,2,\nbe,9,BACKEND,1,\nsrv,4,s1,1,\n\n");
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_EQ(totals->frontends, 1);
  EXPECT_EQ(totals->accepted, 7);
  EXPECT_EQ(totals->current, 2);
}

TEST(ShowStatTest, NoFrontendIsZero) {
  absl::StatusOr<FrontendTotals> totals = ParseFrontendTotals("# pxname,svname,scur,stot\n\n");
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_EQ(totals->frontends, 0);
  EXPECT_EQ(totals->accepted, 0);
}

TEST(ShowStatTest, Refusals) {
  EXPECT_THAT(ParseFrontendTotals("").status().message(), HasSubstr("empty"));
  EXPECT_THAT(ParseFrontendTotals("Unknown command: 'show stat'\n").status().message(),
              HasSubstr("header"));
  EXPECT_THAT(ParseFrontendTotals("# pxname,svname\nfe,FRONTEND\n").status().message(),
              HasSubstr("no svname, scur or stot"));
  EXPECT_THAT(
      ParseFrontendTotals("# pxname,svname,scur,stot\nfe,FRONTEND,1,x\n").status().message(),
      HasSubstr("malformed counter"));
  EXPECT_THAT(ParseFrontendTotals("# pxname,svname,scur,stot\nfe,FRONTEND,1\n").status().message(),
              HasSubstr("malformed counter"));
}

}  // namespace
}  // namespace hawk::parse

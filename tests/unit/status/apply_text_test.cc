#include "agent/status/apply_text.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::status {
namespace {

using ::testing::HasSubstr;

TEST(ApplyTextTest, EveryWorkerApplied) {
  absl::StatusOr<ApplyView> view = RenderPushAnswer(
      R"({"version":"v1","generation":"3","delivery":"ALL_WORKERS","workers":[)"
      R"({"pid":42,"role":"CURRENT","result":"APPLIED","refused":[],"stale":[]}]})",
      {});
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_TRUE(view->all_applied);
  EXPECT_EQ(view->text,
            "version v1  generation 3  delivery ALL_WORKERS\n"
            "worker 42 CURRENT  APPLIED\n");
}

TEST(ApplyTextTest, StaleAndRefusedAreShownAndNotApplied) {
  absl::StatusOr<ApplyView> view = RenderPushAnswer(
      R"({"version":"v2","delivery":"ALL_WORKERS","workers":[)"
      R"({"pid":42,"role":"CURRENT","result":"APPLIED","refused":[],"stale":[]},)"
      R"({"pid":41,"role":"LEAVING","result":"PARTIAL","reason":"frozen","refused":[)"
      R"({"object":"backend/be/server/s9","command":"set server be/s9 weight 7",)"
      R"("reply":"No such server."}],"stale":[{"object":"backend/be/server/s9","field":"weight",)"
      R"("desired":"7","actual":"","reason":"not in the configuration"}]}]})",
      {});
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_FALSE(view->all_applied);
  EXPECT_THAT(view->text, HasSubstr("worker 41 LEAVING  PARTIAL  frozen\n"));
  EXPECT_THAT(view->text, HasSubstr("  stale   backend/be/server/s9 weight: wants 7, has  (not in "
                                    "the configuration)\n"));
  EXPECT_THAT(view->text, HasSubstr("  refused backend/be/server/s9: `set server be/s9 weight 7`: "
                                    "HAProxy replied \"No such server.\"\n"));
}

TEST(ApplyTextTest, NoWorkerIsNotApplied) {
  absl::StatusOr<ApplyView> view = RenderPushAnswer(
      R"({"version":"v1","delivery":"NO_WORKER","warning":"no worker is reachable","workers":[]})",
      {});
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_FALSE(view->all_applied);
  EXPECT_THAT(view->text, HasSubstr("warning: no worker is reachable\n"));
}

TEST(ApplyTextTest, DryRunListsCommandsPerWorker) {
  absl::StatusOr<ApplyView> view = RenderPushAnswer(
      R"({"dryRun":true,"version":"v2","generation":"4","changes":true,"workers":[)"
      R"({"pid":42,"role":"CURRENT","basis":"INCREMENTAL","commands":[)"
      R"("set server be/s1 weight 7","add map /m <<\nk \n"],)"
      R"("replaces":[{"object":"map//big","entries":"5000"}],"refused":[],"stale":[]},)"
      R"({"pid":41,"role":"LEAVING","basis":"OBSERVE","commands":[],"replaces":[],)"
      R"("refused":[],"stale":[]}]})",
      {});
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_TRUE(view->all_applied);
  EXPECT_EQ(view->text,
            "dry run: version v2  generation 4\n"
            "worker 42 CURRENT  INCREMENTAL  would send 2 command(s)\n"
            "  send    set server be/s1 weight 7\n"
            "  send    add map /m <<\n"
            "  replace map//big: 5000 entries in one transaction\n"
            "worker 41 LEAVING  OBSERVE  (observed first: the commands depend on what it holds)\n");
}

TEST(ApplyTextTest, DryRunWithAFrozenWorkerIsNotClean) {
  absl::StatusOr<ApplyView> view = RenderPushAnswer(
      R"({"dryRun":true,"version":"v2","changes":true,"workers":[)"
      R"({"pid":41,"role":"LEAVING","basis":"INCREMENTAL","commands":[],"replaces":[],)"
      R"("refused":[{"object":"backend/be/server/s1","command":"set server be/s1 weight 7",)"
      R"("reply":"Proxy is disabled."}],"stale":[]}]})",
      {});
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_FALSE(view->all_applied);
  EXPECT_THAT(view->text, HasSubstr("  refused backend/be/server/s1: `set server be/s1 weight 7`: "
                                    "HAProxy replied \"Proxy is disabled.\"\n"));
}

TEST(ApplyTextTest, NotAPushAnswer) {
  EXPECT_FALSE(RenderPushAnswer("{", {}).ok());
  EXPECT_THAT(RenderPushAnswer(R"({"error":{}})", {}).status().message(), HasSubstr("workers"));
}

}  // namespace
}  // namespace hawk::status

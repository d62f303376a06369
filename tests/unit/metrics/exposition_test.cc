#include "agent/metrics/exposition.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hawk::metrics {
namespace {

TEST(ExpositionTest, FamiliesAndSamplesAreSortedAndTyped) {
  std::vector<Family> families;
  families.emplace_back("hawk_worker_connections", "Live client connections.", MetricType::kGauge)
      .Add({{"pid", "20"}, {"role", "LEAVING"}}, 3)
      .Add({{"pid", "10"}, {"role", "CURRENT"}}, 12);
  families.emplace_back("hawk_commands_sent_total", "Commands sent.", MetricType::kCounter)
      .Add({}, 42);
  families.emplace_back("hawk_empty", "Nothing to say.", MetricType::kGauge);
  EXPECT_EQ(FormatText(std::move(families)),
            "# HELP hawk_commands_sent_total Commands sent.\n"
            "# TYPE hawk_commands_sent_total counter\n"
            "hawk_commands_sent_total 42\n"
            "# HELP hawk_worker_connections Live client connections.\n"
            "# TYPE hawk_worker_connections gauge\n"
            "hawk_worker_connections{pid=\"10\",role=\"CURRENT\"} 12\n"
            "hawk_worker_connections{pid=\"20\",role=\"LEAVING\"} 3\n");
}

TEST(ExpositionTest, LabelValuesAndHelpAreEscaped) {
  std::vector<Family> families;
  families.emplace_back("hawk_x", "a \\ help\nline", MetricType::kGauge)
      .Add({{"reason", "say \"no\"\\\nplease"}}, 1.5);
  EXPECT_EQ(FormatText(std::move(families)),
            "# HELP hawk_x a \\\\ help\\nline\n"
            "# TYPE hawk_x gauge\n"
            "hawk_x{reason=\"say \\\"no\\\"\\\\\\nplease\"} 1.5\n");
}

TEST(ExpositionTest, HistogramBucketsAreCumulativeWithInf) {
  Histogram histogram({0.1, 1});
  histogram.Observe(0.05);
  histogram.Observe(0.1);  // upper bounds are inclusive
  histogram.Observe(0.5);
  histogram.Observe(7);
  std::vector<Family> families;
  families.emplace_back("hawk_push_seconds", "Push latency.", MetricType::kHistogram)
      .Add({{"role", "CURRENT"}}, &histogram);
  EXPECT_EQ(FormatText(std::move(families)),
            "# HELP hawk_push_seconds Push latency.\n"
            "# TYPE hawk_push_seconds histogram\n"
            "hawk_push_seconds_bucket{role=\"CURRENT\",le=\"0.1\"} 2\n"
            "hawk_push_seconds_bucket{role=\"CURRENT\",le=\"1\"} 3\n"
            "hawk_push_seconds_bucket{role=\"CURRENT\",le=\"+Inf\"} 4\n"
            "hawk_push_seconds_sum{role=\"CURRENT\"} 7.65\n"
            "hawk_push_seconds_count{role=\"CURRENT\"} 4\n");
}

TEST(ExpositionTest, NameGrammar) {
  EXPECT_TRUE(IsValidMetricName("hawk_reloads_total"));
  EXPECT_TRUE(IsValidMetricName("a:b_c1"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("hawk-x"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("pid"));
  EXPECT_FALSE(IsValidLabelName("__name"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

}  // namespace
}  // namespace hawk::metrics

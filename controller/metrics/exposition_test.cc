#include "controller/metrics/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace fairbench::metrics {
namespace {

TEST(ExpositionTest, ValuesReadBackExactly) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(12345678), "12345678");
  EXPECT_EQ(FormatValue(0.5), "0.5");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(-3.25), "-3.25");
  EXPECT_EQ(FormatValue(123456789012345.0), "123456789012345");
  EXPECT_EQ(std::stod(FormatValue(9007199254740993.0)), 9007199254740993.0);
  EXPECT_EQ(FormatValue(0.0001), "0.0001");
  EXPECT_EQ(FormatValue(0.00025), "0.00025");
  EXPECT_EQ(FormatValue(0.00001), "0.00001");
  EXPECT_EQ(FormatValue(1796009069.03), "1796009069.03");
  EXPECT_EQ(FormatValue(1e-9), "1e-09");
  EXPECT_EQ(std::stod(FormatValue(1.0 / 3)), 1.0 / 3);
  EXPECT_EQ(std::stod(FormatValue(0.00001)), 0.00001);
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

TEST(ExpositionTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"
                             "\n"
                             "d"),
            R"(a\\b\"c\nd)");
  EXPECT_EQ(EscapeLabelValue("plain · ünïcode"), "plain · ünïcode");
  // Help escapes backslash and newline, not quotes.
  EXPECT_EQ(EscapeHelp("say \"hi\"\\\nbye"), R"(say "hi"\\\nbye)");
}

TEST(ExpositionTest, CounterWithLabelsInDeclaredOrder) {
  MetricFamily f;
  f.name = "fairbench_requests_total";
  f.help = "Complete responses.";
  f.type = MetricType::kCounter;
  f.label_names = {"run", "target", "scenario"};
  f.series.push_back({{"r1", "drogon", "a\"b"}, 42, {}, 0, 0});
  f.series.push_back({{"r1", "httplib", "hello"}, 7.5, {}, 0, 0});
  EXPECT_EQ(RenderText({f}),
            "# HELP fairbench_requests_total Complete responses.\n"
            "# TYPE fairbench_requests_total counter\n"
            "fairbench_requests_total{run=\"r1\",target=\"drogon\",scenario=\"a\\\"b\"} 42\n"
            "fairbench_requests_total{run=\"r1\",target=\"httplib\",scenario=\"hello\"} 7.5\n");
}

// Catches: a label with an empty value written out (Prometheus reads it as
// no label, so the text would only differ from the same series without it),
// or braces left behind when every value is empty.
TEST(ExpositionTest, AnEmptyLabelValueIsNoLabel) {
  MetricFamily f;
  f.name = "fairbench_requests_total";
  f.help = "Complete responses.";
  f.type = MetricType::kCounter;
  f.label_names = {"run", "rate"};
  f.series.push_back({{"r1", ""}, 3, {}, 0, 0});
  f.series.push_back({{"r1", "2000/s"}, 4, {}, 0, 0});
  f.series.push_back({{"", ""}, 5, {}, 0, 0});
  EXPECT_EQ(RenderText({f}),
            "# HELP fairbench_requests_total Complete responses.\n"
            "# TYPE fairbench_requests_total counter\n"
            "fairbench_requests_total{run=\"r1\"} 3\n"
            "fairbench_requests_total{run=\"r1\",rate=\"2000/s\"} 4\n"
            "fairbench_requests_total 5\n");
}

TEST(ExpositionTest, NoLabelsNoBracesAndEmptyFamiliesLeftOut) {
  MetricFamily g;
  g.name = "fairbench_queue_length";
  g.help = "Runs waiting.";
  g.type = MetricType::kGauge;
  g.series.push_back({{}, 3, {}, 0, 0});
  MetricFamily empty;
  empty.name = "fairbench_nothing";
  empty.help = "x";
  EXPECT_EQ(RenderText({empty, g}),
            "# HELP fairbench_queue_length Runs waiting.\n"
            "# TYPE fairbench_queue_length gauge\n"
            "fairbench_queue_length 3\n");
}

TEST(ExpositionTest, HistogramBucketsAreCumulativeEndingInInf) {
  MetricFamily h;
  h.name = "fairbench_request_duration_seconds";
  h.help = "Latency.";
  h.type = MetricType::kHistogram;
  h.label_names = {"target"};
  h.bounds = {0.001, 0.01, 0.1};
  Series s;
  s.label_values = {"beast"};
  s.buckets = {2, 5, 5};
  s.count = 6;
  s.sum = 0.75;
  h.series.push_back(s);
  EXPECT_EQ(RenderText({h}),
            "# HELP fairbench_request_duration_seconds Latency.\n"
            "# TYPE fairbench_request_duration_seconds histogram\n"
            "fairbench_request_duration_seconds_bucket{target=\"beast\",le=\"0.001\"} 2\n"
            "fairbench_request_duration_seconds_bucket{target=\"beast\",le=\"0.01\"} 5\n"
            "fairbench_request_duration_seconds_bucket{target=\"beast\",le=\"0.1\"} 5\n"
            "fairbench_request_duration_seconds_bucket{target=\"beast\",le=\"+Inf\"} 6\n"
            "fairbench_request_duration_seconds_sum{target=\"beast\"} 0.75\n"
            "fairbench_request_duration_seconds_count{target=\"beast\"} 6\n");
}

TEST(ExpositionTest, NameValidity) {
  EXPECT_TRUE(IsValidMetricName("fairbench_requests_total"));
  EXPECT_TRUE(IsValidMetricName("a:b"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("status_class"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("le"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

}  // namespace
}  // namespace fairbench::metrics

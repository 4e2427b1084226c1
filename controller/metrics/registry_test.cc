#include "controller/metrics/registry.h"

#include <gtest/gtest.h>

#include "controller/metrics/exposition.h"

namespace fairbench::metrics {
namespace {

const MetricFamily* Find(const std::vector<MetricFamily>& fs, const std::string& name) {
  for (const MetricFamily& f : fs) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(RegistryTest, SeriesAppearOnFirstUseAndKeepTheirValues) {
  MetricRegistry r;
  const auto c = r.AddCounter("x_total", "help", {"run", "target"});
  r.Add(c, {"r", "b"}, 2);
  r.Add(c, {"r", "b"}, 3);
  r.Set(c, {"r", "a"}, 1);
  double v = 0;
  ASSERT_TRUE(r.Get(c, {"r", "b"}, &v));
  EXPECT_EQ(v, 5);
  EXPECT_FALSE(r.Get(c, {"r", "c"}, &v));
  EXPECT_EQ(r.series_count(), 2u);
  // Series come out ordered by label values, labels in declared order.
  EXPECT_EQ(
      RenderText(r.Collect()),
      "# HELP x_total help\n# TYPE x_total counter\nx_total{run=\"r\",target=\"a\"} 1\nx_total{run=\"r\",target=\"b\"} 5\n");
}

TEST(RegistryTest, FamiliesSortedByName) {
  MetricRegistry r;
  const auto b = r.AddGauge("b", "b");
  const auto a = r.AddGauge("a", "a");
  r.Set(b, {}, 1);
  r.Set(a, {}, 2);
  const auto fs = r.Collect();
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].name, "a");
  EXPECT_EQ(fs[1].name, "b");
}

TEST(RegistryTest, RemoveWhereTakesOnlyMatchingSeriesOfFamiliesWithThatLabel) {
  MetricRegistry r;
  const auto c = r.AddCounter("c_total", "c", {"run", "target"});
  const auto g = r.AddGauge("g", "g", {"target"});
  const auto h = r.AddHistogram("h_seconds", "h", {"run"}, {0.1, 1});
  r.Set(c, {"one", "t"}, 1);
  r.Set(c, {"two", "t"}, 1);
  r.Set(g, {"one"}, 1);  // label "target", not "run": stays
  r.SetHistogram(h, {"one"}, {1, 2}, 3, 1.5);
  EXPECT_EQ(r.RemoveWhere("run", "one"), 2u);
  double v = 0;
  EXPECT_FALSE(r.Get(c, {"one", "t"}, &v));
  EXPECT_TRUE(r.Get(c, {"two", "t"}, &v));
  EXPECT_TRUE(r.Get(g, {"one"}, &v));
  const auto fs = r.Collect();
  const MetricFamily* hf = Find(fs, "h_seconds");
  ASSERT_NE(hf, nullptr);
  EXPECT_TRUE(hf->series.empty());
  r.Remove(c, {"two", "t"});
  r.Remove(c, {"never", "was"});
  EXPECT_EQ(r.series_count(), 1u);
}

TEST(RegistryTest, CollectorsRunBeforeEveryCollect) {
  MetricRegistry r;
  const auto g = r.AddGauge("scrapes", "s");
  int n = 0;
  r.AddCollector([&] { r.Set(g, {}, ++n); });
  r.Collect();
  const auto fs = r.Collect();
  EXPECT_EQ(fs[0].series[0].value, 2);
}

TEST(RegistryTest, HistogramSeriesStartEmpty) {
  MetricRegistry r;
  const auto h = r.AddHistogram("h_seconds", "h", {}, {0.1, 1});
  r.SetHistogram(h, {}, {4, 6}, 7, 2.5);
  const auto fs = r.Collect();
  ASSERT_EQ(fs[0].series.size(), 1u);
  EXPECT_EQ(fs[0].series[0].buckets, (std::vector<uint64_t>{4, 6}));
  EXPECT_EQ(fs[0].series[0].count, 7u);
  EXPECT_EQ(fs[0].bounds, (std::vector<double>{0.1, 1}));
}

TEST(RegistryDeathTest, ProgrammingErrorsAbort) {
  MetricRegistry r;
  const auto c = r.AddCounter("c_total", "c", {"run"});
  EXPECT_DEATH(r.Set(c, {"a", "b"}, 1), "wrong number of label values");
  EXPECT_DEATH(r.AddGauge("c_total", "again"), "declared twice");
  EXPECT_DEATH(r.AddGauge("bad-name", "x"), "invalid metric name");
  EXPECT_DEATH(r.AddGauge("g", "x", {"le"}), "invalid or duplicate label");
  EXPECT_DEATH(r.AddHistogram("h", "x", {}, {1, 0.5}), "ascend");
  EXPECT_DEATH(r.SetHistogram(c, {"a"}, {}, 0, 0), "wrong operation");
}

}  // namespace
}  // namespace fairbench::metrics

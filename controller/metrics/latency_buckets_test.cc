#include "controller/metrics/latency_buckets.h"

#include <gtest/gtest.h>

#include <random>

namespace fairbench::metrics {
namespace {

size_t BoundIndex(double seconds) {
  const auto& b = LatencyBoundsSeconds();
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i] == seconds) return i;
  }
  return b.size();
}

TEST(LatencyBucketsTest, BoundsAscendAndCoverMicrosecondsToSeconds) {
  const auto& b = LatencyBoundsSeconds();
  ASSERT_GE(b.size(), 10u);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
  EXPECT_LE(b.front(), 0.00001);
  EXPECT_GE(b.back(), 10);
}

TEST(LatencyBucketsTest, ExactBelowTwoMillisecondsBoundsInclusive) {
  Histogram h;
  h.Record(0);
  h.Record(10);   // le 10 µs: inclusive
  h.Record(11);   // next bucket
  h.Record(100);  // le 100 µs
  h.Record(101);
  h.Record(1000);  // le 1 ms
  h.Record(2000);  // le 2.5 ms
  const auto counts = LatencyBucketCounts(h);
  ASSERT_EQ(counts.size(), LatencyBoundsSeconds().size() + 1);
  EXPECT_EQ(counts[BoundIndex(0.00001)], 2u);
  EXPECT_EQ(counts[BoundIndex(0.000025)], 1u);
  EXPECT_EQ(counts[BoundIndex(0.0001)], 1u);
  EXPECT_EQ(counts[BoundIndex(0.00025)], 1u);
  EXPECT_EQ(counts[BoundIndex(0.001)], 1u);
  EXPECT_EQ(counts[BoundIndex(0.0025)], 1u);
  const auto cumulative = Cumulative(counts);
  EXPECT_EQ(cumulative.back(), h.count());
  for (size_t i = 1; i < cumulative.size(); ++i) EXPECT_LE(cumulative[i - 1], cumulative[i]);
}

TEST(LatencyBucketsTest, AboveTheHighestBoundGoesToTheLastEntry) {
  Histogram h;
  h.Record(20'000'000);  // 20 s
  h.Record(Histogram::kHighestTrackable + 5);
  const auto counts = LatencyBucketCounts(h);
  EXPECT_EQ(counts.back(), 2u);
  EXPECT_EQ(Cumulative(counts).back(), 2u);
}

TEST(LatencyBucketsTest, WithinHdrPrecisionAboveTwoMilliseconds) {
  // 5,000 µs and a value just past the 5 ms bound but in the same
  // HdrHistogram sub-bucket (width 4 µs there) count as ≤ 5 ms; one a
  // sub-bucket further does not.
  Histogram h;
  h.Record(5000);
  h.Record(5003);
  h.Record(5004);
  const auto c = Cumulative(LatencyBucketCounts(h));
  EXPECT_EQ(c[BoundIndex(0.005)], 2u);
  EXPECT_EQ(c[BoundIndex(0.01)], 3u);
}

TEST(LatencyBucketsTest, BucketsOfMergedHistogramsAreSums) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(6, 2);
  Histogram a, b;
  for (int i = 0; i < 20000; ++i) a.Record(static_cast<int64_t>(d(rng)));
  for (int i = 0; i < 10000; ++i) b.Record(static_cast<int64_t>(d(rng)));
  Histogram m = a;
  m.Merge(b);
  const auto ca = LatencyBucketCounts(a), cb = LatencyBucketCounts(b), cm = LatencyBucketCounts(m);
  for (size_t i = 0; i < cm.size(); ++i) EXPECT_EQ(cm[i], ca[i] + cb[i]) << i;
  EXPECT_EQ(Cumulative(cm).back(), 30000u);
}

}  // namespace
}  // namespace fairbench::metrics

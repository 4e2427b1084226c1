#include "common/histogram.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace fairbench {
namespace {

std::vector<int64_t> LatencyLikeSamples(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> body(std::log(300.0), 0.8);  // ~300 µs
  std::uniform_real_distribution<double> tail(0, 1);
  std::vector<int64_t> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    double x = body(rng);
    if (tail(rng) < 0.01) x *= 1000;  // rare stalls up to seconds
    v.push_back(static_cast<int64_t>(x) + 1);
  }
  return v;
}

uint64_t ExactAtPercentile(std::vector<int64_t> sorted, double p) {
  auto rank = static_cast<uint64_t>(std::llround(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<uint64_t>(rank, 1, sorted.size());
  return static_cast<uint64_t>(sorted[rank - 1]);
}

TEST(HistogramTest, LayoutMatchesHdrHistogramForOneHour) {
  EXPECT_EQ(Histogram::kCountsLen, 23552);
  // Exact below 2048.
  for (int64_t v = 0; v < 2048; ++v) {
    EXPECT_EQ(Histogram::ValueFromIndex(Histogram::IndexOf(v)), v);
    EXPECT_EQ(Histogram::HighestEquivalentValue(v), v);
  }
  EXPECT_EQ(Histogram::LowestEquivalentValue(2049), 2048);
  EXPECT_EQ(Histogram::HighestEquivalentValue(2048), 2049);
  EXPECT_EQ(Histogram::LowestEquivalentValue(10007), 10000);
  EXPECT_EQ(Histogram::HighestEquivalentValue(10007), 10007);
  EXPECT_LT(Histogram::IndexOf(Histogram::kHighestTrackable), Histogram::kCountsLen);
}

TEST(HistogramTest, EveryValueMapsIntoItsOwnRange) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> dist(0, Histogram::kHighestTrackable);
  for (int i = 0; i < 200000; ++i) {
    const int64_t v = dist(rng);
    const int64_t lo = Histogram::LowestEquivalentValue(v);
    const int64_t hi = Histogram::HighestEquivalentValue(v);
    ASSERT_LE(lo, v);
    ASSERT_GE(hi, v);
    // Width of the range is within 1/1024 of the value (3 significant digits).
    ASSERT_LE(static_cast<double>(hi - lo), std::max(0.0, static_cast<double>(v) / 1024.0)) << v;
  }
}

TEST(HistogramTest, PercentilesAgreeWithSortedSamplesWithinPrecision) {
  auto samples = LatencyLikeSamples(200000, 1);
  Histogram h;
  for (int64_t v : samples) h.Record(v);
  std::sort(samples.begin(), samples.end());
  for (double p : {0.0, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    const uint64_t exact = ExactAtPercentile(samples, p);
    const uint64_t got = h.ValueAtPercentile(p);
    const double tolerance = exact < 2048 ? 0.0 : static_cast<double>(exact) / 1024.0;
    EXPECT_NEAR(static_cast<double>(got), static_cast<double>(exact), tolerance) << "p" << p;
  }
  EXPECT_EQ(h.min(), static_cast<uint64_t>(samples.front()));
  EXPECT_EQ(h.max(), static_cast<uint64_t>(samples.back()));
}

TEST(HistogramTest, MeanAndSampleStdevAreExact) {
  const std::vector<int64_t> samples = {100, 200, 300, 400, 10000, 3};
  Histogram h;
  double sum = 0;
  for (int64_t v : samples) {
    h.Record(v);
    sum += static_cast<double>(v);
  }
  const double mean = sum / static_cast<double>(samples.size());
  double ss = 0;
  for (int64_t v : samples) ss += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  EXPECT_DOUBLE_EQ(h.Mean(), mean);
  EXPECT_NEAR(h.Stdev(), std::sqrt(ss / static_cast<double>(samples.size() - 1)), 1e-9);
  Histogram one;
  one.Record(5);
  EXPECT_EQ(one.Stdev(), 0.0);
  EXPECT_EQ(Histogram().Mean(), 0.0);
  EXPECT_EQ(Histogram().ValueAtPercentile(50), 0u);
}

TEST(HistogramTest, WithinStdevMatchesWrkDefinition) {
  Histogram h;
  for (int i = 0; i < 90; ++i) h.Record(100);
  for (int i = 0; i < 10; ++i) h.Record(1000);
  // mean 190, stdev ~271: the 90 samples at 100 are inside, the 10 at 1000 are not.
  EXPECT_DOUBLE_EQ(h.WithinStdevPercent(), 90.0);
}

TEST(HistogramTest, MergeOfPartsEqualsOneHistogramOfAllSamples) {
  const auto samples = LatencyLikeSamples(50000, 2);
  Histogram all;
  Histogram parts[4];
  for (size_t i = 0; i < samples.size(); ++i) {
    all.Record(samples[i]);
    parts[i % 4].Record(samples[i]);
  }
  Histogram merged;
  // Associative and commutative: merge in a different order.
  merged.Merge(parts[2]);
  merged.Merge(parts[0]);
  Histogram tail;
  tail.Merge(parts[3]);
  tail.Merge(parts[1]);
  merged.Merge(tail);
  EXPECT_TRUE(merged == all);
  EXPECT_EQ(merged.ValueAtPercentile(99.9), all.ValueAtPercentile(99.9));
}

TEST(HistogramTest, ClampsValuesAboveTheRange) {
  Histogram h;
  h.Record(Histogram::kHighestTrackable * 2);
  h.Record(-5);
  EXPECT_EQ(h.clamped(), 1u);
  EXPECT_EQ(h.max(), static_cast<uint64_t>(Histogram::kHighestTrackable));
  EXPECT_EQ(h.min(), 0u);
}

TEST(HistogramTest, CompressedEncodingRoundTrips) {
  const auto samples = LatencyLikeSamples(100000, 3);
  Histogram h;
  for (int64_t v : samples) h.Record(v);
  const std::string bytes = h.EncodeCompressed();
  ASSERT_GT(bytes.size(), 8u);
  EXPECT_LT(bytes.size(), 16u * 1024) << "a busy histogram must stay a few KB";
  auto decoded = Histogram::DecodeCompressed(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  decoded->SetMoments(h.moments(), h.clamped());
  EXPECT_TRUE(*decoded == h);
  for (int i = 0; i < Histogram::kCountsLen; ++i) ASSERT_EQ(decoded->CountAtIndex(i), h.CountAtIndex(i));
}

TEST(HistogramTest, EmptyAndSingleValueRoundTrip) {
  Histogram empty;
  auto d = Histogram::DecodeCompressed(empty.EncodeCompressed());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->count(), 0u);
  Histogram one;
  one.Record(Histogram::kHighestTrackable);
  d = Histogram::DecodeCompressed(one.EncodeCompressed());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->count(), 1u);
  EXPECT_EQ(d->ValueAtPercentile(100),
            static_cast<uint64_t>(Histogram::HighestEquivalentValue(Histogram::kHighestTrackable)));
}

TEST(HistogramTest, EncodingHeaderIsHdrHistogramV2) {
  Histogram h;
  h.Record(1);
  const std::string bytes = h.EncodeCompressed();
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  EXPECT_EQ(p[0], 0x1c);
  EXPECT_EQ(p[1], 0x84);
  EXPECT_EQ(p[2], 0x93);
  EXPECT_EQ(p[3], 0x14);
}

TEST(HistogramTest, DecodeRejectsGarbage) {
  EXPECT_FALSE(Histogram::DecodeCompressed("").ok());
  EXPECT_FALSE(Histogram::DecodeCompressed("12345678").ok());
  Histogram h;
  h.Record(42);
  std::string bytes = h.EncodeCompressed();
  bytes.resize(bytes.size() - 3);
  EXPECT_FALSE(Histogram::DecodeCompressed(bytes).ok());
  std::string flipped = h.EncodeCompressed();
  flipped[10] = static_cast<char>(flipped[10] ^ 0x5a);
  EXPECT_FALSE(Histogram::DecodeCompressed(flipped).ok());
}

// A V2 compressed histogram of fairbench's layout around a raw payload of
// zig-zag LEB128 counts, for payloads EncodeCompressed never writes.
std::string CompressedV2(const std::string& payload) {
  std::string v2;
  auto be32 = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) v2.push_back(static_cast<char>((v >> shift) & 0xff));
  };
  auto be64 = [&](uint64_t v) {
    be32(static_cast<uint32_t>(v >> 32));
    be32(static_cast<uint32_t>(v));
  };
  be32(0x1c849313);
  be32(static_cast<uint32_t>(payload.size()));
  be32(0);
  be32(3);
  be64(1);
  be64(3'600'000'000);
  be64(0x3ff0000000000000);  // 1.0
  v2 += payload;
  uLongf bound = compressBound(static_cast<uLong>(v2.size()));
  std::string z(bound, '\0');
  EXPECT_EQ(compress2(reinterpret_cast<Bytef*>(z.data()), &bound, reinterpret_cast<const Bytef*>(v2.data()),
                      static_cast<uLong>(v2.size()), 6),
            Z_OK);
  z.resize(bound);
  v2.clear();
  be32(0x1c849314);
  be32(static_cast<uint32_t>(z.size()));
  return v2 + z;
}

// HdrHistogram's LEB128 variant of the zig-zag encoding of v.
std::string ZigZag(int64_t signed_value) {
  uint64_t v = (static_cast<uint64_t>(signed_value) << 1) ^ static_cast<uint64_t>(signed_value >> 63);
  std::string out;
  for (int i = 0; i < 8; ++i) {
    if ((v >> 7) == 0) return out + static_cast<char>(v);
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  return out + static_cast<char>(v);
}

TEST(HistogramTest, DecodeReadsAHandWrittenPayload) {
  // The helpers agree with the decoder: a zero run of 5, then 3 at index 5.
  auto h = Histogram::DecodeCompressed(CompressedV2(ZigZag(-5) + ZigZag(3)));
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->count(), 3u);
  EXPECT_EQ(h->CountAtIndex(5), 3u);
}

// A zero run of INT64_MIN was negated (undefined behaviour, reported by
// UBSan in the fuzz build) and, wrapped, taken as a run of 0, not refused.
TEST(HistogramTest, DecodeRefusesAZeroRunOfInt64Min) {
  auto h = Histogram::DecodeCompressed(CompressedV2(ZigZag(INT64_MIN) + ZigZag(1)));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("zero run"), std::string::npos) << h.status().message();
}

// Counts whose total overflows 64 bits used to wrap to a small count that a
// hostile agent could make agree with the count it claims.
TEST(HistogramTest, DecodeRefusesCountsWhoseTotalOverflows) {
  auto h = Histogram::DecodeCompressed(CompressedV2(ZigZag(INT64_MAX) + ZigZag(INT64_MAX) + ZigZag(2)));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("overflow"), std::string::npos) << h.status().message();
}

}  // namespace
}  // namespace fairbench

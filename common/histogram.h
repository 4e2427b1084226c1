// Histogram: a latency histogram with HdrHistogram's bucket layout.
//
// Values are integers (fairbench records microseconds). The layout is fixed
// for the whole project so that any two histograms merge by adding their
// count arrays: lowest discernible value 1, highest trackable value
// kHighestTrackable (one hour in microseconds), 3 significant digits. Values
// below 2048 are exact; above, the relative error is at most 1/1024. Values
// above the highest trackable value are clamped to it and counted in
// clamped().
//
// Besides the counts it keeps the exact count, sum, sum of squares, min and
// max, so the mean and the sample standard deviation are exact, not
// estimated from buckets.
//
// Encoding: EncodeCompressed() writes HdrHistogram's V2 compressed format
// (cookie 0x1c849314, zlib-deflated V2 payload with zig-zag LEB128 counts and
// negative runs of zeros) — the format HdrHistogram's implementations share;
// histogram_interop_test checks it both ways against hdr-histogram-js. The
// exact moments travel separately (see HistogramMoments).
//
// Not thread-safe: one writer; merge copies made by the owner.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fairbench {

__extension__ typedef unsigned __int128 uint128_t;

// The exact moments of a set of samples; merge by addition.
struct HistogramMoments {
  uint64_t count = 0;
  uint64_t sum = 0;
  uint128_t sum_squares = 0;
  uint64_t min = 0;  // meaningful when count > 0
  uint64_t max = 0;
};

class Histogram {
 public:
  static constexpr int64_t kLowestDiscernible = 1;
  static constexpr int64_t kHighestTrackable = 3'600'000'000;  // 1 h in µs
  static constexpr int kSignificantDigits = 3;
  static constexpr int kSubBucketHalfCountMagnitude = 10;
  static constexpr int64_t kSubBucketCount = int64_t{1} << (kSubBucketHalfCountMagnitude + 1);  // 2048
  static constexpr int64_t kSubBucketHalfCount = kSubBucketCount / 2;                           // 1024
  static constexpr int64_t kSubBucketMask = kSubBucketCount - 1;
  static constexpr int kBucketCount = 22;  // 2048 << 21 > kHighestTrackable
  static constexpr int kCountsLen = (kBucketCount + 1) * static_cast<int>(kSubBucketHalfCount);

  // Empty, and holding no counts array until a value arrives: a histogram
  // that stays empty (the uncorrected latency of a closed-loop run) costs
  // nothing to make, copy or merge.
  Histogram();

  // Hot path: no allocation after the first value, no branches beyond the
  // clamp and that one.
  void Record(int64_t value) {
    if (counts_.empty()) [[unlikely]]
      AllocateCounts();
    if (value < 0) value = 0;
    if (value > kHighestTrackable) {
      value = kHighestTrackable;
      ++clamped_;
    }
    const auto v = static_cast<uint64_t>(value);
    ++counts_[IndexOf(value)];
    if (moments_.count == 0 || v < moments_.min) moments_.min = v;
    if (v > moments_.max) moments_.max = v;
    ++moments_.count;
    moments_.sum += v;
    moments_.sum_squares += static_cast<uint128_t>(v) * v;
  }

  void Merge(const Histogram& other);
  void Reset();

  uint64_t count() const { return moments_.count; }
  uint64_t clamped() const { return clamped_; }
  uint64_t min() const { return moments_.count ? moments_.min : 0; }
  uint64_t max() const { return moments_.max; }
  const HistogramMoments& moments() const { return moments_; }
  double Mean() const;
  // Sample standard deviation (n - 1), as wrk prints it; 0 for fewer than 2 samples.
  double Stdev() const;
  // Share of samples (in percent) within mean ± stdev, counted by bucket.
  double WithinStdevPercent() const;
  // The value at rank max(1, round(p/100 × count)) in sorted order, reported
  // as the highest value equivalent to its bucket, never above max().
  // 0 when empty. p in [0, 100].
  uint64_t ValueAtPercentile(double p) const;

  // Count array access (for exporters such as Prometheus bucket bounds).
  uint64_t CountAtIndex(int index) const { return counts_.empty() ? 0 : counts_[static_cast<size_t>(index)]; }
  static int64_t ValueFromIndex(int index);
  static int64_t HighestEquivalentValue(int64_t value);
  static int64_t LowestEquivalentValue(int64_t value);

  static int IndexOf(int64_t value) {
    const int pow2ceiling = 64 - __builtin_clzll(static_cast<uint64_t>(value) | kSubBucketMask);
    const int bucket = pow2ceiling - (kSubBucketHalfCountMagnitude + 1);
    const int sub_bucket = static_cast<int>(value >> bucket);
    return ((bucket + 1) << kSubBucketHalfCountMagnitude) + (sub_bucket - static_cast<int>(kSubBucketHalfCount));
  }

  // V2 compressed encoding of the counts; the moments and clamped count are
  // not part of the format. Decode() rebuilds counts and derives min/max and
  // count from them; sum and sum_squares are then bucket estimates unless the
  // caller restores exact moments with SetMoments().
  std::string EncodeCompressed() const;
  static Result<Histogram> DecodeCompressed(std::string_view bytes);
  void SetMoments(const HistogramMoments& m, uint64_t clamped) {
    moments_ = m;
    clamped_ = clamped;
  }

  bool operator==(const Histogram& other) const;

 private:
  void AllocateCounts() { counts_.assign(static_cast<size_t>(kCountsLen), 0); }

  std::vector<uint64_t> counts_;  // empty, or kCountsLen counts
  HistogramMoments moments_;
  uint64_t clamped_ = 0;
};

}  // namespace fairbench

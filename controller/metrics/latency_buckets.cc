#include "controller/metrics/latency_buckets.h"

#include <cmath>

namespace fairbench::metrics {
namespace {

std::vector<int64_t> BoundsMicros() {
  std::vector<int64_t> out;
  for (double s : LatencyBoundsSeconds()) out.push_back(std::llround(s * 1e6));
  return out;
}

}  // namespace

const std::vector<double>& LatencyBoundsSeconds() {
  static const std::vector<double> bounds = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                             0.0025,  0.005,    0.01,    0.025,  0.05,    0.1,    0.25,
                                             0.5,     1,        2.5,     5,      10};
  return bounds;
}

std::vector<uint64_t> LatencyBucketCounts(const Histogram& latency_us) {
  static const std::vector<int64_t> bounds = BoundsMicros();
  std::vector<uint64_t> counts(bounds.size() + 1, 0);
  if (latency_us.count() == 0) return counts;
  // Indices run in increasing value order; stop at the highest index a
  // recorded value can occupy.
  const int last = Histogram::IndexOf(static_cast<int64_t>(latency_us.max()));
  size_t b = 0;
  for (int i = 0; i <= last && i < Histogram::kCountsLen; ++i) {
    const uint64_t n = latency_us.CountAtIndex(i);
    if (n == 0) continue;
    const int64_t v = Histogram::ValueFromIndex(i);
    while (b < bounds.size() && v > bounds[b]) ++b;
    counts[b] += n;
  }
  return counts;
}

std::vector<uint64_t> Cumulative(const std::vector<uint64_t>& counts) {
  std::vector<uint64_t> out(counts.size());
  uint64_t sum = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    sum += counts[i];
    out[i] = sum;
  }
  return out;
}

}  // namespace fairbench::metrics

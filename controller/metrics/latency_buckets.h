// LatencyBuckets: Prometheus histogram buckets derived from fairbench's
// HdrHistogram.
//
// The bounds are fixed (a Prometheus histogram's buckets must not change
// over a series' life) and chosen on a 1-2.5-5 ladder from 10 µs to 10 s,
// which covers loopback latencies as well as timeouts. The count for a bound
// is the number of recorded values whose HdrHistogram sub-bucket starts at or
// below it: exact up to 2,048 µs (where the HdrHistogram records every
// microsecond) and within its 1/1024 relative precision above. Everything
// merges by addition, so the buckets of merged intervals are the sums of the
// intervals' buckets. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "common/histogram.h"

namespace fairbench::metrics {

// Upper bounds in seconds, ascending, without +Inf.
const std::vector<double>& LatencyBoundsSeconds();

// Per-bound counts (not cumulative) of a histogram of microseconds, one per
// bound plus a last entry for the values above the highest bound.
std::vector<uint64_t> LatencyBucketCounts(const Histogram& latency_us);

// Running sums → cumulative counts, as the exposition writes them.
std::vector<uint64_t> Cumulative(const std::vector<uint64_t>& counts);

}  // namespace fairbench::metrics

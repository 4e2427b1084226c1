// Test code: what a constant rate's schedule implies for latency measured
// from each request's due time when the requests come faster than a
// connection's streams can carry them (engine_h2_rate_test, grpc_test).
//
// On one connection request k (k = 0, 1, …) is due k·period after the
// first. With at most `streams` open at once, each holding its slot at
// least `slot` and answered at least `answer` after its send, request k
// cannot go out before ⌊k/S⌋ slots have passed since the first went, so
// its answer comes at least ⌊k/S⌋·slot + answer after the first was due.
// ⌊k/S⌋ ≥ (k+1−S)/S gives a bound that increases with k when slot/S >
// period (the rate is above what the streams carry):
//     L(k) = (k+1−S)/S · slot + answer − k · period.
// Over C connections at most C·m answers lie below L(m), whichever were
// counted, so the value a histogram of n latencies reports at percentile p
// (its rank round(p/100 · n), as Histogram::ValueAtPercentile) is at least
// L(⌊(rank−1)/C⌋).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace fairbench::agent {

inline double DueLatencyLowerBound(double k, uint32_t streams, double slot, double answer, double period) {
  return (k + 1 - streams) / streams * slot + answer - k * period;
}

inline double RankLowerBound(double p, uint64_t n, uint32_t connections, uint32_t streams, double slot, double answer,
                             double period) {
  const auto rank = std::clamp<int64_t>(std::llround(p / 100.0 * static_cast<double>(n)), 1,
                                        std::max<int64_t>(1, static_cast<int64_t>(n)));
  const double k = std::floor(static_cast<double>(rank - 1) / connections);
  return DueLatencyLowerBound(k, streams, slot, answer, period);
}

}  // namespace fairbench::agent

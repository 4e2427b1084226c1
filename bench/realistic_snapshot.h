// A busy one-second snapshot for the controller's benchmarks: 100,000
// latencies spread like a real server's (a lognormal body around 300 µs and
// a 1 % tail up to seconds), 100 connections, one agent's counters.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

#include "common/metrics.h"

namespace fairbench::bench {

inline Snapshot RealisticSnapshot(uint64_t sequence) {
  Snapshot s;
  s.sequence = sequence;
  s.phase = Phase::kMeasure;
  s.start_ns = static_cast<int64_t>(sequence - 1) * 1'000'000'000;
  s.end_ns = static_cast<int64_t>(sequence) * 1'000'000'000;
  std::mt19937_64 rng(sequence);
  std::lognormal_distribution<double> body(std::log(300.0), 0.6);
  std::uniform_real_distribution<double> tail(0, 1);
  for (int i = 0; i < 100000; ++i) {
    double v = body(rng);
    if (tail(rng) < 0.01) v *= 100;
    s.stats.latency.Record(static_cast<int64_t>(v));
  }
  s.stats.counters.requests = 100000;
  s.stats.counters.bytes_read = 100000 * 160;
  s.stats.counters.status_classes[2] = 100000;
  for (int i = 0; i < 40; ++i) s.stats.rate_samples.push_back(100000.0 + i);
  s.connections_open = 100;
  s.cpu_seconds = 0.9;
  return s;
}

}  // namespace fairbench::bench

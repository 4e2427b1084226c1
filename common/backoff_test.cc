#include "common/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace fairbench {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// Catches: a factor or cap ignored, a Reset that does not start over.
TEST(BackoffTest, GrowsExponentiallyUpToTheCap) {
  Backoff b({milliseconds(100), milliseconds(1000), 2.0, 0.0}, 1);
  EXPECT_EQ(b.Next(), milliseconds(100));
  EXPECT_EQ(b.Next(), milliseconds(200));
  EXPECT_EQ(b.Next(), milliseconds(400));
  EXPECT_EQ(b.Next(), milliseconds(800));
  EXPECT_EQ(b.Next(), milliseconds(1000));
  EXPECT_EQ(b.Next(), milliseconds(1000));
  b.Reset();
  EXPECT_EQ(b.Next(), milliseconds(100));
}

// Catches: jitter that shortens a wait, or stretches it past its fraction.
TEST(BackoffTest, JitterStaysWithinBounds) {
  Backoff b({milliseconds(100), milliseconds(10000), 2.0, 0.5}, 7);
  for (int i = 0; i < 5; ++i) {
    auto base = milliseconds(100 << i);
    auto got = b.Next();
    EXPECT_GE(got, base);
    EXPECT_LE(got, base * 3 / 2);
  }
}

// Catches: waits at the cap all alike (connections or controllers that
// retry in lockstep once they reach it).
TEST(BackoffTest, WaitsAtTheCapStillSpread) {
  const BackoffPolicy p{milliseconds(100), milliseconds(1000), 2.0, 0.5};
  std::set<int64_t> waits;
  for (uint64_t draw = 0; draw < 1000; draw += 97) {
    const nanoseconds w = BackoffDelay(p, 20, draw * 1'000'003);
    EXPECT_GE(w, milliseconds(1000));
    EXPECT_LE(w, milliseconds(1500));
    waits.insert(w.count());
  }
  EXPECT_GT(waits.size(), 5u);
}

// The load worker's reconnect backoff (agent/worker.cc) as it was written
// before it used BackoffDelay: equal jitter over [backoff/2, backoff],
// backoff doubling from 1 ms to 1 s, the jitter from a hash of the
// connection. Catches: the worker's waits changed by the shared formula.
TEST(BackoffTest, ReproducesTheWorkersReconnectWaits) {
  const BackoffPolicy worker{std::chrono::microseconds(500), milliseconds(500), 2.0, 1.0};
  for (uint32_t failures = 2; failures < 40; ++failures) {
    for (uint64_t id : {0ull, 1ull, 977ull, 65535ull}) {
      const uint32_t doublings = std::min<uint32_t>(failures - 2, 10);
      const int64_t backoff = std::min<int64_t>(1'000'000'000, int64_t{1'000'000} << doublings);
      const uint64_t h = (id * 0x9E3779B97F4A7C15ull) ^ (uint64_t{failures} * 0xC2B2AE3D27D4EB4Full);
      const int64_t want = backoff / 2 + static_cast<int64_t>(h % static_cast<uint64_t>(backoff / 2 + 1));
      EXPECT_EQ(BackoffDelay(worker, failures - 2, h).count(), want) << failures << " failures, connection " << id;
    }
  }
}

}  // namespace
}  // namespace fairbench

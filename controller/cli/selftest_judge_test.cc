// JudgeStall against histograms simulated here, request by request, from
// the stall's first principles; the known answers come from sorting the
// simulated latencies, not from the histogram code under test.
#include "controller/cli/selftest_judge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace fairbench::controller {
namespace {

constexpr int64_t kRate = 1000;  // requests/s
constexpr int64_t kMeasureUs = 4'000'000;
constexpr int64_t kStallUs = 500'000;
constexpr int64_t kStallStartUs = 1'750'000;
constexpr int64_t kDelayUs = 1'000;
constexpr int64_t kClosedConnections = 4;

StallExpectation Expectation() {
  StallExpectation e;
  e.stall = std::chrono::microseconds(kStallUs);
  e.delay = std::chrono::microseconds(kDelayUs);
  e.rate = kRate;
  e.closed_connections = kClosedConnections;
  return e;
}

// The open model at kRate, each latency from its due time: a request due
// during the stall is answered when it ends. `corrected` false: timed
// from when it was sent instead, as a harness without the correction does
// — then only the `in_flight` requests sent before the stall see it.
std::vector<int64_t> OpenLatencies(bool corrected, int64_t in_flight) {
  std::vector<int64_t> out;
  const int64_t n = kRate * kMeasureUs / 1'000'000;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t due = i * 1'000'000 / kRate;
    const bool stalled = due >= kStallStartUs && due < kStallStartUs + kStallUs;
    if (!stalled) {
      out.push_back(kDelayUs);
    } else if (corrected) {
      out.push_back(kStallStartUs + kStallUs - due + kDelayUs);
    } else {
      out.push_back(kDelayUs);
    }
  }
  if (!corrected) {
    for (int64_t c = 0; c < in_flight; ++c) out[static_cast<size_t>(c)] = kStallUs + kDelayUs;
  }
  return out;
}

// A closed loop of `connections`: one request each in flight when the
// stall begins; everything else answered after the delay.
std::vector<int64_t> ClosedLatencies(int64_t connections, bool stalled) {
  std::vector<int64_t> out(14'000, kDelayUs + 100);
  if (stalled) {
    for (int64_t c = 0; c < connections; ++c) out[static_cast<size_t>(c * 100)] = kStallUs + kDelayUs - c * 200;
  }
  return out;
}

Histogram Of(const std::vector<int64_t>& values) {
  Histogram h;
  for (int64_t v : values) h.Record(v);
  return h;
}

// The value with `above` values greater than it, from the sorted samples.
int64_t RankFromTop(std::vector<int64_t> values, int64_t above) {
  std::sort(values.begin(), values.end());
  return values[values.size() - 1 - static_cast<size_t>(above)];
}

const SelftestCheck& Find(const StallVerdict& v, const std::string& cell, const std::string& prefix) {
  for (const SelftestCheck& c : v.checks) {
    if (c.cell == cell && c.name.rfind(prefix, 0) == 0) return c;
  }
  static const SelftestCheck none;
  ADD_FAILURE() << "no check " << cell << " " << prefix;
  return none;
}

// Catches: the open model's percentile taken at a rank other than
// N − R·S/2 (or in other units), and bounds that reject a harness that
// measures the stall as it happened.
TEST(JudgeStallTest, CorrectedOpenModelAndClosedLoopPass) {
  const std::vector<int64_t> open = OpenLatencies(true, 0);
  const StallVerdict v = JudgeStall(Of(open), Of(ClosedLatencies(kClosedConnections, true)), Expectation());
  EXPECT_TRUE(v.passed);
  ASSERT_EQ(v.checks.size(), 5u);
  for (const SelftestCheck& c : v.checks) EXPECT_TRUE(c.passed) << c.cell << " " << c.name << " " << c.measured;

  // R·S/2 = 250 requests lie above the value at that rank: the request due
  // 250 ms before the stall's end, answered at its end, took 250 ms + 1 ms
  // (sorting says 251 ms; HdrHistogram's bucket is within 1/1024).
  const int64_t truth = RankFromTop(open, kRate * kStallUs / 1'000'000 / 2);
  EXPECT_EQ(truth, 251'000);
  const SelftestCheck& p = Find(v, "open", "p");
  EXPECT_EQ(p.name, "p93.75");  // 1 − 250/4000
  EXPECT_NEAR(p.measured, 251.0, 251.0 / 1024);
  EXPECT_NEAR(p.error, 1.0, 0.3);  // 251 ms against S/2 = 250 ms
  EXPECT_DOUBLE_EQ(p.low, 200.0);
  EXPECT_DOUBLE_EQ(p.high, 300.0);
  // The longest wait: due at the stall's first instant, 500 ms + 1 ms.
  EXPECT_NEAR(Find(v, "open", "max").measured, 501.0, 501.0 / 1024);
  EXPECT_EQ(Find(v, "closed", "requests").measured, kClosedConnections);
}

// Catches: a judge that would pass a harness that does not correct for
// coordinated omission — the open cell timed from each request's send,
// where only the 50 requests in flight saw the stall.
TEST(JudgeStallTest, UncorrectedOpenModelFails) {
  const std::vector<int64_t> open = OpenLatencies(false, 50);
  const StallVerdict v = JudgeStall(Of(open), Of(ClosedLatencies(kClosedConnections, true)), Expectation());
  EXPECT_FALSE(v.passed);
  const SelftestCheck& p = Find(v, "open", "p");
  EXPECT_FALSE(p.passed);
  // Sorting says the value at that rank is the server's delay: 1 ms.
  EXPECT_EQ(RankFromTop(open, 250), kDelayUs);
  EXPECT_NEAR(p.measured, 1.0, 0.01);
  EXPECT_NEAR(p.error, -249.0, 0.01);
  // Its max still shows the stall: only the percentile gives it away.
  EXPECT_TRUE(Find(v, "open", "max").passed);
}

// Catches: a judge that passes a closed loop whose percentiles do not hide
// the stall (a closed cell silently corrected, or the open cell judged in
// its place): more than C requests above S/2 and a p99 near the stall.
TEST(JudgeStallTest, ClosedCellWithoutOmissionFails) {
  const std::vector<int64_t> open = OpenLatencies(true, 0);
  const StallVerdict v = JudgeStall(Of(open), Of(open), Expectation());
  EXPECT_FALSE(v.passed);
  const SelftestCheck& count = Find(v, "closed", "requests");
  EXPECT_FALSE(count.passed);
  // Requests due in the stall's first half: 250 (+ the one due at its middle, 250 ms + 1 ms ≥ 250 ms).
  EXPECT_EQ(count.measured,
            static_cast<double>(std::count_if(open.begin(), open.end(), [](int64_t x) { return x >= kStallUs / 2; })));
  EXPECT_FALSE(Find(v, "closed", "p99").passed);
}

// Catches: max checks that accept a stall that never reached the cells
// (the server not stopped, or stopped outside the measurement).
TEST(JudgeStallTest, NoStallFails) {
  const StallVerdict v =
      JudgeStall(Of(ClosedLatencies(0, false)), Of(ClosedLatencies(kClosedConnections, false)), Expectation());
  EXPECT_FALSE(v.passed);
  EXPECT_FALSE(Find(v, "open", "max").passed);
  EXPECT_FALSE(Find(v, "closed", "max").passed);
  EXPECT_FALSE(Find(v, "closed", "requests").passed);  // none saw it: not even the ones in flight
}

// Catches: a count above a value that misses the bucket holding it, or
// counts the bucket below. 250,000 and 250,100 share HdrHistogram's bucket
// [249,984, 250,111] (128 µs wide between 2^17 and 2^18).
// Catches: a max bound with no room for the injector's own timing (a
// harness that measured the stall as it happened failing by 0.6 ms, as
// one did here on a busy machine), or one so wide that a stall measured
// short by more than that passes.
TEST(JudgeStallTest, TheMaxMayFallShortOfTheRecordedStallByItsTimingOnly) {
  const StallExpectation e = Expectation();
  auto open_with_max = [](int64_t max_us) {
    std::vector<int64_t> v = OpenLatencies(true, 0);
    for (int64_t& x : v) x = std::min(x, max_us);
    return Of(v);
  };
  const Histogram closed = Of(ClosedLatencies(kClosedConnections, true));
  EXPECT_TRUE(Find(JudgeStall(open_with_max(kStallUs - 1'000), closed, e), "open", "max").passed);
  EXPECT_FALSE(Find(JudgeStall(open_with_max(kStallUs - 3'000), closed, e), "open", "max").passed);
  EXPECT_DOUBLE_EQ(Find(JudgeStall(open_with_max(kStallUs), closed, e), "open", "max").low, kStallUs / 1000.0 - 2);
}

TEST(JudgeStallTest, CountAtOrAbove) {
  const Histogram h = Of({10, 2047, 2048, 250'000, 250'100, 499'000});
  EXPECT_EQ(CountAtOrAbove(h, 2048), 4u);
  EXPECT_EQ(CountAtOrAbove(h, 11), 5u);
  EXPECT_EQ(CountAtOrAbove(h, 250'000), 3u);
  EXPECT_EQ(CountAtOrAbove(h, 250'112), 1u);
  EXPECT_EQ(CountAtOrAbove(h, 500'000), 0u);
}

}  // namespace
}  // namespace fairbench::controller

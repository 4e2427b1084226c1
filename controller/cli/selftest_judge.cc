#include "controller/cli/selftest_judge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fairbench::controller {
namespace {

double Ms(std::chrono::nanoseconds d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string Range(double low, double high, const char* unit) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%.1f, %.1f] %s", low, high, unit);
  return buf;
}

SelftestCheck Bounded(std::string cell, std::string name, double measured, double theory, double low, double high,
                      std::string unit) {
  SelftestCheck c;
  c.cell = std::move(cell);
  c.name = std::move(name);
  c.measured = measured;
  c.low = low;
  c.high = high;
  c.error = measured - theory;
  c.unit = std::move(unit);
  c.expected = Range(low, high, c.unit.c_str());
  c.passed = measured >= low && measured <= high;
  return c;
}

// "p93.75": the percentile as HdrHistogram's tools name it.
std::string PercentileName(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%.4g", p);
  return buf;
}

}  // namespace

uint64_t CountAtOrAbove(const Histogram& h, int64_t value) {
  uint64_t n = 0;
  for (int i = Histogram::kCountsLen - 1; i >= 0; --i) {
    if (Histogram::HighestEquivalentValue(Histogram::ValueFromIndex(i)) < value) break;
    n += h.CountAtIndex(i);
  }
  return n;
}

StallVerdict JudgeStall(const Histogram& open, const Histogram& closed, const StallExpectation& e) {
  StallVerdict v;
  const double stall_ms = Ms(e.stall);
  const double delay_ms = Ms(e.delay);
  const double slack_ms = Ms(e.slack);
  const double timing_ms = Ms(e.timing);
  const double half_ms = stall_ms / 2;
  auto ms = [](uint64_t us) { return static_cast<double>(us) / 1000.0; };

  // Open model: the longest wait is the whole stall; the value at rank
  // N − R·S/2 is S/2.
  v.checks.push_back(
      Bounded("open", "max", ms(open.max()), stall_ms + delay_ms, stall_ms - timing_ms, stall_ms + slack_ms, "ms"));
  const double delayed_half = e.rate * std::chrono::duration<double>(e.stall).count() / 2;
  const auto n = static_cast<double>(open.count());
  const double p = n > 0 ? std::clamp(100.0 * (1.0 - delayed_half / n), 0.0, 100.0) : 100.0;
  v.checks.push_back(Bounded("open", PercentileName(p), ms(open.ValueAtPercentile(p)), half_ms,
                             half_ms * (1 - e.tolerance), half_ms * (1 + e.tolerance), "ms"));

  // Closed model: the stall reaches its max, and only the requests in
  // flight when it began; the p99 stays far below it.
  const double closed_ms = e.closed_stall.count() > 0 ? Ms(e.closed_stall) : stall_ms;
  v.checks.push_back(Bounded("closed", "max", ms(closed.max()), closed_ms + delay_ms, closed_ms - timing_ms,
                             closed_ms + slack_ms, "ms"));
  const auto connections = static_cast<double>(e.closed_connections);
  const auto half_us = static_cast<int64_t>(std::llround(closed_ms / 2 * 1000));
  v.checks.push_back(Bounded("closed", "requests >= S/2", static_cast<double>(CountAtOrAbove(closed, half_us)),
                             connections, 1, connections, "requests"));
  v.checks.push_back(Bounded("closed", "p99", ms(closed.ValueAtPercentile(99)), delay_ms, 0, closed_ms / 10, "ms"));

  v.passed = std::all_of(v.checks.begin(), v.checks.end(), [](const SelftestCheck& c) { return c.passed; });
  return v;
}

}  // namespace fairbench::controller

// The change points of one stored series, judged as `fairbench history
// check` judges them: one metric (requests/s or p99) of a Series
// (result_store.h) through E-Divisive means (controller/changes/), each change
// with whether it is a regression still in force at the newest run and
// whether it fails a threshold. `history check` and `fairbench serve`'s
// series page both call this, so the page marks exactly the changes the
// gate reports.
//
// Runs without a measurement (no succeeded repetition) are skipped; the
// change points' x values are the indices of the runs in series.points.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "controller/changes/change_points.h"
#include "controller/results/result_store.h"

namespace fairbench::results {

struct SeriesMetric {
  const char* flag;   // history check's --metric, and the JUnit test case's name
  const char* json;   // the JSON's name
  const char* title;  // for people
  changes::Better better;
  double SeriesPoint::*field;
};
inline constexpr SeriesMetric kRequestsPerSecondMetric{"rps", "requestsPerSecond", "requests/s",
                                                       changes::Better::kHigher, &SeriesPoint::requests_per_second};
inline constexpr SeriesMetric kP99Metric{"p99", "p99Us", "p99", changes::Better::kLower, &SeriesPoint::p99_us};

// history check's defaults (--threshold 5%, --min-change 1%).
inline constexpr double kDefaultThresholdPercent = 5;
inline constexpr double kDefaultMinChangePercent = 1;

struct SeriesFinding {
  changes::ChangePoint change;
  // Regressions: how much worse the newest segment is than the one before
  // the change, in percent; in force while at least half the change is left.
  double still_worse_percent = 0;
  bool in_force = false;
  // A regression of at least the threshold, still at least the threshold worse.
  bool failing = false;
};

struct MetricChanges {
  const SeriesMetric* metric = nullptr;
  size_t points = 0;    // runs with a measurement
  bool judged = false;  // enough of them for a change on either side (2 × min_segment)
  std::vector<SeriesFinding> findings;
  bool failed = false;  // a finding is failing
};

// `threshold` in percent; `options.better` is set from the metric.
MetricChanges FindSeriesChanges(const SeriesMetric& metric, const Series& series, double threshold,
                                const changes::Options& options);

}  // namespace fairbench::results

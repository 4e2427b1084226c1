// Change points in a benchmark series: where did a metric (a latency, a
// rate of requests) step up or down and stay there?
//
// E-Divisive means (Matteson & James, "A Nonparametric Approach for Multiple
// Change Point Analysis of Multivariate Data", 2014), the method Hunter and
// Apache Otava run over CI performance data and MongoDB describes in "Change
// Point Detection in Software Performance Testing" (Daly et al., 2020):
//
//   1. Over every segment of the series (at first the whole series) find the
//      split τ — and the end κ of the part right of it — that maximises the
//      divergence of energy statistics Q̂ between [start, τ) and [τ, κ):
//        Q̂ = m·n/(m+n) · (2/(m·n) Σ|x−y| − 2/(n(n−1)) Σ|x−x'| − 2/(m(m−1)) Σ|y−y'|)
//      with both parts at least `min_segment` points long.
//   2. Permutation test: shuffle the points within each segment,
//      `permutations` times, and count how often the shuffled series has a
//      split at least as strong. p = (count + 1) / (permutations + 1).
//   3. If p ≤ significance, the split is a change point: it splits its
//      segment in two and the search goes on (1.); otherwise it stops.
//
// Nothing is assumed about the distribution of the values (no normality);
// a change is any change of distribution, usually of the mean.
//
// The permutation test of a candidate that cannot reach `significance` stops
// as soon as that is certain: a series without a change costs a few
// shuffles, one with a change `permutations` per change. Cost per shuffle is
// O(n²) for n points, memory O(n). 1,000 series of 100 points take a few
// tenths of a second when few change, about a second when each has a step
// (bench/changes_bench.cc, one core); one series of 3,000 points about a
// second — analyse the most recent runs of a long series.
//
// Points whose value is not finite (NaN, ±inf: a missing or failed
// measurement) are skipped; indices in the result are those of the input.
// The points are taken in the order given (run order); x is carried through
// to the result, never interpreted.
//
// FindChangePoints is a pure function (no I/O, no global state): the same
// series, options and seed give the same result, on every platform (its
// shuffles use their own generator, not the standard library's
// distributions). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fairbench::changes {

struct Point {
  double x = 0;  // run order or time: carried through to the result
  double y = 0;  // the measured value
};

// Which way the metric gets better: latency and CPU per request kLower,
// requests per second kHigher. Decides regression or improvement.
enum class Better { kLower, kHigher };

struct Options {
  // Neither side of a change may have fewer points (at least 2). A change
  // is seen once this many runs after it show it; smaller catches changes
  // sooner but lets a short run of outliers pass for a change.
  size_t min_segment = 5;
  // The permutation test's level: the largest p-value accepted. For a series
  // without a change this is the chance that a change is reported anyway.
  // Below 1 / (permutations + 1) nothing can be significant.
  double significance = 0.05;
  int permutations = 100;  // at least 1
  uint64_t seed = 1;       // of the shuffles
  Better better = Better::kLower;
  // Report only changes of at least this many percent (|change_percent|);
  // smaller significant changes still bound the segments the means of the
  // reported ones are taken over.
  double min_change_percent = 0;
};

enum class Kind { kRegression, kImprovement };

struct ChangePoint {
  size_t index = 0;     // of the first point after the change, in the input
  double x_before = 0;  // x of the last point before the change
  double x_after = 0;   // x of the first point after it (input[index].x)
  // Over the points between the neighbouring change points (or the ends of
  // the series) on either side. Standard deviations are sample ones (n − 1).
  double mean_before = 0;
  double mean_after = 0;
  double stddev_before = 0;
  double stddev_after = 0;
  // (mean_after / mean_before − 1) × 100: the forward change. ±infinity when
  // mean_before is 0 and mean_after is not.
  double change_percent = 0;
  double p_value = 1;  // of the permutation test that accepted it
  // Q̂ of the split when it was accepted, over the segment it split, in the
  // unit of the values (Otava's qhat): how strongly the two sides differ.
  double q_hat = 0;
  Kind kind = Kind::kRegression;
};

// The change points of `series`, in order of index.
std::vector<ChangePoint> FindChangePoints(std::span<const Point> series, const Options& options = {});

}  // namespace fairbench::changes

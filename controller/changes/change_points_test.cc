#include "controller/changes/change_points.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "controller/changes/testdata/otava_reference.h"

namespace fairbench::changes {
namespace {

// Benchmark-like series: a level per segment and Gaussian noise of a given
// coefficient of variation (2 %: runs of one benchmark on one machine). The
// normal draws are Box–Muller over mt19937_64, which the standard fixes, so
// the series are the same with every standard library.
class SeriesMaker {
 public:
  explicit SeriesMaker(uint64_t seed) : engine_(seed) {}

  double Normal() {
    const double u1 = (static_cast<double>(engine_() >> 11) + 1) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }

  // `length` points around `level`, multiplied by each factor from its index on.
  std::vector<Point> Steps(size_t length, double level, double cv, std::vector<std::pair<size_t, double>> changes) {
    std::vector<Point> points(length);
    for (size_t i = 0; i < length; ++i) {
      double mean = level;
      for (const auto& [at, factor] : changes) {
        if (i >= at) mean *= factor;
      }
      points[i] = {static_cast<double>(i), mean * (1 + cv * Normal())};
    }
    return points;
  }

 private:
  std::mt19937_64 engine_;
};

const ChangePoint* Near(const std::vector<ChangePoint>& found, size_t index, size_t within = 1) {
  for (const auto& c : found) {
    if (c.index + within >= index && c.index <= index + within) return &c;
  }
  return nullptr;
}

// Catches: a statistic that misplaces a step (an off-by-one between τ and the
// first point after it), a change size not taken over the right segments, a
// regression told from an improvement the wrong way round for either kind
// of metric, a test too weak for 5 % in 2 % noise.
TEST(ChangePointsTest, FindsStepsOf5_10And30PercentWhereTheyAre) {
  int extra = 0;
  int series = 0;
  for (double step : {5.0, 10.0, 30.0}) {
    int within_one = 0;
    int count = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      SeriesMaker maker(seed * 1000 + static_cast<uint64_t>(step));
      // A latency that rises (a regression) and a rate that falls (one too).
      const auto latency = maker.Steps(100, 12.0, 0.02, {{60, 1 + step / 100}});
      const auto rate = maker.Steps(100, 20000.0, 0.02, {{35, 1 - step / 100}});
      const auto found_latency = FindChangePoints(latency, {.better = Better::kLower});
      const auto found_rate = FindChangePoints(rate, {.better = Better::kHigher});
      for (const auto& [found, at, sign] :
           {std::tuple{&found_latency, size_t{60}, 1.0}, std::tuple{&found_rate, size_t{35}, -1.0}}) {
        SCOPED_TRACE(testing::Message() << step << " % step at " << at << ", noise seed " << seed);
        ++count;
        ++series;
        if (Near(*found, at, 1) != nullptr) ++within_one;
        const ChangePoint* c = Near(*found, at, 4);
        ASSERT_NE(c, nullptr);
        EXPECT_EQ(c->kind, Kind::kRegression);
        // The means of 35-65 points with 2 % noise: within a point and a half.
        EXPECT_NEAR(c->change_percent, sign * step, 1.5);
        EXPECT_LE(c->p_value, 0.05);
        extra += static_cast<int>(found->size()) - 1;
      }
    }
    // A 5 % step is 2.5 standard deviations of one run: E-Divisive (Otava
    // alike, see AgreesWithApacheOtava) puts it within one run of where it
    // is in 95 % of such series (190 of 200 measured), within 4 in all.
    // 10 % and 30 %: always within one.
    std::printf("%.0f %% steps within one run: %d of %d\n", step, within_one, count);
    if (step == 5.0) {
      EXPECT_GE(within_one, count - 5);
    } else {
      EXPECT_EQ(within_one, count);
    }
  }
  // After the real change each side is tested again at the 5 % level: about
  // one series in twenty gets a spurious second change. 120 series: ~6
  // expected, 15 is three standard deviations above.
  std::printf("spurious extra change points: %d in %d series with one step\n", extra, series);
  EXPECT_LE(extra, 15);
}

// Catches: improvements reported as regressions, means of the wrong
// segments when there are several changes (each side stops at the
// neighbouring change point).
TEST(ChangePointsTest, ARegressionAndItsFixAreTwoChangesOfOppositeKind) {
  SeriesMaker maker(7);
  const auto series = maker.Steps(120, 3.0, 0.02, {{45, 1.25}, {85, 1 / 1.25}});
  const auto found = FindChangePoints(series);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_NEAR(static_cast<double>(found[0].index), 45, 1);
  EXPECT_NEAR(static_cast<double>(found[1].index), 85, 1);
  EXPECT_EQ(found[0].kind, Kind::kRegression);
  EXPECT_EQ(found[1].kind, Kind::kImprovement);
  EXPECT_NEAR(found[0].mean_before, 3.0, 0.05);
  EXPECT_NEAR(found[0].mean_after, 3.75, 0.05);
  EXPECT_NEAR(found[1].mean_before, 3.75, 0.05);
  EXPECT_NEAR(found[1].mean_after, 3.0, 0.05);
  EXPECT_NEAR(found[0].change_percent, 25, 2);
  EXPECT_NEAR(found[1].change_percent, -20, 2);
  // 2 % of the level: sample standard deviations of the segments.
  EXPECT_NEAR(found[0].stddev_before, 0.06, 0.02);
  EXPECT_NEAR(found[1].stddev_before, 0.075, 0.025);
  // x is carried: the runs on either side of the change.
  EXPECT_EQ(found[0].x_before, series[found[0].index - 1].x);
  EXPECT_EQ(found[0].x_after, series[found[0].index].x);
  // Requests per second: up is better.
  const auto as_rate = FindChangePoints(series, {.better = Better::kHigher});
  ASSERT_EQ(as_rate.size(), 2u);
  EXPECT_EQ(as_rate[0].kind, Kind::kImprovement);
  EXPECT_EQ(as_rate[1].kind, Kind::kRegression);
}

// Catches: a threshold that drops the big change with the small one, or that
// lets changes below it through.
TEST(ChangePointsTest, TheThresholdKeepsOnlyChangesAtLeastThatLarge) {
  SeriesMaker maker(11);
  const auto series = maker.Steps(120, 100.0, 0.01, {{40, 1.05}, {80, 1.30}});
  const auto all = FindChangePoints(series);
  ASSERT_EQ(all.size(), 2u);
  const auto big = FindChangePoints(series, {.min_change_percent = 10});
  ASSERT_EQ(big.size(), 1u);
  EXPECT_NEAR(static_cast<double>(big[0].index), 80, 1);
  // Its "before" still starts at the 5 % change, not at the series' start.
  EXPECT_NEAR(big[0].mean_before, 105, 1);
  EXPECT_NEAR(big[0].change_percent, 30, 2);
}

// Catches: a detector that flags quiet series (in a store of many series,
// each false alarm is a person looking at nothing), or one so numb it does
// not see the one series that changed.
TEST(ChangePointsTest, OneChangedSeriesAmongTwoHundredIsTheOneFlagged) {
  std::vector<std::vector<Point>> store;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    SeriesMaker maker(5000 + seed);
    store.push_back(seed == 137 ? maker.Steps(100, 250.0, 0.02, {{70, 1.10}}) : maker.Steps(100, 250.0, 0.02, {}));
  }
  int flagged_at_all = 0;
  std::vector<size_t> over_threshold;
  for (size_t i = 0; i < store.size(); ++i) {
    const auto found = FindChangePoints(store[i]);
    if (!found.empty()) ++flagged_at_all;
    // A CI gate's threshold of 5 %. A spurious change in 2 % noise can
    // reach 4 %: its side may be as short as 5 runs (2,000 quiet series
    // measured: none at 5 % or more).
    if (!FindChangePoints(store[i], {.min_change_percent = 5}).empty()) over_threshold.push_back(i);
  }
  std::printf("series with a change point: %d of 200 (one changed); of 5 %% or more: %zu\n", flagged_at_all,
              over_threshold.size());
  ASSERT_EQ(over_threshold, std::vector<size_t>{137});
  const auto changed = FindChangePoints(store[137]);
  const ChangePoint* c = Near(changed, 70);
  ASSERT_NE(c, nullptr);
  EXPECT_NEAR(c->change_percent, 10, 1.5);
  // Any change point at all: the one changed series plus about 5 % of the
  // quiet ones (the level); 22 is three standard deviations above 10.
  EXPECT_LE(flagged_at_all, 22);
}

// The false-positive rate at the defaults, as docs/results.md quotes it.
// Under no change the points are exchangeable, so the first permutation
// test rejects with probability ⌊0.05 × 101⌋ / 101 = 4.95 % (p is
// (count + 1) / 101); further changes are only looked for after a first.
// That holds whatever the noise's distribution: Gaussian, and Gaussian with
// outliers (one run in fifty 20 % slow: a noisy neighbour, a GC pause).
// Over 500 series the rate's standard deviation is 0.97 points: [2 %, 8 %]
// is three of them either way. Catches: a p-value off by a factor
// (anti-conservative), shuffles that do not shuffle, or a test so
// conservative that its level means nothing.
TEST(ChangePointsTest, FalsePositiveRateOnNoiseOnlySeriesIsTheLevel) {
  constexpr int kSeries = 500;
  for (const bool outliers : {false, true}) {
    int flagged = 0;
    int flagged_over_2_percent = 0;
    for (uint64_t seed = 0; seed < kSeries; ++seed) {
      SeriesMaker maker(90000 + seed + (outliers ? kSeries : 0));
      auto series = maker.Steps(100, 1000.0, 0.02, {});
      if (outliers) {
        for (size_t i = 0; i < series.size(); ++i) {
          if (maker.Normal() > 2.054) series[i].y *= 1.2;  // P(Z > 2.054) = 2 %
        }
      }
      const auto found = FindChangePoints(series);
      if (!found.empty()) ++flagged;
      for (const auto& c : found) {
        if (std::fabs(c.change_percent) >= 2) {
          ++flagged_over_2_percent;
          break;
        }
      }
    }
    const double rate = static_cast<double>(flagged) / kSeries;
    std::printf(
        "false-positive rate (500 noise-only series of 100 points, 2 %% CV%s, defaults): %.1f %% (%d); "
        "with a change of 2 %% or more: %.1f %%\n",
        outliers ? " and 2 % outliers at +20 %" : "", rate * 100, flagged, 100.0 * flagged_over_2_percent / kSeries);
    EXPECT_GE(rate, 0.02);
    EXPECT_LE(rate, 0.08);
  }
}

// Catches: a crash or a reported change on input with nothing to find — too
// short for two segments, constant, empty, non-finite — and a NaN that
// shifts the indices of the points after it.
TEST(ChangePointsTest, DegenerateInputGivesNoChangePoints) {
  EXPECT_TRUE(FindChangePoints({}).empty());
  // Fewer than two minimum segments, however clear the step.
  std::vector<Point> short_series;
  for (int i = 0; i < 9; ++i) short_series.push_back({double(i), i < 5 ? 1.0 : 100.0});
  EXPECT_TRUE(FindChangePoints(short_series).empty());
  short_series.push_back({9, 100});
  EXPECT_EQ(FindChangePoints(short_series).size(), 1u) << "ten points are two segments of five";

  std::vector<Point> constant(100, Point{0, 42});
  EXPECT_TRUE(FindChangePoints(constant).empty());
  constant[50].y = std::numeric_limits<double>::quiet_NaN();
  constant[70].y = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(FindChangePoints(constant).empty());
  const std::vector<Point> all_nan(50, Point{0, std::nan("")});
  EXPECT_TRUE(FindChangePoints(all_nan).empty());
  std::vector<Point> huge(40, Point{0, -1e308});
  for (size_t i = 20; i < huge.size(); ++i) huge[i].y = 1e308;
  EXPECT_EQ(FindChangePoints(huge).size(), 1u) << "values as far apart as doubles go";

  // Options out of range are brought into it, not trusted.
  SeriesMaker maker(3);
  const auto step = maker.Steps(60, 10.0, 0.02, {{30, 1.3}});
  EXPECT_EQ(FindChangePoints(step, {.min_segment = 0, .significance = 1, .permutations = 0}).empty(), false);
  EXPECT_TRUE(FindChangePoints(step, {.significance = 0.001}).empty()) << "below 1/101 nothing is significant";

  // Missing runs (NaN) are skipped; the change is at its index in the input.
  auto gappy = maker.Steps(80, 10.0, 0.02, {{50, 1.2}});
  gappy[10].y = std::nan("");
  gappy[49].y = std::nan("");
  gappy[51].y = -std::numeric_limits<double>::infinity();
  const auto found = FindChangePoints(gappy);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].index, 50u);
  EXPECT_EQ(found[0].x_before, 48) << "the last finite run before the change";
  EXPECT_EQ(found[0].x_after, 50);
}

// Catches: shuffles that depend on anything but the seed (a global or
// time-seeded generator, the order of calls), a p-value without its + 1.
TEST(ChangePointsTest, TheSameSeedGivesTheSameAnswer) {
  const auto same = [](const std::vector<ChangePoint>& a, const std::vector<ChangePoint>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].index != b[i].index || a[i].p_value != b[i].p_value) return false;
    }
    return true;
  };
  std::vector<std::vector<Point>> store;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    SeriesMaker maker(777 + seed);
    store.push_back(maker.Steps(80, 5.0, 0.03, {{40, seed % 3 == 0 ? 1.03 : 1.0}}));
  }
  std::vector<std::vector<ChangePoint>> first;
  for (const auto& s : store) first.push_back(FindChangePoints(s, {.seed = 42}));
  int differ_with_other_seed = 0;
  for (size_t i = store.size(); i-- > 0;) {  // another order of calls
    EXPECT_TRUE(same(first[i], FindChangePoints(store[i], {.seed = 42}))) << "series " << i;
    if (!same(first[i], FindChangePoints(store[i], {.seed = 43}))) ++differ_with_other_seed;
  }
  // Borderline p-values move with the shuffles: the seed is really used.
  EXPECT_GT(differ_with_other_seed, 0);
  // A clear step: no shuffle of 100 comes near it, p = 1 / 101.
  SeriesMaker maker(1);
  const auto clear = FindChangePoints(maker.Steps(60, 10.0, 0.02, {{30, 1.3}}));
  ASSERT_EQ(clear.size(), 1u);
  EXPECT_DOUBLE_EQ(clear[0].p_value, 1.0 / 101);
}

// Apache Otava's E-Divisive (compute_change_points_orig: the same statistic
// with 100 permutations, no minimum segment) on fixed series: the same
// change points, in one case not at the true step (2 % in 2 % noise: 52 for
// 55), and the same Q̂ for each. Catches: a Q̂ that differs from the
// published one (a wrong weight, within-sums over the wrong range), a
// search over fewer splits, change points accepted in another order.
TEST(ChangePointsTest, AgreesWithApacheOtava) {
  for (const auto& c : testdata::OtavaCases()) {
    SCOPED_TRACE(c.name);
    std::vector<Point> series;
    for (size_t i = 0; i < c.values.size(); ++i) series.push_back({double(i), c.values[i]});
    for (size_t min_segment : {size_t{2}, size_t{5}}) {
      SCOPED_TRACE(testing::Message() << "min_segment " << min_segment);
      const auto found = FindChangePoints(series, {.min_segment = min_segment});
      ASSERT_EQ(found.size(), c.change_points.size());
      for (size_t i = 0; i < found.size(); ++i) {
        EXPECT_EQ(found[i].index, c.change_points[i].index);
        EXPECT_NEAR(found[i].q_hat, c.change_points[i].q_hat, 1e-9 * c.change_points[i].q_hat);
      }
    }
  }
}

}  // namespace
}  // namespace fairbench::changes

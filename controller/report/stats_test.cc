// The statistics, checked against an independent computation: the t
// distribution's density integrated numerically (Simpson's rule), and
// textbook quantiles.
#include "controller/report/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fairbench::report {
namespace {

// P(|T| ≥ t) by integrating Student's density from 0 to t (Simpson, 20,000
// panels): independent of the incomplete beta function used by the code.
double IntegratedTwoSidedP(double t, double df) {
  const auto density = [df](double x) {
    return std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2)) / std::sqrt(df * M_PI) *
           std::pow(1 + x * x / df, -(df + 1) / 2);
  };
  const int n = 20000;
  const double h = t / n;
  double s = density(0) + density(t);
  for (int i = 1; i < n; ++i) s += density(i * h) * (i % 2 ? 4 : 2);
  return 1 - 2 * s * h / 3;
}

// Catches: a wrong p-value (the verdicts of `fairbench compare` rest on it):
// a swapped parameter of the incomplete beta function, a one-sided p.
TEST(StatsTest, StudentPAgreesWithTheIntegratedDensity) {
  for (double df : {1.0, 2.0, 3.5, 4.0, 10.0, 29.0, 200.0}) {
    for (double t : {0.1, 0.5, 1.0, 2.0, 2.776, 4.0}) {
      EXPECT_NEAR(StudentTwoSidedP(t, df), IntegratedTwoSidedP(t, df), 1e-6) << "t " << t << " df " << df;
      EXPECT_NEAR(StudentTwoSidedP(-t, df), StudentTwoSidedP(t, df), 1e-12);
    }
  }
  EXPECT_EQ(StudentTwoSidedP(0, 5), 1.0);
}

// Catches: the interval computed with the normal 1.96 instead of Student's
// t (too narrow for few repetitions), or with the population stdev.
TEST(StatsTest, QuantilesAndIntervalsMatchTheTables) {
  EXPECT_NEAR(StudentQuantile(0.95, 4), 2.776, 5e-4);   // t(0.975, 4)
  EXPECT_NEAR(StudentQuantile(0.95, 1), 12.706, 5e-3);  // t(0.975, 1)
  EXPECT_NEAR(StudentQuantile(0.95, 30), 2.042, 5e-4);
  const Estimate e = Estimate95({10, 12, 14, 16, 18});  // mean 14, s = √10
  EXPECT_DOUBLE_EQ(e.mean, 14);
  EXPECT_NEAR(e.stdev, std::sqrt(10.0), 1e-12);
  EXPECT_NEAR(e.cv, std::sqrt(10.0) / 14, 1e-12);
  EXPECT_NEAR(e.high - e.mean, 2.776 * std::sqrt(10.0) / std::sqrt(5.0), 2e-3);
  const Estimate one = Estimate95({7});
  EXPECT_EQ(one.low, 7);
  EXPECT_EQ(one.high, 7);
  EXPECT_FALSE(Overlap(one, one)) << "no spread known: no interval to overlap";
  EXPECT_TRUE(Overlap(Estimate95({1, 2, 3}), Estimate95({2, 3, 4})));
  EXPECT_FALSE(Overlap(Estimate95({1, 1.1, 0.9}), Estimate95({5, 5.1, 4.9})));
}

// Catches: Welch's degrees of freedom or standard error wrong (a textbook
// example: a = 19.8 … , b = 28.2 …; t = 2.70, df ≈ 13.9 by hand with the
// Welch–Satterthwaite formula).
TEST(StatsTest, WelchTestMatchesAWorkedExample) {
  const std::vector<double> a = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1,
                                 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
  const std::vector<double> b = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0,
                                 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
  const TTest r = WelchTest(a, b);
  ASSERT_TRUE(r.valid);
  // By hand: means 20.82 and 22.99; variances 7.867 and 3.813 (n = 15 each).
  const double va = 7.8674 / 15, vb = 3.8127 / 15;
  EXPECT_NEAR(r.t, (22.9867 - 20.8200) / std::sqrt(va + vb), 0.01);
  EXPECT_NEAR(r.df, (va + vb) * (va + vb) / (va * va / 14 + vb * vb / 14), 0.05);
  EXPECT_NEAR(r.p, IntegratedTwoSidedP(r.t, r.df), 1e-6);
  EXPECT_LT(r.p, 0.05);
  EXPECT_FALSE(WelchTest({1}, {2, 3}).valid);
}

TEST(StatsTest, NoiseLabels) {
  EXPECT_EQ(NoiseLabel(0.05), "quiet");
  EXPECT_EQ(NoiseLabel(0.051), "noisy");
  EXPECT_EQ(NoiseLabel(0.10), "noisy");
  EXPECT_EQ(NoiseLabel(0.11), "unreliable");
}

}  // namespace
}  // namespace fairbench::report

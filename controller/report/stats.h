// Statistics for repetitions and comparisons: a mean with its 95 %
// confidence interval (Student's t), the noise label of a coefficient of
// variation, and Welch's t-test between two samples.
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fairbench::report {

struct Estimate {
  size_t n = 0;
  double mean = 0;
  double stdev = 0;  // sample standard deviation (n − 1); 0 for n < 2
  double cv = 0;     // stdev ÷ mean; 0 for n < 2 or a zero mean
  // 95 % confidence interval of the mean: mean ± t(0.975, n − 1) × stdev ÷ √n;
  // equal to the mean for n < 2 (no spread known).
  double low = 0, high = 0;
};
Estimate Estimate95(const std::vector<double>& values);

// True when two estimates' 95 % intervals overlap (n ≥ 2 on both sides).
bool Overlap(const Estimate& a, const Estimate& b);

// ≤ 5 %: "quiet"; ≤ 10 %: "noisy"; above: "unreliable".
std::string NoiseLabel(double cv);

// The two-sided p-value of Student's t with `df` degrees of freedom (df > 0,
// not necessarily whole): P(|T| ≥ |t|).
double StudentTwoSidedP(double t, double df);
// The t value with P(|T| ≥ t) = 1 − level (level 0.95: the 97.5 % quantile).
double StudentQuantile(double level, double df);

struct TTest {
  double t = 0;
  double df = 0;
  double p = 1;        // two-sided; 1 when the test cannot be made
  bool valid = false;  // both samples have n ≥ 2 and some spread
};
// Welch's unequal-variances t-test of mean(b) − mean(a).
TTest WelchTest(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace fairbench::report

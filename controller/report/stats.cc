#include "controller/report/stats.h"

#include <cmath>
#include <limits>

namespace fairbench::report {
namespace {

// The continued fraction of the regularized incomplete beta function
// (modified Lentz's method).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr int kMaxIterations = 300;
  constexpr double kEpsilon = 1e-15;
  constexpr double kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < kEpsilon) break;
  }
  return h;
}

// I_x(a, b), the regularized incomplete beta function.
double IncompleteBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

}  // namespace

double StudentTwoSidedP(double t, double df) {
  if (!(df > 0) || !std::isfinite(t)) return std::isfinite(t) ? 1.0 : 0.0;
  return IncompleteBeta(df / 2, 0.5, df / (df + t * t));
}

double StudentQuantile(double level, double df) {
  // Bisection on the two-sided p: monotone in t.
  const double want = 1 - level;
  double lo = 0, hi = 1;
  while (StudentTwoSidedP(hi, df) > want && hi < 1e7) hi *= 2;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (StudentTwoSidedP(mid, df) > want ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

Estimate Estimate95(const std::vector<double>& values) {
  Estimate e;
  e.n = values.size();
  if (e.n == 0) return e;
  double sum = 0;
  for (double v : values) sum += v;
  e.mean = sum / static_cast<double>(e.n);
  e.low = e.high = e.mean;
  if (e.n < 2) return e;
  double ss = 0;
  for (double v : values) ss += (v - e.mean) * (v - e.mean);
  e.stdev = std::sqrt(ss / static_cast<double>(e.n - 1));
  e.cv = e.mean != 0 ? e.stdev / std::fabs(e.mean) : 0;
  const double half =
      StudentQuantile(0.95, static_cast<double>(e.n - 1)) * e.stdev / std::sqrt(static_cast<double>(e.n));
  e.low = e.mean - half;
  e.high = e.mean + half;
  return e;
}

bool Overlap(const Estimate& a, const Estimate& b) {
  if (a.n < 2 || b.n < 2) return false;
  return a.low <= b.high && b.low <= a.high;
}

std::string NoiseLabel(double cv) {
  if (cv <= 0.05) return "quiet";
  if (cv <= 0.10) return "noisy";
  return "unreliable";
}

TTest WelchTest(const std::vector<double>& a, const std::vector<double>& b) {
  TTest r;
  const Estimate ea = Estimate95(a), eb = Estimate95(b);
  if (ea.n < 2 || eb.n < 2) return r;
  const double va = ea.stdev * ea.stdev / static_cast<double>(ea.n);
  const double vb = eb.stdev * eb.stdev / static_cast<double>(eb.n);
  const double se2 = va + vb;
  if (!(se2 > 0)) {
    // No spread at all: equal means are no difference, unequal ones are certain.
    r.valid = true;
    r.p = ea.mean == eb.mean ? 1.0 : 0.0;
    r.t = ea.mean == eb.mean ? 0 : std::copysign(std::numeric_limits<double>::infinity(), eb.mean - ea.mean);
    r.df = static_cast<double>(ea.n + eb.n - 2);
    return r;
  }
  r.t = (eb.mean - ea.mean) / std::sqrt(se2);
  r.df = se2 * se2 / (va * va / static_cast<double>(ea.n - 1) + vb * vb / static_cast<double>(eb.n - 1));
  r.p = StudentTwoSidedP(r.t, r.df);
  r.valid = true;
  return r;
}

}  // namespace fairbench::report

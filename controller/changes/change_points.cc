#include "controller/changes/change_points.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace fairbench::changes {
namespace {

constexpr double kNone = -std::numeric_limits<double>::infinity();

// SplitMix64 (Steele, Lea & Flood 2014): fully specified, so that a seed
// gives the same shuffles with every standard library.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound) for bound > 0: draws below 2^64 mod bound are
  // thrown away, so that no value is likelier than another.
  uint64_t Below(uint64_t bound) {
    const uint64_t skip = (0 - bound) % bound;
    for (;;) {
      const uint64_t r = Next();
      if (r >= skip) return r % bound;
    }
  }

  void Shuffle(double* v, size_t n) {  // Fisher–Yates
    for (size_t i = n; i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  uint64_t state_;
};

struct Split {
  double q = kNone;  // Q̂ of the best split; kNone: the segment cannot split
  size_t tau = 0;    // its first point after the split, from the segment's start
};

// The strongest split of one segment, with its scratch space (O(n)).
class SplitSearch {
 public:
  SplitSearch(size_t n, size_t min_segment)
      : min_(min_segment), w_tau_(n + 1), w_start_(n + 1), count_(n + 1), inv_(n + 1, 0.0) {
    for (size_t k = 1; k <= n; ++k) {
      count_[k] = static_cast<double>(k);
      inv_[k] = 1.0 / static_cast<double>(k);
    }
  }

  // Over v[0, n): the τ (and κ) maximising Q̂(v[0, τ), v[τ, κ)).
  Split Best(const double* v, size_t n) {
    Split best;
    Scan(v, n, [&](size_t kappa, size_t first, size_t last, double scale) {
      for (size_t tau = first; tau <= last; ++tau) {
        const double q = scale * Q(kappa, tau);
        if (q > best.q) best = {q, tau};
      }
      return false;
    });
    return best;
  }

  // Whether some split of v[0, n) has Q̂ ≥ `q` (all a permutation test asks;
  // it stops at the first κ with one).
  bool Reaches(const double* v, size_t n, double q) {
    return Scan(v, n, [&](size_t kappa, size_t first, size_t last, double scale) {
      for (size_t tau = first; tau <= last; ++tau) {
        if (scale * Q(kappa, tau) >= q) return true;
      }
      return false;
    });
  }

 private:
  // With W(a, b) = Σ_{a≤i<j<b} |v_i − v_j|, the sums of Q̂ are W(0, τ) and
  // W(τ, κ) within the parts and W(0, κ) − W(0, τ) − W(τ, κ) between them.
  // Going through κ = 1..n, w_tau_[τ] holds W(τ, κ) for every τ < κ, and
  // w_start_[b] keeps W(0, b) once b has been passed: O(n²) time, O(n)
  // space. For each κ, `visit(κ, first τ, last τ, 2 / κ)` looks at the
  // splits with both parts at least min_ long, and ends the scan by
  // returning true.
  template <typename Visit>
  bool Scan(const double* v, size_t n, Visit visit) {
    if (n < 2 * min_) return false;
    std::fill_n(w_tau_.begin(), n + 1, 0.0);
    w_start_[0] = 0;
    for (size_t kappa = 1; kappa <= n; ++kappa) {
      AddPoint(v, kappa - 1);
      w_start_[kappa] = w_tau_[0];
      if (kappa < 2 * min_) continue;
      if (visit(kappa, min_, kappa - min_, 2 * inv_[kappa])) return true;
    }
    return false;
  }

  // Q̂ of v[0, τ) against v[τ, κ), times (m + n) / 2 (Scan's scale):
  // B − m/(n−1)·Wx − n/(m−1)·Wy for the n points left and m right.
  double Q(size_t kappa, size_t tau) const {
    const double w_left = w_start_[tau];
    const double w_right = w_tau_[tau];
    return w_start_[kappa] - w_left - w_right - count_[kappa - tau] * inv_[tau - 1] * w_left -
           count_[tau] * inv_[kappa - tau - 1] * w_right;
  }

  // From W(τ, p) to W(τ, p + 1) for every τ ≤ p: adds |v_j − v_p| for j in
  // [τ, p). The running sum is a chain of dependent additions: two chains,
  // over the upper and the lower half, run side by side, and the lower
  // half gets the upper half's total afterwards.
  void AddPoint(const double* v, size_t p) {
    const double added = v[p];
    const size_t half = p / 2;  // lower [0, half), upper [half, p)
    double upper = 0;
    double lower = 0;
    size_t t = p;
    size_t u = half;
    while (u > 0) {
      --t;
      --u;
      upper += std::fabs(v[t] - added);
      w_tau_[t] += upper;
      lower += std::fabs(v[u] - added);
      w_tau_[u] += lower;
    }
    while (t > half) {  // the upper half is one longer when p is odd
      --t;
      upper += std::fabs(v[t] - added);
      w_tau_[t] += upper;
    }
    for (size_t i = 0; i < half; ++i) w_tau_[i] += upper;
  }

  size_t min_;
  std::vector<double> w_tau_;
  std::vector<double> w_start_;
  std::vector<double> count_;  // count_[k] = k
  std::vector<double> inv_;    // inv_[k] = 1 / k
};

struct Moments {
  double mean = 0;
  double stddev = 0;
};

Moments MomentsOf(const std::vector<double>& y, size_t begin, size_t end) {
  const double n = static_cast<double>(end - begin);
  double sum = 0;
  for (size_t i = begin; i < end; ++i) sum += y[i];
  Moments m;
  m.mean = sum / n;
  if (end - begin < 2) return m;
  double squares = 0;
  for (size_t i = begin; i < end; ++i) squares += (y[i] - m.mean) * (y[i] - m.mean);
  m.stddev = std::sqrt(squares / (n - 1));
  return m;
}

double ChangePercent(double before, double after) {
  if (before == 0) return after == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), after);
  return (after / before - 1) * 100;
}

}  // namespace

std::vector<ChangePoint> FindChangePoints(std::span<const Point> series, const Options& options) {
  const size_t min_segment = std::max<size_t>(options.min_segment, 2);
  const size_t permutations = static_cast<size_t>(std::max(options.permutations, 1));

  // The finite values, and where each came from.
  std::vector<double> y;
  std::vector<size_t> origin;
  y.reserve(series.size());
  origin.reserve(series.size());
  for (size_t i = 0; i < series.size(); ++i) {
    if (!std::isfinite(series[i].y)) continue;
    y.push_back(series[i].y);
    origin.push_back(i);
  }
  const size_t n = y.size();
  if (n < 2 * min_segment) return {};

  // Q̂ scales with the values: on [0, 1] its sums stay far from overflow.
  // Values far apart (±1e308) have no finite range: scaled by the largest
  // magnitude instead, they still lie in [-1, 1].
  const auto [lowest, highest] = std::minmax_element(y.begin(), y.end());
  const double low = *lowest;
  const double high = *highest;
  if (!(high > low)) return {};  // constant: nothing changed
  std::vector<double> z(n);
  const double range = high - low;
  const double largest = std::max(std::fabs(low), std::fabs(high));
  const double scale = std::isfinite(range) ? range : largest;  // Q̂ of y = scale × Q̂ of z
  for (size_t i = 0; i < n; ++i) z[i] = std::isfinite(range) ? (y[i] - low) / range : y[i] / largest;

  SplitSearch search(n, min_segment);
  Random random(options.seed);
  const auto p_value = [&](size_t count) {
    return static_cast<double>(count + 1) / static_cast<double>(permutations + 1);
  };
  const auto significant = [&](size_t count) { return p_value(count) <= options.significance; };

  // Segment i is [cuts[i], cuts[i + 1]); best[i] its strongest split.
  std::vector<size_t> cuts = {0, n};
  std::vector<Split> best = {search.Best(z.data(), n)};
  std::vector<double> accepted_p(2, 1.0);  // by cut
  std::vector<double> accepted_q(2, 0.0);
  std::vector<double> shuffled(n);

  for (;;) {
    size_t segment = 0;
    for (size_t i = 1; i < best.size(); ++i) {
      if (best[i].q > best[segment].q) segment = i;
    }
    const Split candidate = best[segment];
    if (!(candidate.q > 0)) break;  // no split, or none with any divergence

    if (!significant(0)) break;  // a level no permutation test can reach
    size_t exceeded = 0;
    // p only grows with each shuffle that reaches the candidate's Q̂: once
    // above the level, the remaining shuffles cannot bring it back.
    for (size_t r = 0; r < permutations && significant(exceeded); ++r) {
      std::copy(z.begin(), z.end(), shuffled.begin());
      bool reached = false;
      for (size_t i = 0; i + 1 < cuts.size() && !reached; ++i) {
        const size_t length = cuts[i + 1] - cuts[i];
        if (length < 2 * min_segment) continue;
        random.Shuffle(shuffled.data() + cuts[i], length);
        reached = search.Reaches(shuffled.data() + cuts[i], length, candidate.q);
      }
      if (reached) ++exceeded;
    }
    if (!significant(exceeded)) break;

    const size_t start = cuts[segment];
    const size_t end = cuts[segment + 1];
    const size_t cut = start + candidate.tau;
    cuts.insert(cuts.begin() + static_cast<std::ptrdiff_t>(segment) + 1, cut);
    accepted_p.insert(accepted_p.begin() + static_cast<std::ptrdiff_t>(segment) + 1, p_value(exceeded));
    accepted_q.insert(accepted_q.begin() + static_cast<std::ptrdiff_t>(segment) + 1, candidate.q * scale);
    best[segment] = search.Best(z.data() + start, cut - start);
    best.insert(best.begin() + static_cast<std::ptrdiff_t>(segment) + 1, search.Best(z.data() + cut, end - cut));
  }

  std::vector<ChangePoint> found;
  for (size_t i = 1; i + 1 < cuts.size(); ++i) {
    const Moments before = MomentsOf(y, cuts[i - 1], cuts[i]);
    const Moments after = MomentsOf(y, cuts[i], cuts[i + 1]);
    ChangePoint c;
    c.index = origin[cuts[i]];
    c.x_before = series[origin[cuts[i] - 1]].x;
    c.x_after = series[c.index].x;
    c.mean_before = before.mean;
    c.mean_after = after.mean;
    c.stddev_before = before.stddev;
    c.stddev_after = after.stddev;
    c.change_percent = ChangePercent(before.mean, after.mean);
    c.p_value = accepted_p[i];
    c.q_hat = accepted_q[i];
    const bool up = after.mean > before.mean;
    const bool worse = options.better == Better::kLower ? up : after.mean < before.mean;
    c.kind = worse ? Kind::kRegression : Kind::kImprovement;
    if (std::fabs(c.change_percent) < options.min_change_percent) continue;
    found.push_back(c);
  }
  return found;
}

}  // namespace fairbench::changes

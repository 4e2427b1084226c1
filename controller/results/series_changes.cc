#include "controller/results/series_changes.h"

#include <cmath>

namespace fairbench::results {

MetricChanges FindSeriesChanges(const SeriesMetric& m, const Series& series, double threshold,
                                const changes::Options& base) {
  MetricChanges mc;
  mc.metric = &m;
  std::vector<changes::Point> points;
  points.reserve(series.points.size());
  for (size_t i = 0; i < series.points.size(); ++i) {
    const SeriesPoint& p = series.points[i];
    const double y = p.succeeded > 0 ? p.*(m.field) : std::nan("");
    if (std::isfinite(y)) ++mc.points;
    points.push_back({static_cast<double>(i), y});
  }
  mc.judged = mc.points >= 2 * base.min_segment;
  if (!mc.judged) return mc;
  changes::Options o = base;
  o.better = m.better;
  const std::vector<changes::ChangePoint> found = changes::FindChangePoints(points, o);
  if (found.empty()) return mc;
  const double newest = found.back().mean_after;
  for (const changes::ChangePoint& c : found) {
    SeriesFinding f;
    f.change = c;
    if (c.kind == changes::Kind::kRegression && c.mean_before != 0) {
      const double ratio = newest / c.mean_before;
      f.still_worse_percent = (m.better == changes::Better::kHigher ? 1 - ratio : ratio - 1) * 100;
      f.in_force = f.still_worse_percent > 0 && f.still_worse_percent >= std::fabs(c.change_percent) / 2;
      f.failing = std::fabs(c.change_percent) >= threshold && f.still_worse_percent >= threshold;
    }
    mc.failed = mc.failed || f.failing;
    mc.findings.push_back(f);
  }
  return mc;
}

}  // namespace fairbench::results

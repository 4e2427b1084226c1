// SeriesChart: one metric of a stored series over its runs, drawn as an
// inline <svg> for `fairbench serve`'s series page — a point per run (a
// link to the run's page), a vertical marker per change point between the
// last run before it and the first after, and the mean of each segment
// between change points as a level.
//
// The report's charts (controller/report/svg.h) have neither links nor
// markers, so this draws its own, in the same manner: colours and sizes as
// attributes, no script, a <title> on every mark (a point's run and value;
// a marker's direction and size) and on the chart. All text is escaped.
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controller/report/chart.h"

namespace fairbench::serve {

struct ChartPoint {
  int64_t run_id = 0;
  std::string label;            // the x axis's tick text (the run id)
  std::optional<double> value;  // none: no measurement (a failed run), no mark
  std::string title;            // the point's tooltip
  std::string href;             // where the point leads
};

struct ChartChange {
  size_t index = 0;  // of the first point after the change
  bool regression = false;
  std::string title;  // the marker's tooltip
};

struct ChartLevel {
  size_t first = 0, last = 0;  // points [first, last], inclusive
  double mean = 0;
};

struct SeriesChart {
  std::string title;    // "Requests per second"
  std::string y_label;  // "requests/s"
  report::ValueKind kind = report::ValueKind::kRate;
  std::vector<ChartPoint> points;  // oldest first
  std::vector<ChartChange> changes;
  std::vector<ChartLevel> levels;
};

// `id`: unique in the page (the svg's id; its title and description are
// named after it). The svg has class "series-chart"; its points class
// "point" with data-run and data-index, its markers class "change" (and
// "regression" or "improvement") with data-index and data-run.
std::string RenderSeriesChart(const SeriesChart& chart, const std::string& id);

}  // namespace fairbench::serve

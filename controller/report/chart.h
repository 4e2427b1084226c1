// Chart: what a chart of the report shows, independent of how it is drawn
// (svg.h draws it). Values are plain numbers in base units (requests/s,
// microseconds, seconds); ValueKind says how to label them.
//
// Series carry a colour slot, not a colour: a target keeps its slot (its
// position in the run's target list) in every chart of a report.
// Plain values.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace fairbench::report {

// kNines: an x value v stands for the percentile 100 × (1 − 1/v), so that
// 90 %, 99 %, 99.9 % sit one step apart on a log axis (HdrHistogram's plot).
enum class ValueKind { kRate, kLatencyUs, kCount, kSeconds, kNines };

// Horizontal bars, grouped: one group per category, one bar per series.
struct BarChart {
  std::string title;
  std::string value_label;  // "requests/s"
  ValueKind kind = ValueKind::kRate;
  std::vector<std::string> categories;
  std::vector<std::string> series;
  std::vector<int> series_slots;
  std::vector<std::vector<std::optional<double>>> values;  // [category][series]
};

struct LineSeries {
  std::string name;
  int slot = 0;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

struct LineChart {
  std::string title;
  std::string x_label, y_label;
  ValueKind x_kind = ValueKind::kSeconds, y_kind = ValueKind::kRate;
  bool log_x = false;
  bool log_y = false;
  std::vector<double> x_ticks;                     // empty: chosen automatically
  std::optional<std::pair<double, double>> shade;  // an x range drawn grey (warmup)
  std::string shade_label;
  std::vector<LineSeries> series;
};

// One row per series on a logarithmic latency axis, a marker per statistic
// (average, p50 … max): how far the tail sits from the average.
struct LadderChart {
  std::string title;
  std::vector<std::string> rows;
  std::vector<int> row_slots;
  std::vector<std::string> marks;                          // "avg", "p50", …, "max"
  std::vector<std::vector<std::optional<double>>> values;  // [row][mark], µs
};

using Chart = std::variant<BarChart, LineChart, LadderChart>;

}  // namespace fairbench::report

// MetricFamily: one metric's name, help, type, label names and the current
// value of each of its series — the plain data a registry hands out and the
// exposition renders.
//
// Label values line up with label_names (same order, same length). For a
// histogram, `bounds` are the finite upper bounds in base units, ascending,
// and every series carries one cumulative count per bound; the +Inf bucket is
// `count`. Plain values, safe to copy between threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fairbench::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };
const char* TypeName(MetricType type);

struct Series {
  std::vector<std::string> label_values;
  double value = 0;               // counter or gauge
  std::vector<uint64_t> buckets;  // histogram: cumulative, one per bound
  uint64_t count = 0;             // histogram: observations (the +Inf bucket)
  double sum = 0;                 // histogram: sum of observations
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<std::string> label_names;
  std::vector<double> bounds;  // histogram only
  std::vector<Series> series;  // ordered by label values
};

// [a-zA-Z_:][a-zA-Z0-9_:]* — a metric name Prometheus accepts.
bool IsValidMetricName(const std::string& name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved), not "le".
bool IsValidLabelName(const std::string& name);

}  // namespace fairbench::metrics

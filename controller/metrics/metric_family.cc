#include "controller/metrics/metric_family.h"

namespace fairbench::metrics {
namespace {

bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool IsNameChar(char c, bool colon) { return IsNameStart(c, colon) || (c >= '0' && c <= '9'); }

bool IsName(const std::string& s, bool colon) {
  if (s.empty() || !IsNameStart(s[0], colon)) return false;
  for (char c : s) {
    if (!IsNameChar(c, colon)) return false;
  }
  return true;
}

}  // namespace

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

bool IsValidMetricName(const std::string& name) { return IsName(name, true); }

bool IsValidLabelName(const std::string& name) {
  return IsName(name, false) && name.rfind("__", 0) != 0 && name != "le";
}

}  // namespace fairbench::metrics

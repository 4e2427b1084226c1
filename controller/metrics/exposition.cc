#include "controller/metrics/exposition.h"

#include <charconv>
#include <cmath>

namespace fairbench::metrics {
namespace {

void AppendLabels(std::string& out, const std::vector<std::string>& names, const std::vector<std::string>& values,
                  const std::string* le) {
  // A label with an empty value is no label to Prometheus: left out (a
  // closed-loop cell's empty `rate`).
  bool any = le != nullptr;
  for (size_t i = 0; i < names.size() && i < values.size() && !any; ++i) any = !values[i].empty();
  if (!any) return;
  out += '{';
  bool first = true;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (values[i].empty()) continue;
    if (!first) out += ',';
    first = false;
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  if (le != nullptr) {
    if (!first) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
}

void AppendSample(std::string& out, const std::string& name, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, const std::string* le, double value) {
  out += name;
  AppendLabels(out, names, values, le);
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

}  // namespace

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // Whole numbers (counts, bytes) as integers; others in the shortest form
  // that reads back exactly, fixed unless the exponent is far from zero.
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(value));
    return std::string(buf, r.ptr);
  }
  const double a = std::fabs(value);
  const auto format = a >= 1e-6 && a < 1e15 ? std::chars_format::fixed : std::chars_format::scientific;
  const auto r = std::to_chars(buf, buf + sizeof buf, value, format);
  return std::string(buf, r.ptr);
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderText(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& f : families) {
    if (f.series.empty()) continue;
    out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + f.name + " " + TypeName(f.type) + "\n";
    for (const Series& s : f.series) {
      if (f.type != MetricType::kHistogram) {
        AppendSample(out, f.name, f.label_names, s.label_values, nullptr, s.value);
        continue;
      }
      const std::string bucket = f.name + "_bucket";
      for (size_t i = 0; i < f.bounds.size(); ++i) {
        const std::string le = FormatValue(f.bounds[i]);
        const uint64_t n = i < s.buckets.size() ? s.buckets[i] : s.count;
        AppendSample(out, bucket, f.label_names, s.label_values, &le, static_cast<double>(n));
      }
      const std::string inf = "+Inf";
      AppendSample(out, bucket, f.label_names, s.label_values, &inf, static_cast<double>(s.count));
      AppendSample(out, f.name + "_sum", f.label_names, s.label_values, nullptr, s.sum);
      AppendSample(out, f.name + "_count", f.label_names, s.label_values, nullptr, static_cast<double>(s.count));
    }
  }
  return out;
}

}  // namespace fairbench::metrics

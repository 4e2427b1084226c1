#include "controller/serve/series_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "controller/report/format.h"
#include "controller/report/svg.h"

namespace fairbench::serve {
namespace {

using report::EscapeXml;

constexpr double kWidth = 960, kHeight = 340;
constexpr double kLeft = 84, kRight = 20, kTop = 36, kBottom = 44;
constexpr const char* kRegression = "#C0392B";
constexpr const char* kImprovement = "#1E8449";

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s(buf);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

std::string Label(report::ValueKind kind, double v) {
  switch (kind) {
    case report::ValueKind::kLatencyUs: return report::FormatLatency(v);
    case report::ValueKind::kRate: return report::FormatRate(v);
    default: return report::FormatCount(v);
  }
}

// Round ticks from 0 to at least `max`, about `count` of them.
std::vector<double> Ticks(double max, int count = 5) {
  if (!(max > 0)) return {0, 1};
  const double raw = max / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude * 10;
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  std::vector<double> ticks;
  for (double v = 0; v < max + step * 0.999; v += step) ticks.push_back(v);
  return ticks;
}

std::string Text(double x, double y, const std::string& text, const char* anchor, const std::string& extra = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" + anchor + "\"" +
         (extra.empty() ? "" : " " + extra) + ">" + EscapeXml(text) + "</text>\n";
}

std::string Line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra = "") {
  return "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) + "\" stroke=\"" +
         stroke + "\"" + (extra.empty() ? "" : " " + extra) + "/>\n";
}

}  // namespace

std::string RenderSeriesChart(const SeriesChart& c, const std::string& id_text) {
  const std::string id = EscapeXml(id_text);
  const size_t n = c.points.size();
  double max = 0;
  size_t measured = 0;
  for (const ChartPoint& p : c.points) {
    if (!p.value || !std::isfinite(*p.value)) continue;
    max = std::max(max, *p.value);
    ++measured;
  }
  const std::vector<double> ticks = Ticks(max);
  const double top_value = ticks.back();
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x_of = [&](size_t i) {
    return n <= 1 ? kLeft + plot_w / 2 : kLeft + plot_w * static_cast<double>(i) / static_cast<double>(n - 1);
  };
  auto y_of = [&](double v) { return kTop + plot_h * (1 - v / top_value); };

  const std::string desc = std::to_string(n) + " runs, " + std::to_string(measured) + " measured; " +
                           std::to_string(c.changes.size()) +
                           (c.changes.size() == 1 ? " change point" : " change points");
  std::string out = "<svg class=\"series-chart\" id=\"" + id + "\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(kHeight) +
                    "\" width=\"" + Num(kWidth) + "\" height=\"" + Num(kHeight) + "\" role=\"img\" aria-labelledby=\"" +
                    id + "-t " + id + "-d\" font-family=\"system-ui, sans-serif\" font-size=\"12\">\n<title id=\"" +
                    id + "-t\">" + EscapeXml(c.title) + "</title>\n<desc id=\"" + id + "-d\">" + EscapeXml(desc) +
                    "</desc>\n" + Text(0, 16, c.title, "start", "font-weight=\"bold\" font-size=\"14\"");

  // Axes: the value's ticks and grid, the runs' ids (at most ~16 labels).
  for (double t : ticks) {
    const double y = y_of(t);
    out += Line(kLeft, y, kLeft + plot_w, y, "#e4e4e4");
    out += Text(kLeft - 6, y + 4, t == 0 ? "0" : Label(c.kind, t), "end", "fill=\"#555\"");
  }
  out += Text(12, kTop + plot_h / 2, c.y_label, "middle",
              "fill=\"#555\" transform=\"rotate(-90 12 " + Num(kTop + plot_h / 2) + ")\"");
  out += Line(kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h, "#888");
  const size_t every = std::max<size_t>(1, (n + 15) / 16);
  for (size_t i = 0; i < n; i += every) {
    out += Text(x_of(i), kTop + plot_h + 16, c.points[i].label, "middle", "fill=\"#555\"");
  }
  out += Text(kLeft + plot_w / 2, kHeight - 6, "run", "middle", "fill=\"#555\"");

  // Segment means, then the line through the measured points.
  for (const ChartLevel& l : c.levels) {
    if (l.first >= n || l.last >= n || l.first > l.last) continue;
    const double y = y_of(l.mean);
    out +=
        Line(x_of(l.first), y, x_of(l.last), y, "#999", "stroke-width=\"2\" stroke-dasharray=\"6 4\" class=\"level\"");
  }
  std::string path;
  for (size_t i = 0; i < n; ++i) {
    const auto& v = c.points[i].value;
    if (!v || !std::isfinite(*v)) {
      if (!path.empty())
        out += "<polyline points=\"" + path + "\" fill=\"none\" stroke=\"#0072B2\" stroke-width=\"1.5\"/>\n";
      path.clear();
      continue;
    }
    path += (path.empty() ? "" : " ") + Num(x_of(i)) + "," + Num(y_of(*v));
  }
  if (!path.empty())
    out += "<polyline points=\"" + path + "\" fill=\"none\" stroke=\"#0072B2\" stroke-width=\"1.5\"/>\n";

  // Change markers between the last run before and the first after, over
  // the whole height; a wide transparent band carries the pointer.
  for (const ChartChange& ch : c.changes) {
    if (ch.index == 0 || ch.index >= n) continue;
    const double x = (x_of(ch.index - 1) + x_of(ch.index)) / 2;
    const char* colour = ch.regression ? kRegression : kImprovement;
    out += "<g class=\"change " + std::string(ch.regression ? "regression" : "improvement") + "\" data-index=\"" +
           std::to_string(ch.index) + "\" data-run=\"" + std::to_string(c.points[ch.index].run_id) + "\"><title>" +
           EscapeXml(ch.title) + "</title>\n" +
           Line(x, kTop, x, kTop + plot_h, colour, "stroke-width=\"2\" stroke-dasharray=\"4 3\"") + "<rect x=\"" +
           Num(x - 5) + "\" y=\"" + Num(kTop) + "\" width=\"10\" height=\"" + Num(plot_h) + "\" fill=\"" + colour +
           "\" fill-opacity=\"0.08\"/>\n" +
           Text(x + 4, kTop - 4, ch.regression ? "regression" : "improvement", "start",
                "fill=\"" + std::string(colour) + "\" font-size=\"11\"") +
           "</g>\n";
  }

  // The points last, over everything: each a link to its run.
  for (size_t i = 0; i < n; ++i) {
    const ChartPoint& p = c.points[i];
    if (!p.value || !std::isfinite(*p.value)) continue;
    out += "<a href=\"" + EscapeXml(p.href) + "\"><circle class=\"point\" data-run=\"" + std::to_string(p.run_id) +
           "\" data-index=\"" + std::to_string(i) + "\" cx=\"" + Num(x_of(i)) + "\" cy=\"" + Num(y_of(*p.value)) +
           "\" r=\"5\" fill=\"#0072B2\" stroke=\"#fff\" stroke-width=\"1.5\"><title>" + EscapeXml(p.title) +
           "</title></circle></a>\n";
  }
  return out + "</svg>\n";
}

}  // namespace fairbench::serve

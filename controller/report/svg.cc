#include "controller/report/svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <type_traits>

#include "controller/report/format.h"

namespace fairbench::report {
namespace {

constexpr double kWidth = 760;
constexpr double kFontSize = 12;
// Okabe–Ito, without its yellow (unreadable on white).
constexpr std::array<std::string_view, 7> kPalette{"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                                   "#CC79A7", "#56B4E9", "#000000"};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s(buf);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

std::string Label(ValueKind kind, double v) {
  switch (kind) {
    case ValueKind::kRate: return FormatRate(v);
    case ValueKind::kLatencyUs: return FormatLatency(v);
    case ValueKind::kCount: return FormatCount(v);
    case ValueKind::kSeconds: return FormatDecimal(v, std::fabs(v) < 10 && v != std::round(v) ? 1 : 0) + " s";
    case ValueKind::kNines: {
      const double p = v > 0 ? 100 * (1 - 1 / v) : 0;
      int decimals = 0;
      while (decimals < 6 &&
             std::fabs(std::round(p * std::pow(10.0, decimals)) - p * std::pow(10.0, decimals)) > 1e-6) {
        ++decimals;
      }
      return FormatDecimal(p, decimals) + " %";
    }
  }
  return FormatDecimal(v, 2);
}

// An axis label: whole numbers lose their decimals ("100 µs", "1 ms", "2 s").
std::string TickLabel(ValueKind kind, double v) {
  std::string s = Label(kind, v);
  for (const char* zeros : {".00", ".0"}) {
    const size_t at = s.find(zeros);
    const size_t after = at == std::string::npos ? at : at + std::string_view(zeros).size();
    if (at != std::string::npos && (after == s.size() || s[after] == ' ')) {
      s.erase(at, after - at);
      break;
    }
  }
  return s;
}

// Text width estimate for layout: no font metrics without a browser.
double TextWidth(std::string_view text) {
  size_t glyphs = 0;
  for (char c : text) glyphs += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return static_cast<double>(glyphs) * kFontSize * 0.6;
}

std::string Text(double x, double y, std::string_view text, std::string_view anchor = "start",
                 std::string_view extra = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" text-anchor=\"" + std::string(anchor) + "\"" +
         (extra.empty() ? "" : " " + std::string(extra)) + ">" + EscapeXml(text) + "</text>\n";
}

std::string Line(double x1, double y1, double x2, double y2, std::string_view stroke, std::string_view extra = "") {
  return "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) + "\" stroke=\"" +
         std::string(stroke) + "\"" + (extra.empty() ? "" : " " + std::string(extra)) + "/>\n";
}

std::string Open(std::string_view id_text, double height, const std::string& title, const std::string& desc) {
  const std::string id = EscapeXml(id_text);
  return "<svg class=\"chart\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(height) + "\" width=\"" + Num(kWidth) +
         "\" height=\"" + Num(height) + "\" role=\"img\" aria-labelledby=\"" + id + "t " + id +
         "d\" font-family=\"system-ui, sans-serif\" font-size=\"" + Num(kFontSize) + "\">\n<title id=\"" + id + "t\">" +
         EscapeXml(title) + "</title>\n<desc id=\"" + id + "d\">" + EscapeXml(desc) + "</desc>\n" +
         Text(0, 16, title, "start", "font-weight=\"bold\" font-size=\"14\"");
}

// Up to ~`count` round ticks from 0 to at least `max`.
std::vector<double> LinearTicks(double max, int count = 5) {
  if (!(max > 0)) return {0, 1};
  const double raw = max / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  std::vector<double> ticks;
  for (double v = 0; v < max + step * 0.999; v += step) ticks.push_back(v);
  return ticks;
}

// 1-2-5 ticks on a log axis covering [lo, hi].
std::vector<double> LogTicks(double lo, double hi) {
  std::vector<double> ticks;
  const bool dense = hi / lo < 100;
  for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi * 10; decade *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m != 1.0 && !dense) continue;
      const double v = decade * m;
      if (v >= lo * 0.999 && v <= hi * 1.001) ticks.push_back(v);
    }
  }
  return ticks;
}

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double from = 0, to = 1;  // pixels
  double Map(double v) const {
    if (log) {
      const double l = std::log10(std::max(v, lo));
      return from + (l - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (to - from);
    }
    return from + (v - lo) / (hi - lo) * (to - from);
  }
};

// Lower and upper bounds of a log axis: whole 1-2-5 steps around the data.
std::pair<double, double> LogBounds(double min, double max) {
  auto down = [](double v) {
    const double d = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {5.0, 2.0, 1.0}) {
      if (d * m <= v) return d * m;
    }
    return d;
  };
  auto up = [](double v) {
    const double d = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
      if (d * m >= v) return d * m;
    }
    return d * 10;
  };
  const double lo = down(min), hi = up(max);
  return {lo, hi > lo ? hi : lo * 10};
}

// A row of colour swatches with names; returns the height used.
double Legend(std::string& out, double y, const std::vector<std::string>& names, const std::vector<int>& slots) {
  double x = 0;
  double rows = 1;
  for (size_t i = 0; i < names.size(); ++i) {
    const double w = 18 + TextWidth(names[i]) + 14;
    if (x + w > kWidth && x > 0) {
      x = 0;
      y += 18;
      ++rows;
    }
    out += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y - 10) + "\" width=\"12\" height=\"12\" fill=\"" +
           std::string(SlotColour(i < slots.size() ? slots[i] : static_cast<int>(i))) + "\"/>\n";
    out += Text(x + 16, y, names[i]);
    x += w;
  }
  return rows * 18;
}

// ---------------------------------------------------------------- bars

std::string Bars(const BarChart& c, std::string_view id) {
  double max = 0;
  for (const auto& row : c.values) {
    for (const auto& v : row) max = v ? std::max(max, *v) : max;
  }
  double label_w = 60;
  for (const std::string& cat : c.categories) label_w = std::max(label_w, TextWidth(cat) + 10);
  label_w = std::min(label_w, 220.0);
  const double bar_h = 14, gap = 12;
  const double legend_y = 40;
  std::string body;
  const double legend_h = Legend(body, legend_y, c.series, c.series_slots);
  const double top = legend_y + legend_h + 6;
  const double band = static_cast<double>(c.series.size()) * bar_h + gap;
  const double plot_h = static_cast<double>(c.categories.size()) * band;
  const std::vector<double> ticks = LinearTicks(max);
  const Axis x{0, ticks.back(), false, label_w, kWidth - 80};
  for (double t : ticks) {
    body += Line(x.Map(t), top, x.Map(t), top + plot_h, "#ddd");
    body += Text(x.Map(t), top + plot_h + 16, TickLabel(c.kind, t), "middle", "fill=\"#555\"");
  }
  body += Text((x.from + x.to) / 2, top + plot_h + 34, c.value_label, "middle", "fill=\"#555\"");
  for (size_t g = 0; g < c.categories.size(); ++g) {
    const double y0 = top + static_cast<double>(g) * band + gap / 2;
    body += Text(label_w - 8, y0 + static_cast<double>(c.series.size()) * bar_h / 2 + 4, c.categories[g], "end");
    for (size_t s = 0; s < c.series.size(); ++s) {
      // Plain values: GCC 12 misreads an optional here (-Wmaybe-uninitialized).
      const bool has = s < c.values[g].size() && c.values[g][s].has_value();
      const double v = has ? c.values[g][s].value() : 0.0;
      const double y = y0 + static_cast<double>(s) * bar_h;
      const std::string tip = c.series[s] + " · " + c.categories[g] + ": " + (has ? Label(c.kind, v) : "no result");
      if (!has) {
        body += Text(x.from + 4, y + bar_h - 3, "no result", "start", "fill=\"#999\" font-size=\"10\"");
        continue;
      }
      const int slot = s < c.series_slots.size() ? c.series_slots[s] : static_cast<int>(s);
      body += "<rect x=\"" + Num(x.from) + "\" y=\"" + Num(y + 1) + "\" width=\"" +
              Num(std::max(1.0, x.Map(v) - x.from)) + "\" height=\"" + Num(bar_h - 2) + "\" fill=\"" +
              std::string(SlotColour(slot)) + "\"><title>" + EscapeXml(tip) + "</title></rect>\n";
      body += Text(x.Map(v) + 4, y + bar_h - 3, Label(c.kind, v), "start", "font-size=\"10\"");
    }
  }
  const double height = top + plot_h + 44;
  return Open(id, height, c.title,
              c.title + ": " + c.value_label + " per " + std::to_string(c.categories.size()) + " groups and " +
                  std::to_string(c.series.size()) + " series") +
         body + "</svg>\n";
}

// ---------------------------------------------------------------- lines

std::string Lines(const LineChart& c, std::string_view id) {
  double xmin = 0, xmax = 0, ymax = 0, ymin = 0;
  bool first = true;
  for (const LineSeries& s : c.series) {
    for (const auto& [px, py] : s.points) {
      xmin = first ? px : std::min(xmin, px);
      xmax = first ? px : std::max(xmax, px);
      ymin = first ? py : std::min(ymin, py);
      ymax = first ? py : std::max(ymax, py);
      first = false;
    }
  }
  for (double t : c.x_ticks) {
    xmin = first ? t : std::min(xmin, t);
    xmax = first ? t : std::max(xmax, t);
    first = false;
  }
  std::string body;
  std::vector<std::string> names;
  std::vector<int> slots;
  for (const LineSeries& s : c.series) {
    names.push_back(s.name);
    slots.push_back(s.slot);
  }
  const double legend_h = Legend(body, 40, names, slots);
  const double top = 40 + legend_h + 6, plot_h = 240, left = 80, right = kWidth - 24;

  Axis x{xmin, xmax > xmin ? xmax : xmin + 1, c.log_x && xmin > 0, left, right};
  std::vector<double> xticks = c.x_ticks;
  if (x.log) {
    if (xticks.empty()) xticks = LogTicks(x.lo, x.hi);
  } else if (xticks.empty()) {
    xticks = LinearTicks(x.hi);
    x.lo = 0;
    x.hi = xticks.back();
  }
  Axis y{0, 1, c.log_y && ymin > 0, top + plot_h, top};
  std::vector<double> yticks;
  if (y.log) {
    std::tie(y.lo, y.hi) = LogBounds(ymin, ymax);
    yticks = LogTicks(y.lo, y.hi);
  } else {
    yticks = LinearTicks(ymax);
    y.hi = yticks.back();
  }
  if (c.shade && c.shade->second > c.shade->first) {
    const double x0 = x.Map(std::max(c.shade->first, x.lo)), x1 = x.Map(std::min(c.shade->second, x.hi));
    body += "<rect x=\"" + Num(x0) + "\" y=\"" + Num(top) + "\" width=\"" + Num(std::max(0.0, x1 - x0)) +
            "\" height=\"" + Num(plot_h) + "\" fill=\"#eee\"/>\n";
    body += Text(x0 + 4, top + 14, c.shade_label, "start", "fill=\"#777\"");
  }
  for (double t : yticks) {
    body += Line(left, y.Map(t), right, y.Map(t), "#ddd");
    body += Text(left - 6, y.Map(t) + 4, TickLabel(c.y_kind, t), "end", "fill=\"#555\"");
  }
  for (double t : xticks) {
    body += Line(x.Map(t), top, x.Map(t), top + plot_h, "#eee");
    body += Text(x.Map(t), top + plot_h + 16, TickLabel(c.x_kind, t), "middle", "fill=\"#555\"");
  }
  body += Line(left, top + plot_h, right, top + plot_h, "#555");
  body += Text((left + right) / 2, top + plot_h + 34, c.x_label, "middle", "fill=\"#555\"");
  body += Text(14, top + plot_h / 2, c.y_label, "middle",
               "fill=\"#555\" transform=\"rotate(-90 14 " + Num(top + plot_h / 2) + ")\"");
  for (const LineSeries& s : c.series) {
    const std::string colour(SlotColour(s.slot));
    std::string points;
    const auto drawable = [&](double px, double py) { return (!x.log || px > 0) && (!y.log || py > 0); };
    for (const auto& [px, py] : s.points) {
      if (drawable(px, py)) points += Num(x.Map(px)) + "," + Num(y.Map(py)) + " ";
    }
    body += "<polyline fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"2\" points=\"" + points + "\"><title>" +
            EscapeXml(s.name) + "</title></polyline>\n";
    if (s.points.size() > 60) continue;
    for (const auto& [px, py] : s.points) {
      if (!drawable(px, py)) continue;
      body += "<circle cx=\"" + Num(x.Map(px)) + "\" cy=\"" + Num(y.Map(py)) + "\" r=\"3\" fill=\"" + colour +
              "\"><title>" + EscapeXml(s.name + " at " + Label(c.x_kind, px) + ": " + Label(c.y_kind, py)) +
              "</title></circle>\n";
    }
  }
  return Open(id, top + plot_h + 44, c.title, c.title + ": " + c.y_label + " by " + c.x_label) + body + "</svg>\n";
}

// ---------------------------------------------------------------- latency ladder

// A marker per statistic, told apart by shape (colour is the row's).
std::string Marker(size_t mark, double cx, double cy, const std::string& colour, const std::string& tip) {
  const std::string t = "<title>" + EscapeXml(tip) + "</title>";
  switch (mark) {
    case 0:  // average: a tall bar
      return "<rect x=\"" + Num(cx - 1.5) + "\" y=\"" + Num(cy - 8) + "\" width=\"3\" height=\"16\" fill=\"#222\">" +
             t + "</rect>\n";
    case 1:  // p50: hollow circle
      return "<circle cx=\"" + Num(cx) + "\" cy=\"" + Num(cy) + "\" r=\"4\" fill=\"white\" stroke=\"" + colour +
             "\" stroke-width=\"2\">" + t + "</circle>\n";
    case 2:  // p90: filled circle
      return "<circle cx=\"" + Num(cx) + "\" cy=\"" + Num(cy) + "\" r=\"4\" fill=\"" + colour + "\">" + t +
             "</circle>\n";
    case 3:  // p99: square
      return "<rect x=\"" + Num(cx - 4) + "\" y=\"" + Num(cy - 4) + "\" width=\"8\" height=\"8\" fill=\"" + colour +
             "\">" + t + "</rect>\n";
    case 4:  // p99.9: diamond
      return "<polygon points=\"" + Num(cx) + "," + Num(cy - 5) + " " + Num(cx + 5) + "," + Num(cy) + " " + Num(cx) +
             "," + Num(cy + 5) + " " + Num(cx - 5) + "," + Num(cy) + "\" fill=\"" + colour + "\">" + t + "</polygon>\n";
    default:  // max: a cross
      return "<path d=\"M" + Num(cx - 4) + " " + Num(cy - 4) + "L" + Num(cx + 4) + " " + Num(cy + 4) + "M" +
             Num(cx - 4) + " " + Num(cy + 4) + "L" + Num(cx + 4) + " " + Num(cy - 4) + "\" stroke=\"" + colour +
             "\" stroke-width=\"2\">" + t + "</path>\n";
  }
}

std::string Ladder(const LadderChart& c, std::string_view id) {
  double lo = 0, hi = 0;
  bool any = false;
  for (const auto& row : c.values) {
    for (const auto& v : row) {
      if (!v || *v <= 0) continue;
      lo = any ? std::min(lo, *v) : *v;
      hi = any ? std::max(hi, *v) : *v;
      any = true;
    }
  }
  if (!any) return "";
  double label_w = 60;
  for (const std::string& r : c.rows) label_w = std::max(label_w, TextWidth(r) + 10);
  label_w = std::min(label_w, 200.0);
  std::string body;
  // Legend of the marker shapes, drawn in grey.
  double lx = 0;
  for (size_t m = 0; m < c.marks.size(); ++m) {
    body += Marker(m, lx + 6, 36, "#666", c.marks[m]);
    body += Text(lx + 14, 40, c.marks[m]);
    lx += 24 + TextWidth(c.marks[m]) + 10;
  }
  const auto [axis_lo, axis_hi] = LogBounds(lo, hi);
  const double top = 56, row_h = 24;
  const double plot_h = static_cast<double>(c.rows.size()) * row_h;
  const Axis x{axis_lo, axis_hi, true, label_w, kWidth - 24};
  for (double t : LogTicks(axis_lo, axis_hi)) {
    body += Line(x.Map(t), top, x.Map(t), top + plot_h, "#ddd");
    body += Text(x.Map(t), top + plot_h + 16, TickLabel(ValueKind::kLatencyUs, t), "middle", "fill=\"#555\"");
  }
  for (size_t r = 0; r < c.rows.size(); ++r) {
    const double cy = top + static_cast<double>(r) * row_h + row_h / 2;
    const std::string colour(SlotColour(r < c.row_slots.size() ? c.row_slots[r] : static_cast<int>(r)));
    body += Text(label_w - 8, cy + 4, c.rows[r], "end");
    double rmin = 0, rmax = 0;
    bool seen = false;
    for (const auto& v : c.values[r]) {
      if (!v || *v <= 0) continue;
      rmin = seen ? std::min(rmin, *v) : *v;
      rmax = seen ? std::max(rmax, *v) : *v;
      seen = true;
    }
    if (seen) body += Line(x.Map(rmin), cy, x.Map(rmax), cy, colour, "stroke-width=\"1.5\" stroke-opacity=\"0.6\"");
    for (size_t m = 0; m < c.values[r].size() && m < c.marks.size(); ++m) {
      const auto& v = c.values[r][m];
      if (!v || *v <= 0) continue;
      body += Marker(m, x.Map(*v), cy, colour, c.rows[r] + " " + c.marks[m] + ": " + FormatLatency(*v));
    }
  }
  return Open(id, top + plot_h + 28, c.title, c.title + ": " + std::to_string(c.rows.size()) + " targets") + body +
         "</svg>\n";
}

}  // namespace

std::string_view SlotColour(int slot) {
  const size_t n = kPalette.size();
  return kPalette[static_cast<size_t>(slot < 0 ? 0 : slot) % n];
}

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderSvg(const Chart& chart, std::string_view id) {
  return std::visit(
      [id](const auto& c) -> std::string {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, BarChart>) {
          return Bars(c, id);
        } else if constexpr (std::is_same_v<T, LineChart>) {
          return Lines(c, id);
        } else {
          return Ladder(c, id);
        }
      },
      chart);
}

}  // namespace fairbench::report

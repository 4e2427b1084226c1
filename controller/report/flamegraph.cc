#include "controller/report/flamegraph.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include "controller/report/format.h"
#include "controller/report/svg.h"

namespace fairbench::report {
namespace {

constexpr double kWidth = 1200;
constexpr double kFrameHeight = 17;
constexpr double kTop = 42;         // title and hint above the frames
constexpr double kBottom = 24;      // the status line below them
constexpr double kCharWidth = 6.6;  // 11 px monospace
constexpr double kPad = 3;

// The script below uses the same layout constants; keep them in step.
constexpr std::string_view kScript = R"js((function () {
  "use strict";
  var CHAR = 6.6, PAD = 3;
  function label(name, w) {
    var n = Math.floor((w - 2 * PAD) / CHAR);
    if (n < 3) return "";
    return name.length <= n ? name : name.slice(0, n - 2) + "..";
  }
  function info(g) { return g.querySelector("title").textContent; }
  function zoom(svg, target) {
    var width = Number(svg.getAttribute("data-width"));
    var zx = Number(target.getAttribute("data-x")), zw = Number(target.getAttribute("data-w"));
    var zd = Number(target.getAttribute("data-d"));
    var frames = svg.querySelectorAll("g.f");
    for (var i = 0; i < frames.length; i++) {
      var g = frames[i];
      var x = Number(g.getAttribute("data-x")), w = Number(g.getAttribute("data-w"));
      var d = Number(g.getAttribute("data-d"));
      var eps = 1e-9, show, nx, nw;
      if (d < zd) {
        show = x <= zx + eps && x + w >= zx + zw - eps;
        nx = 0;
        nw = 1;
      } else {
        show = x >= zx - eps && x + w <= zx + zw + eps;
        nx = (x - zx) / zw;
        nw = w / zw;
      }
      g.style.display = show ? "" : "none";
      if (!show) continue;
      g.setAttribute("opacity", d < zd ? "0.55" : "1");
      var rect = g.querySelector("rect"), text = g.querySelector("text");
      rect.setAttribute("x", (nx * width).toFixed(1));
      rect.setAttribute("width", Math.max(0.1, nw * width - 0.5).toFixed(1));
      text.setAttribute("x", (nx * width + PAD).toFixed(1));
      text.textContent = label(info(g).split("\n")[0], nw * width);
    }
    svg.setAttribute("data-zoom", zd > 0 ? info(target).split("\n")[0] : "");
  }
  var graphs = document.querySelectorAll("svg.flame");
  for (var k = 0; k < graphs.length; k++) {
    (function (svg) {
      var status = svg.querySelector(".flame-status");
      var hint = status ? status.textContent : "";
      svg.addEventListener("click", function (e) {
        var g = e.target.closest ? e.target.closest("g.f") : null;
        if (g) zoom(svg, g);
      });
      svg.addEventListener("keydown", function (e) {
        var g = e.target.closest ? e.target.closest("g.f") : null;
        if (g && (e.key === "Enter" || e.key === " ")) {
          e.preventDefault();
          zoom(svg, g);
        }
      });
      svg.addEventListener("mouseover", function (e) {
        var g = e.target.closest ? e.target.closest("g.f") : null;
        if (g && status) status.textContent = info(g).replace("\n", " \u2014 ");
      });
      svg.addEventListener("mouseleave", function () {
        if (status) status.textContent = hint;
      });
    })(graphs[k]);
  }
})();
)js";

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s(buf);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

std::string Fraction(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7f", v);
  std::string s(buf);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// The name cut to what fits in `width`, as the script does it; cut at a
// character boundary.
std::string FitLabel(const std::string& name, double width) {
  const auto n = static_cast<long>((width - 2 * kPad) / kCharWidth);
  if (n < 3) return "";
  size_t glyphs = 0;
  for (char c : name) glyphs += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  if (glyphs <= static_cast<size_t>(n)) return name;
  std::string out;
  size_t kept = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const bool starts = (static_cast<unsigned char>(name[i]) & 0xC0) != 0x80;
    if (starts && kept == static_cast<size_t>(n - 2)) break;
    kept += starts ? 1 : 0;
    out += name[i];
  }
  return out + "..";
}

// Warm colours for code in user space, cool ones for the kernel, grey for
// the process roots; the shade comes from the name, so a function keeps
// its colour across graphs.
std::string Colour(const std::string& name, int depth) {
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  const double v = static_cast<double>(h % 1000) / 1000.0;
  char buf[40];
  if (depth <= 1) {
    std::snprintf(buf, sizeof buf, "hsl(0,0%%,%d%%)", 78 + static_cast<int>(v * 8));
  } else if (name.size() > 4 && name.compare(name.size() - 4, 4, "_[k]") == 0) {
    std::snprintf(buf, sizeof buf, "hsl(%d,55%%,%d%%)", 195 + static_cast<int>(v * 25), 68 + static_cast<int>(v * 10));
  } else {
    std::snprintf(buf, sizeof buf, "hsl(%d,85%%,%d%%)", static_cast<int>(v * 45), 58 + static_cast<int>(v * 12));
  }
  return buf;
}

struct Frame {
  std::string name;
  uint64_t samples = 0;
  std::map<std::string, std::unique_ptr<Frame>> children;  // by name: stable placement
};

Frame BuildTree(const CellProfile& profile) {
  Frame root{"all", 0, {}};
  for (const FoldedStack& s : profile.stacks) {
    root.samples += s.samples;
    Frame* at = &root;
    size_t start = 0;
    while (start <= s.frames.size()) {
      size_t end = s.frames.find(';', start);
      if (end == std::string::npos) end = s.frames.size();
      const std::string name = s.frames.substr(start, end - start);
      std::unique_ptr<Frame>& child = at->children[name];
      if (!child) child = std::make_unique<Frame>(Frame{name, 0, {}});
      child->samples += s.samples;
      at = child.get();
      start = end + 1;
    }
  }
  return root;
}

struct Layout {
  std::string frames;
  int depth = 0;  // deepest level drawn
  size_t drawn = 0;
  uint64_t hidden_samples = 0;  // in frames too narrow to draw (their callers are drawn)
};

void Place(const Frame& f, uint64_t total, uint64_t offset, int depth, double min_samples, Layout& out,
           std::vector<std::pair<int, std::string>>& rows) {
  const double x = static_cast<double>(offset) / static_cast<double>(total);
  const double w = static_cast<double>(f.samples) / static_cast<double>(total);
  std::string title = f.name + "\n" + FormatCount(static_cast<double>(f.samples)) +
                      (f.samples == 1 ? " sample, " : " samples, ") + FormatShare(w, 2);
  std::string g = "<g class=\"f\" tabindex=\"0\" data-x=\"" + Fraction(x) + "\" data-w=\"" + Fraction(w) +
                  "\" data-d=\"" + std::to_string(depth) + "\"><title>" + EscapeXml(title) + "</title><rect x=\"" +
                  Num(x * kWidth) + "\" width=\"" + Num(std::max(0.1, w * kWidth - 0.5)) + "\" height=\"" +
                  Num(kFrameHeight - 1) + "\" fill=\"" + Colour(f.name, depth) + "\"/><text x=\"" +
                  Num(x * kWidth + kPad) + "\">" + EscapeXml(FitLabel(f.name, w * kWidth)) + "</text></g>\n";
  rows.emplace_back(depth, std::move(g));
  ++out.drawn;
  out.depth = std::max(out.depth, depth);
  uint64_t child_offset = offset;
  for (const auto& [name, child] : f.children) {
    if (static_cast<double>(child->samples) >= min_samples) {
      Place(*child, total, child_offset, depth + 1, min_samples, out, rows);
    } else {
      out.hidden_samples += child->samples;
    }
    child_offset += child->samples;
  }
}

}  // namespace

std::string RenderFlameGraph(const CellProfile& profile, std::string_view title, std::string_view id_text) {
  const Frame root = BuildTree(profile);
  if (root.samples == 0) return "";
  Layout layout;
  std::vector<std::pair<int, std::string>> rows;
  const double min_samples = std::max(1.0, static_cast<double>(root.samples) * kMinFrameShare);
  Place(root, root.samples, 0, 0, min_samples, layout, rows);
  const double frames_height = (layout.depth + 1) * kFrameHeight;
  const double height = kTop + frames_height + kBottom;
  const std::string id = EscapeXml(id_text);
  std::string desc = "Flame graph of " + FormatCount(static_cast<double>(root.samples)) +
                     " samples: each frame is a function, as wide as its share of the samples, on top of its caller.";
  if (layout.hidden_samples > 0) {
    desc += " Calls with fewer than " + FormatShare(kMinFrameShare, 2) + " of the samples are not drawn (" +
            FormatCount(static_cast<double>(layout.hidden_samples)) + " samples in all).";
  }
  const std::string hint = "Click a frame to zoom in, the bottom frame to zoom out; hover for its samples.";
  std::string out = "<svg class=\"flame\" id=\"" + id + "\" data-width=\"" + Num(kWidth) + "\" viewBox=\"0 0 " +
                    Num(kWidth) + " " + Num(height) + "\" width=\"" + Num(kWidth) + "\" height=\"" + Num(height) +
                    "\" role=\"img\" aria-labelledby=\"" + id + "t " + id +
                    "d\" font-family=\"monospace\" font-size=\"11\">\n" + "<title id=\"" + id + "t\">" +
                    EscapeXml(title) + "</title>\n<desc id=\"" + id + "d\">" + EscapeXml(desc) + "</desc>\n" +
                    "<text x=\"0\" y=\"16\" font-family=\"system-ui, sans-serif\" "
                    "font-size=\"14\" font-weight=\"bold\">" +
                    EscapeXml(title) + "</text>\n" +
                    "<text x=\"0\" y=\"33\" font-family=\"system-ui, sans-serif\" font-size=\"12\" fill=\"#555\">" +
                    EscapeXml(FormatCount(static_cast<double>(root.samples)) + " samples" +
                              (profile.frequency_hz > 0 ? " at " + std::to_string(profile.frequency_hz) + " Hz" : "") +
                              (profile.seconds > 0 ? " over " + FormatDecimal(profile.seconds, 1) + " s" : "")) +
                    "</text>\n";
  // Rows bottom up: the root at the bottom, callees above their callers.
  for (int d = 0; d <= layout.depth; ++d) {
    const double y = kTop + frames_height - (d + 1) * kFrameHeight;
    out += "<g transform=\"translate(0," + Num(y) + ")\">\n";
    for (const auto& [depth, g] : rows) {
      if (depth != d) continue;
      // The text's baseline sits inside the frame's row.
      std::string frame = g;
      const size_t text_at = frame.find("<text ");
      frame.insert(text_at + 6, "y=\"12\" ");
      out += frame;
    }
    out += "</g>\n";
  }
  out += "<text class=\"flame-status\" x=\"0\" y=\"" + Num(height - 7) +
         "\" font-family=\"system-ui, sans-serif\" font-size=\"12\" fill=\"#555\">" + EscapeXml(hint) + "</text>\n";
  return out + "</svg>\n";
}

std::string_view FlameGraphScript() { return kScript; }

}  // namespace fairbench::report

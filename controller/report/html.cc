#include "controller/report/html.h"

#include <openssl/evp.h>

#include <string>
#include <type_traits>

#include "common/base64.h"
#include "controller/report/flamegraph.h"
#include "controller/report/svg.h"

namespace fairbench::report {
namespace {

constexpr const char* kStyle = R"css(
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1a1a1a; background: #fff;
       max-width: 1100px; margin: 0 auto; padding: 1.5rem; line-height: 1.45; }
h1 { font-size: 1.7rem; margin-bottom: .3rem; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
h3 { font-size: 1.08rem; margin-top: 1.6rem; }
nav ul { columns: 2; padding-left: 1.2rem; }
nav li li { font-size: .92em; }
.table-wrap { overflow-x: auto; margin: .6rem 0; }
table { border-collapse: collapse; font-size: .9rem; font-variant-numeric: tabular-nums; }
th, td { padding: .25rem .6rem; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: top; }
td { overflow-wrap: anywhere; }
td.num, th.num { white-space: nowrap; }
th { background: #f4f4f4; font-weight: 600; }
td.num, th.num { text-align: right; }
tbody tr:nth-child(even) { background: #fafafa; }
code { background: #f2f2f2; padding: 0 .25rem; border-radius: 3px; }
figure { margin: 1rem 0; overflow-x: auto; }
svg.chart, svg.flame { max-width: 100%; height: auto; }
svg.flame g.f { cursor: pointer; }
svg.flame g.f:hover rect, svg.flame g.f:focus rect { stroke: #333; stroke-width: .6; }
svg.flame g.f:focus { outline: none; }
svg.flame text { pointer-events: none; }
details { margin: .3rem 0; }
summary { cursor: pointer; }
pre { background: #f6f6f6; padding: .8rem; overflow-x: auto; font-size: .82rem; }
footer { margin-top: 3rem; color: #777; font-size: .85rem; }
@media print { nav { display: none; } h2 { break-after: avoid; } figure, table { break-inside: avoid; } }
)css";

std::string Inline(const Paragraph& p) {
  std::string out;
  for (const Span& s : p.spans) {
    switch (s.style) {
      case Span::Style::kPlain: out += EscapeHtml(s.text); break;
      case Span::Style::kStrong: out += "<strong>" + EscapeHtml(s.text) + "</strong>"; break;
      case Span::Style::kCode: out += "<code>" + EscapeHtml(s.text) + "</code>"; break;
    }
  }
  return out;
}

std::string TableHtml(const Table& t) {
  auto cls = [&t](size_t i) {
    return i < t.align.size() && t.align[i] == Align::kRight ? std::string(" class=\"num\"") : std::string();
  };
  std::string out = "<div class=\"table-wrap\"><table>\n<thead><tr>";
  for (size_t i = 0; i < t.header.size(); ++i)
    out += "<th scope=\"col\"" + cls(i) + ">" + EscapeHtml(t.header[i]) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (size_t i = 0; i < t.header.size(); ++i) {
      out += "<td" + cls(i) + ">" + (i < row.size() ? EscapeHtml(row[i]) : std::string()) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table></div>\n";
}

std::string BlockHtml(const Block& block, int& chart_number) {
  return std::visit(
      [&chart_number](const auto& b) -> std::string {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, Paragraph>) {
          return "<p>" + Inline(b) + "</p>\n";
        } else if constexpr (std::is_same_v<T, BulletList>) {
          std::string out = "<ul>\n";
          for (const Paragraph& item : b.items) out += "<li>" + Inline(item) + "</li>\n";
          return out + "</ul>\n";
        } else if constexpr (std::is_same_v<T, Table>) {
          return TableHtml(b);
        } else if constexpr (std::is_same_v<T, Chart>) {
          const std::string svg = RenderSvg(b, "chart" + std::to_string(++chart_number));
          return svg.empty() ? "" : "<figure>\n" + svg + "</figure>\n";
        } else if constexpr (std::is_same_v<T, FlameGraph>) {
          const std::string svg = RenderFlameGraph(b.profile, b.title, "flame" + std::to_string(++chart_number));
          return svg.empty() ? "" : "<figure class=\"flame\">\n" + svg + "</figure>\n";
        } else {
          return "<details><summary>" + EscapeHtml(b.summary) + "</summary>\n<pre>" + EscapeHtml(b.text) +
                 "</pre></details>\n";
        }
      },
      block);
}

std::string Contents(const Document& doc) {
  std::string out = "<nav aria-label=\"Contents\"><ul>\n";
  bool open_sub = false;
  for (const Section& s : doc.sections) {
    const std::string link = "<a href=\"#" + EscapeHtml(s.id) + "\">" + EscapeHtml(s.title) + "</a>";
    if (s.level <= 2) {
      if (open_sub) out += "</ul></li>\n";
      else if (&s != &doc.sections.front()) out += "</li>\n";
      open_sub = false;
      out += "<li>" + link;
    } else {
      if (!open_sub) out += "<ul>\n";
      open_sub = true;
      out += "<li>" + link + "</li>\n";
    }
  }
  if (open_sub) out += "</ul>";
  if (!doc.sections.empty()) out += "</li>\n";
  return out + "</ul></nav>\n";
}

bool HasFlameGraph(const Document& doc) {
  for (const Section& s : doc.sections) {
    for (const Block& b : s.blocks) {
      if (std::holds_alternative<FlameGraph>(b)) return true;
    }
  }
  return false;
}

// The Content-Security-Policy source that allows exactly this inline script.
std::string ScriptHashSource(std::string_view script) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(script.data(), script.size(), digest, &len, EVP_sha256(), nullptr);
  return "'sha256-" + Base64Encode(std::string_view(reinterpret_cast<const char*>(digest), len)) + "'";
}

}  // namespace

std::string EscapeHtml(std::string_view text) { return EscapeXml(text); }

std::string RenderHtml(const Document& doc) {
  // The one script (the flame graphs' zoom) runs only where the policy
  // names its hash; nothing else may run or load.
  const bool script = HasFlameGraph(doc);
  std::string policy = "default-src 'none'; style-src 'unsafe-inline'";
  if (script) policy += "; script-src " + ScriptHashSource(FlameGraphScript());
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
      policy +
      "\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"fairbench\">\n<title>" +
      EscapeHtml(doc.title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<header>\n<h1>" +
      EscapeHtml(doc.title) + "</h1>\n";
  for (const Paragraph& p : doc.preamble) out += "<p>" + Inline(p) + "</p>\n";
  out += "</header>\n" + Contents(doc) + "<main>\n";
  int chart_number = 0;
  for (const Section& s : doc.sections) {
    const std::string tag = s.level <= 2 ? "h2" : "h3";
    out += "<section id=\"" + EscapeHtml(s.id) + "\">\n<" + tag + ">" + EscapeHtml(s.title) + "</" + tag + ">\n";
    for (const Block& b : s.blocks) out += BlockHtml(b, chart_number);
    out += "</section>\n";
  }
  out += "</main>\n<footer>Generated by fairbench from results.json.</footer>\n";
  if (script) out += "<script>" + std::string(FlameGraphScript()) + "</script>\n";
  return out + "</body>\n</html>\n";
}

std::string RenderHtml(const RunRecord& record) { return RenderHtml(BuildDocument(record)); }

}  // namespace fairbench::report

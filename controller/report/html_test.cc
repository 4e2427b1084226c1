// The HTML report: self-contained, escaped, and holding the same tables as
// the Markdown plus the charts.
#include "controller/report/html.h"

#include <gtest/gtest.h>

#include "common/base64.h"
#include "common/histogram.h"
#include "controller/report/cell_checks.h"
#include "controller/report/study_figures.h"
#include "controller/report/svg.h"

namespace fairbench::report {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(HtmlTest, IsSelfContained) {
  const std::string html = RenderHtml(StudyFigures());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0), 0u);
  EXPECT_NE(html.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                      "style-src 'unsafe-inline'\">"),
            std::string::npos);
  for (const char* external : {"<script", "<link", "<img", "<iframe", "src=", "http:", "https:", "url(", "@import",
                               "@font-face", "xlink:href"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  EXPECT_EQ(html.substr(html.size() - 8), "</html>\n");
}

TEST(HtmlTest, HoldsTheTablesAndTheCharts) {
  const std::string html = RenderHtml(StudyFigures());
  EXPECT_NE(html.find("<section id=\"ranking-hello-100\">\n<h3>hello · 100 connections</h3>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td class=\"num\">1</td><td>cinatra</td><td class=\"num\">605,123</td>"
                      "<td class=\"num\">100.0 %</td><td class=\"num\">149.52 µs</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>drogon</td><td class=\"num\">515,760</td><td class=\"num\">−29.9 %</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<a href=\"#baseline\">Drop versus the hello-world baseline</a>"), std::string::npos);
  // Requests/s bars, three latency ladders (the study published latency for
  // hello only) and the scaling lines.
  EXPECT_EQ(Count(html, "<svg "), 5u);
  EXPECT_NE(html.find("<title>cinatra · hello @ 100: 605,123</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>cpp-httplib max: 317.88 ms</title>"), std::string::npos);
  EXPECT_NE(html.find("\">Requests per second of hello by connections</title>"), std::string::npos);
  EXPECT_NE(html.find(">10,000</text>"), std::string::npos);  // a connection level on the log axis
  // No timelines or raw output in the published figures.
  EXPECT_EQ(html.find("id=\"timeline\""), std::string::npos);
  EXPECT_EQ(html.find("<details>"), std::string::npos);
}

TEST(HtmlTest, EscapesEverythingFromTheRun) {
  RunRecord record = StudyFigures();
  const std::string evil = "<img src=x onerror=alert(1)>&\"'";
  record.run.metadata.name = "run<b>";
  record.run.metadata.annotations["fairbench.dev/description"] = evil;
  record.run.spec.targets[0].image = evil;
  record.run.spec.scenarios[0].expect.body = evil;
  record.environment.notes = {evil};
  for (CellRecord& c : record.cells) {
    if (c.result.target == "crow") c.result.target = "crow<i>";
  }
  record.cells[0].result.state = api::CellState::kFailed;
  record.cells[0].result.reason = api::CellReason::kTargetExited;
  record.cells[0].result.message = evil;
  record.cells[1].wrk_text = "</pre><script>alert(1)</script>";
  const std::string html = RenderHtml(record);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_EQ(html.find("<i>"), std::string::npos);
  EXPECT_EQ(html.find("</pre><script"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;"), std::string::npos);
  EXPECT_NE(html.find("<title>run&lt;b&gt;: benchmark report</title>"), std::string::npos);
  EXPECT_NE(html.find("crow&lt;i&gt; · hello @ 100"), std::string::npos);  // inside the SVG too
  EXPECT_NE(html.find("<pre>&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;</pre>"), std::string::npos);
  EXPECT_EQ(EscapeHtml("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

// A record with per-second timelines and wrk text, as fairbench writes them.
RunRecord TimelineRecord() {
  RunRecord record;
  record.run.metadata.name = "timeline";
  api::Scenario hello;
  hello.name = "hello";
  record.run.spec.scenarios = {hello};
  for (const char* name : {"alpha", "beta"}) {
    api::Target t;
    t.name = name;
    record.run.spec.targets.push_back(t);
    CellRecord c;
    c.result.target = name;
    c.result.scenario = "hello";
    c.result.connections = 100;
    c.result.requests_per_second = name[0] == 'a' ? 1000 : 2000;
    c.result.latency.mean = name[0] == 'a' ? 100'000 : 50'000;
    c.result.latency.p99 = 180'000;
    c.result.latency.max = 400'000;
    for (uint64_t s = 1; s <= 12; ++s) {
      TimelinePoint p;
      p.sequence = s;
      p.phase = s <= 2 ? Phase::kWarmup : Phase::kMeasure;
      p.start_s = 100.0 + static_cast<double>(s - 1);
      p.end_s = p.start_s + 1;
      p.counters.requests = static_cast<uint64_t>(c.result.requests_per_second) + s;
      c.timeline.push_back(p);
    }
    Histogram h;
    for (int64_t us = 1; us <= 1000; ++us) h.Record(us * (name[0] == 'a' ? 100 : 50));
    c.latency_histogram = Base64Encode(h.EncodeCompressed());
    c.wrk_text = std::string("Running 10s test @ http://127.0.0.1/\n  ") + name + "\n";
    c.agents = 1;
    c.connections_peak = 100;
    record.cells.push_back(c);
    record.run.status.results.push_back(c.result);
  }
  CheckCells(record);
  return record;
}

TEST(HtmlTest, DrawsRequestsPerSecondOverTimeFromTheTimeline) {
  const std::string html = RenderHtml(TimelineRecord());
  const size_t section = html.find("<section id=\"timeline\">");
  ASSERT_NE(section, std::string::npos) << html;
  const std::string timeline = html.substr(section, html.find("</section>", section) - section);
  EXPECT_EQ(Count(timeline, "<polyline "), 2u);
  EXPECT_NE(timeline.find(">warmup</text>"), std::string::npos);
  EXPECT_NE(timeline.find("<title>beta at 12 s: 2,012</title>"), std::string::npos) << timeline;
  EXPECT_NE(html.find("<details><summary>alpha · hello · 100 connections · repetition 1</summary>\n"
                      "<pre>Running 10s test @ http://127.0.0.1/\n  alpha\n</pre></details>"),
            std::string::npos);
}

TEST(HtmlTest, DrawsThePercentileSpectrumFromTheHistograms) {
  const std::string html = RenderHtml(TimelineRecord());
  const size_t at = html.find(">Latency by percentile of hello at 100 connections (log scales)</title>");
  ASSERT_NE(at, std::string::npos) << html;
  const std::string chart = html.substr(at, html.find("</svg>", at) - at);
  EXPECT_EQ(Count(chart, "<polyline "), 2u);
  for (const char* tick : {">0 %</text>", ">90 %</text>", ">99 %</text>", ">99.9 %</text>"}) {
    EXPECT_NE(chart.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(chart.find(">99.99 %</text>"), std::string::npos);  // 1,000 samples resolve no further
  // Values are the histogram's: the highest value of the percentile's bucket.
  EXPECT_NE(chart.find("<title>alpha at 99 %: 99.01 ms</title>"), std::string::npos) << chart;
  EXPECT_NE(chart.find("<title>beta at 99.9 %: 49.95 ms</title>"), std::string::npos);
}

TEST(HtmlTest, ChartsHandleMissingAndSingleValues) {
  BarChart bars;
  bars.title = "one";
  bars.categories = {"only"};
  bars.series = {"a", "b"};
  bars.values = {{std::nullopt, 5.0}};
  const std::string svg = RenderSvg(bars, "c1");
  EXPECT_NE(svg.find(">no result</text>"), std::string::npos);
  EXPECT_NE(svg.find("aria-labelledby=\"c1t c1d\""), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);

  LineChart line;
  line.title = "flat";
  line.series = {LineSeries{"a", 0, {{1, 0}, {1, 0}}}};
  const std::string flat = RenderSvg(line, "c2");
  EXPECT_EQ(flat.find("nan"), std::string::npos) << flat;
  EXPECT_EQ(flat.find("inf"), std::string::npos);

  LadderChart empty;
  empty.rows = {"a"};
  empty.marks = {"avg"};
  empty.values = {{std::nullopt}};
  EXPECT_EQ(RenderSvg(empty, "c3"), "");  // nothing to draw: no chart at all
}

}  // namespace
}  // namespace fairbench::report

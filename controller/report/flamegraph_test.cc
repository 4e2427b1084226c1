// The flame graph: frames as wide as their samples, on their callers,
// named and escaped; and where the HTML report puts it.
#include "controller/report/flamegraph.h"

#include <gtest/gtest.h>

#include <regex>

#include "controller/report/html.h"
#include "controller/report/markdown.h"
#include "controller/report/study_figures.h"

namespace fairbench::report {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

CellProfile Profile() {
  CellProfile p;
  p.frequency_hz = 99;
  p.seconds = 10;
  p.samples = 1000;
  p.stacks = {{"srv;main;handle;parse", 300},
              {"srv;main;handle;write_[k]", 200},
              {"srv;main;poll_[k]", 499},
              {"srv;main;tiny", 1}};
  return p;
}

// The frame of `name`: its data-x, data-w and data-d attributes.
std::smatch Frame(const std::string& svg, const std::string& name) {
  std::smatch m;
  const std::regex re(
      "<g class=\"f\" tabindex=\"0\" data-x=\"([0-9.]+)\" data-w=\"([0-9.]+)\" data-d=\"([0-9]+)\"><title>" + name +
      "\n");
  std::regex_search(svg, m, re);
  return m;
}

// Catches: widths not proportional to samples, a callee not on its caller
// (depth, x inside the caller's range), siblings out of name order, the
// root not spanning everything, frames too narrow to see bloating the page.
TEST(FlameGraphTest, FramesAreAsWideAsTheirSamplesOnTheirCallers) {
  const std::string svg = RenderFlameGraph(Profile(), "srv · hello · 100 connections", "flame1");
  ASSERT_FALSE(svg.empty());
  const std::smatch all = Frame(svg, "all"), main = Frame(svg, "main"), handle = Frame(svg, "handle"),
                    parse = Frame(svg, "parse"), write = Frame(svg, "write_\\[k\\]"), poll = Frame(svg, "poll_\\[k\\]");
  for (const std::smatch* m : {&all, &main, &handle, &parse, &write, &poll}) ASSERT_FALSE(m->empty());
  EXPECT_EQ(all[1], "0");
  EXPECT_EQ(all[2], "1");
  EXPECT_EQ(main[3], "2");
  EXPECT_EQ(handle[2], "0.5");
  EXPECT_EQ(handle[1], "0");  // "handle" sorts before "poll_[k]"
  EXPECT_EQ(parse[2], "0.3");
  EXPECT_EQ(parse[3], "4");
  EXPECT_EQ(write[1], "0.3");  // after parse, on handle
  EXPECT_EQ(poll[1], "0.5");
  EXPECT_EQ(poll[2], "0.499");
  // A frame's title gives its samples and share.
  EXPECT_NE(svg.find("<title>handle\n500 samples, 50.00 %</title>"), std::string::npos);
  // "tiny" holds 0.1 % of the samples: drawn (over the 0.02 % floor).
  EXPECT_NE(svg.find("<title>tiny\n1 sample, 0.10 %</title>"), std::string::npos);
  // Kernel frames are cool, user frames warm, the roots grey.
  EXPECT_NE(svg.find("fill=\"hsl(2"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"hsl(0,0%,"), std::string::npos);
  // Labels fit their frames: the 1-sample frame is too narrow for one.
  EXPECT_NE(svg.find(">handle</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">tiny</text>"), std::string::npos);
  EXPECT_NE(svg.find("aria-labelledby=\"flame1t flame1d\""), std::string::npos);
}

TEST(FlameGraphTest, NarrowFramesAreLeftOutAndSaidSo) {
  CellProfile p = Profile();
  p.stacks.push_back({"srv;main;rare", 1});
  p.stacks[2].samples = 20000;  // poll dwarfs the rest: one sample is under the floor
  const std::string svg = RenderFlameGraph(p, "t", "f");
  EXPECT_EQ(svg.find("<title>rare\n"), std::string::npos);
  EXPECT_NE(svg.find("are not drawn (2 samples in all)"), std::string::npos) << svg.substr(0, 600);
}

TEST(FlameGraphTest, EscapesNamesAndDrawsNothingWithoutSamples) {
  CellProfile p;
  p.stacks = {{"srv;operator<<(std::ostream&, \"x\")", 3}};
  const std::string svg = RenderFlameGraph(p, "<b>", "f");
  EXPECT_NE(svg.find("operator&lt;&lt;(std::ostream&amp;, &quot;x&quot;)"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(RenderFlameGraph(CellProfile{}, "empty", "f"), "");
}

RunRecord Profiled() {
  RunRecord r = StudyFigures();
  r.run.spec.profile = api::Profile{false, {api::ProfileCell{"", "hello", 100}}, 99};
  bool unavailable = false;
  for (CellRecord& c : r.cells) {
    if (c.result.scenario != "hello" || c.result.connections != 100) continue;
    c.profile = Profile();
    if (!unavailable) {
      c.profile = CellProfile{ProfileState::kUnavailable, "perf is not installed here", "", 99, 0, 0, 0, {}};
      unavailable = true;
    }
  }
  return r;
}

// The report: a table of the profiled cells in both formats (the reason
// where a profile is missing), a flame graph per recorded profile in HTML,
// and the script allowed by its hash and nothing more. Catches: a missing
// profile passed over in silence, graphs in the Markdown, a script the
// page's policy would block (or allow too much).
TEST(FlameGraphTest, TheReportShowsEachProfiledCell) {
  const RunRecord r = Profiled();
  const std::string md = RenderMarkdown(r);
  EXPECT_NE(md.find("## Where the targets spend their CPU"), std::string::npos);
  EXPECT_NE(md.find("| not recorded: perf is not installed here | – |"), std::string::npos) << md;
  EXPECT_NE(md.find("| hello | 100 | 1,000 samples over 10.0 s | poll\\_\\[k\\] 49.9 %, parse 30.0 %, write\\_\\[k\\] "
                    "20.0 % |"),
            std::string::npos);
  EXPECT_EQ(md.find("<svg"), std::string::npos);

  // A long C++ name is cut in the table (the graph keeps it whole).
  RunRecord long_name = r;
  for (CellRecord& c : long_name.cells) {
    if (c.profile && c.profile->state == ProfileState::kRecorded)
      c.profile->stacks.push_back({"srv;" + std::string(70, 'x'), 900});
  }
  EXPECT_NE(RenderMarkdown(long_name).find("| " + std::string(59, 'x') + "… 47.4 %, "), std::string::npos);

  const std::string html = RenderHtml(r);
  EXPECT_EQ(Count(html, "<svg class=\"flame\""), 5u);  // six targets, one without perf
  EXPECT_EQ(Count(html, "<script>"), 1u);
  const size_t policy = html.find("content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-");
  EXPECT_NE(policy, std::string::npos);
  EXPECT_EQ(html.find("unsafe-eval"), std::string::npos);
  EXPECT_NE(html.find("<script>" + std::string(FlameGraphScript()) + "</script>\n</body>"), std::string::npos);
  // Without a profile: no script, and the policy allows none.
  const std::string plain = RenderHtml(StudyFigures());
  EXPECT_EQ(plain.find("<script"), std::string::npos);
  EXPECT_EQ(plain.find("script-src"), std::string::npos);
}

}  // namespace
}  // namespace fairbench::report

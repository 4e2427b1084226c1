// report.html as a person sees it: a real `fairbench run` (two real targets,
// perf sampling their measured windows) writes the report, and headless
// Chromium opens it. Asserted in the rendered page: no console error
// (nothing the page's own policy blocked, no script error), every section
// there, no table wider than the page, every chart drawn with its data, the
// flame graphs drawn and zooming on a click, the ports the targets used.
//
// Needs Debian's chromium (scripts/setup installs it); skipped without it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "controller/report/format.h"
#include "tests/browser/devtools_pipe.h"
#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string FindChromium() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      const std::string candidate = dir + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return "";
}

// What the page shows, measured in the page.
constexpr const char* kMeasure = R"js((() => {
  const vw = document.documentElement.clientWidth;
  const out = {viewport: vw, pageWidth: document.documentElement.scrollWidth, sections: [], tables: [],
               charts: [], flames: []};
  for (const s of document.querySelectorAll("main > section")) {
    const h = s.querySelector("h2, h3");
    out.sections.push({id: s.id, title: h ? h.textContent : "", height: h ? h.offsetHeight : 0});
  }
  for (const t of document.querySelectorAll("table")) {
    const r = t.getBoundingClientRect();
    const wrap = t.parentElement;
    out.tables.push({section: t.closest("section") ? t.closest("section").id : "", width: t.offsetWidth,
                     right: r.right, wrapScroll: wrap.scrollWidth, wrapClient: wrap.clientWidth,
                     header: [...t.querySelectorAll("th")].map(th => th.textContent),
                     rows: [...t.querySelectorAll("tbody tr")].map(tr => [...tr.cells].map(td => td.textContent))});
  }
  const drawn = (el, box) => {
    const b = el.getBoundingClientRect();
    return b.width + b.height > 0 && b.right <= box.right + 1 && b.left >= box.left - 1 &&
           b.bottom <= box.bottom + 1 && b.top >= box.top - 1;
  };
  for (const svg of document.querySelectorAll("svg.chart")) {
    const box = svg.getBoundingClientRect();
    const marks = [...svg.querySelectorAll("title")].filter(t => t.parentElement !== svg);
    out.charts.push({title: svg.querySelector("title").textContent, width: box.width, height: box.height,
                     marks: marks.map(t => t.textContent),
                     undrawn: marks.filter(t => !drawn(t.parentElement, box)).map(t => t.textContent)});
  }
  for (const svg of document.querySelectorAll("svg.flame")) {
    const box = svg.getBoundingClientRect();
    const frames = [...svg.querySelectorAll("g.f")];
    out.flames.push({id: svg.id, title: svg.querySelector("title").textContent, width: box.width,
                     height: box.height, frames: frames.length,
                     root: frames.length ? frames[0].querySelector("title").textContent : "",
                     undrawn: frames.filter(g => !drawn(g.querySelector("rect"), box)).length});
  }
  return out;
})())js";

// Clicks a frame of the first flame graph and reports what the graph shows
// before and after; `which` picks the frame: "child" (the widest frame
// that is not full width), "root".
std::string FramePosition(const std::string& which) {
  return R"js((async () => {
  const svg = document.querySelector("svg.flame");
  const frames = [...svg.querySelectorAll("g.f")];
  let g = frames[0];
  if (")js" +
         which + R"js(" === "child") {
    const narrower = frames.filter(f => Number(f.getAttribute("data-w")) < 0.97 && f.querySelector("text").textContent);
    narrower.sort((a, b) => Number(b.getAttribute("data-w")) - Number(a.getAttribute("data-w")));
    g = narrower[0];
  }
  // Deep stacks make a graph taller than the window: bring the frame into
  // view, and wait until the scroll has been drawn (input is hit-tested
  // where the compositor last drew the page).
  g.querySelector("rect").scrollIntoView({block: "center"});
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const r = g.querySelector("rect").getBoundingClientRect();
  return {x: r.left + Math.min(r.width / 2, 20), y: r.top + r.height / 2, id: frames.indexOf(g),
          name: g.querySelector("title").textContent.split("\n")[0]};
})())js";
}

constexpr const char* kFrameState = R"js((() => {
  const svg = document.querySelector("svg.flame");
  const frames = [...svg.querySelectorAll("g.f")];
  return {widths: frames.map(g => Number(g.querySelector("rect").getAttribute("width"))),
          hidden: frames.filter(g => g.style.display === "none").length,
          status: svg.querySelector(".flame-status").textContent};
})())js";

class ReportBrowserTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    chromium_ = FindChromium();
    if (chromium_.empty()) return;
    auto dir = testing::TempDir::Create("fairbench-browser");
    ASSERT_TRUE(dir.ok());
    dir_ = new testing::TempDir(std::move(*dir));
    const std::string d = dir_->path().string();
    auto target = [&](const std::string& name, const std::string& server) {
      return "  - name: " + name + "\n    local:\n      command: [" +
             testing::BinaryPath("fairbench-target-" + server) + ", --port, \"{port}\", --threads, \"1\"]\n";
    };
    // The quick start's scenarios that made the scenario table too wide: a
    // JSON body and its expected JSON.
    const std::string run =
        "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: browser}\nspec:\n  targets:\n" +
        target("beast", "beast") + target("httplib", "cpp-httplib-debian") +
        "  scenarios:\n"
        "  - name: hello\n    request: {path: /}\n    expect: {status: 200, body: \"Hello, World!\"}\n"
        "  - name: echo\n    request:\n      method: POST\n      path: /api/echo\n"
        "      headers: {Content-Type: application/json}\n"
        "      body: '{\"name\":\"Alice\",\"age\":30,\"email\":\"alice@example.com\"}'\n"
        "    expect:\n      status: 200\n      json: {name: Alice, age: 30, email: alice@example.com}\n"
        "  load: {threads: 1, connections: [8], warmup: 200ms, duration: 1s, timeout: 1s}\n"
        "  cooldown: 200ms\n"
        "  profile: {cells: [{scenario: hello}, {target: httplib}], frequency: 499}\n";
    std::ofstream(d + "/run.yaml") << run;
    testing::SubprocessOptions o;
    o.argv = {testing::BinaryPath("fairbench"),
              "run",
              d + "/run.yaml",
              "--output",
              d + "/out",
              "--lock-file",
              d + "/load.lock",
              "--quiet"};
    o.stdout_to = testing::Redirect::File(d + "/stdout.txt");
    o.stderr_to = testing::Redirect::File(d + "/stderr.txt");
    auto p = testing::Subprocess::Start(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    auto status = p->Wait(120s);
    ASSERT_TRUE(status.ok());
    run_exit_ = status->exit_code;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    if (chromium_.empty()) GTEST_SKIP() << "no chromium on PATH (scripts/setup installs Debian's chromium)";
    ASSERT_NE(dir_, nullptr);
    ASSERT_EQ(run_exit_, 0) << ReadFile(dir_->path() / "stderr.txt");
    results_ = json::parse(ReadFile(dir_->path() / "out" / "results.json"));
  }

  std::unique_ptr<testing::DevToolsPipe> Browser(int width, int height = 900) {
    const std::string d = dir_->path().string();
    auto b = testing::DevToolsPipe::Open(chromium_, d + "/profile-" + std::to_string(width),
                                         d + "/chromium-" + std::to_string(width) + ".log", width, height);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(*b) : nullptr;
  }
  std::string ReportUrl() const { return "file://" + (dir_->path() / "out" / "report.html").string(); }

  // Catches: a script or style the page's policy blocks (a wrong hash), a
  // script error, a missing section, a table that runs off the right edge
  // (the scenario table did at 1,280 px), a chart drawn empty or with marks
  // outside it, a chart whose numbers are not the record's, a flame graph
  // missing for a profiled cell, a target's port shown as 8080 when it ran
  // on the port chosen at run time.
  void CheckPage(int width) {
    auto browser = Browser(width);
    ASSERT_TRUE(browser);
    const size_t from = browser->events().size();
    ASSERT_TRUE(browser->Load(ReportUrl()).ok());
    auto measured = browser->Evaluate(kMeasure);
    ASSERT_TRUE(measured.ok()) << measured.status().ToString();
    const json& page = *measured;
    EXPECT_EQ(browser->Errors(from), std::vector<std::string>{});

    std::set<std::string> ids;
    for (const json& s : page["sections"]) {
      ids.insert(s["id"].get<std::string>());
      EXPECT_GT(s["height"].get<double>(), 0) << s["id"] << " has no visible heading";
    }
    for (const char* id : {"method", "overview", "rankings", "ranking-hello-8", "ranking-echo-8", "baseline", "errors",
                           "resources", "bytes", "flags", "repetitions", "failures", "profiles", "timeline", "raw"}) {
      EXPECT_TRUE(ids.count(id)) << "section " << id << " is missing";
    }

    EXPECT_LE(page["pageWidth"].get<double>(), page["viewport"].get<double>()) << "the page scrolls sideways";
    for (const json& t : page["tables"]) {
      const std::string what = t["section"].get<std::string>() + " table " + t["header"].dump();
      EXPECT_LE(t["right"].get<double>(), page["viewport"].get<double>() + 0.5) << what << " runs off the page";
      EXPECT_LE(t["wrapScroll"].get<double>(), t["wrapClient"].get<double>()) << what << " is cut off in its box";
    }

    // The targets' ports: the ones they listened on, as read back.
    std::map<std::string, std::string> ports;
    for (const json& note : results_["environment"]["notes"]) {
      const std::string n = note.get<std::string>();
      const size_t at = n.find(": port: ");
      if (n.rfind("target ", 0) == 0 && at != std::string::npos) ports[n.substr(7, at - 7)] = n.substr(at + 8);
    }
    ASSERT_EQ(ports.size(), 2u) << results_["environment"].dump();
    bool targets_table = false;
    for (const json& t : page["tables"]) {
      if (t["section"] != "method" || t["header"][2] != "port") continue;
      targets_table = true;
      for (const json& row : t["rows"]) {
        const std::string port = row[2].get<std::string>();
        EXPECT_EQ(port, ports[row[0].get<std::string>()]);
        EXPECT_NE(port, "8080");
        EXPECT_NE(port.find("chosen at run time"), std::string::npos);
      }
    }
    EXPECT_TRUE(targets_table);

    // Every chart drawn, each mark inside it; the overview's bars are the
    // record's requests/s.
    ASSERT_FALSE(page["charts"].empty());
    for (const json& c : page["charts"]) {
      EXPECT_GT(c["width"].get<double>(), 100) << c["title"];
      EXPECT_GT(c["height"].get<double>(), 50) << c["title"];
      EXPECT_FALSE(c["marks"].empty()) << c["title"] << " has no data";
      EXPECT_TRUE(c["undrawn"].empty()) << c["title"] << ": " << c["undrawn"].dump();
    }
    const json& bars = page["charts"][0];
    EXPECT_EQ(bars["title"], "Requests per second");
    ASSERT_EQ(results_["cells"].size(), 4u);
    for (const json& cell : results_["cells"]) {
      const json& r = cell["result"];
      const std::string mark = r["target"].get<std::string>() + " · " + r["scenario"].get<std::string>() +
                               " @ 8: " + report::FormatRate(r["requestsPerSecond"].get<double>());
      EXPECT_NE(std::find(bars["marks"].begin(), bars["marks"].end(), mark), bars["marks"].end())
          << mark << " not in " << bars["marks"].dump();
    }

    // A flame graph per recorded profile: hello for both targets, echo for
    // httplib.
    size_t recorded = 0;
    for (const json& cell : results_["cells"]) {
      const json& r = cell["result"];
      const bool selected = r["scenario"] == "hello" || r["target"] == "httplib";
      ASSERT_EQ(cell.contains("profile"), selected) << r.dump();
      if (!selected) continue;
      EXPECT_EQ(cell["profile"]["state"], "Recorded") << cell["profile"].dump();
      if (cell["profile"]["state"] == "Recorded" && !cell["profile"]["folded"].empty()) ++recorded;
    }
    EXPECT_EQ(recorded, 3u);
    EXPECT_EQ(page["flames"].size(), recorded);
    for (const json& f : page["flames"]) {
      EXPECT_GT(f["frames"].get<int>(), 2) << f["title"];
      EXPECT_EQ(f["undrawn"].get<int>(), 0) << f["title"];
      EXPECT_EQ(f["root"].get<std::string>().rfind("all\n", 0), 0u) << f["root"];
      EXPECT_LE(f["width"].get<double>(), page["viewport"].get<double>());
    }
  }

  // Clicking a frame zooms to it and clicking the bottom frame zooms out;
  // hovering names the frame. Catches: a script that does not run (blocked
  // or broken), a click that does nothing, a zoom that cannot be undone.
  void CheckZoom() {
    auto browser = Browser(1280);
    ASSERT_TRUE(browser);
    const size_t from = browser->events().size();
    ASSERT_TRUE(browser->Load(ReportUrl()).ok());
    auto before = browser->Evaluate(kFrameState);
    ASSERT_TRUE(before.ok()) << before.status().ToString();
    auto child = browser->Evaluate(FramePosition("child"));
    ASSERT_TRUE(child.ok()) << child.status().ToString();
    ASSERT_TRUE(browser
                    ->Evaluate("window.seen = []; for (const t of ['mouseover', 'mousedown', 'click']) "
                               "document.addEventListener(t, e => seen.push([t, e.clientX, e.clientY, "
                               "e.target.tagName, e.target.textContent.slice(0, 40)]), true); 1")
                    .ok());
    ASSERT_TRUE(browser->Click((*child)["x"].get<double>(), (*child)["y"].get<double>()).ok());
    auto zoomed = browser->Evaluate(kFrameState);
    ASSERT_TRUE(zoomed.ok());
    const int index = (*child)["id"].get<int>();
    auto seen = browser->Evaluate(
        "({seen: window.seen, scroll: window.scrollY, at: (() => { const e = "
        "document.elementFromPoint(" +
        (*child)["x"].dump() + ", " + (*child)["y"].dump() +
        "); return e ? e.tagName + ' ' + e.textContent.slice(0, 40) : null; })()})");
    SCOPED_TRACE("clicked " + child->dump() + "; the page saw " +
                 (seen.ok() ? seen->dump() : seen.status().ToString()));
    EXPECT_LT((*before)["widths"][index].get<double>(), 1150);
    EXPECT_GT((*zoomed)["widths"][index].get<double>(), 1190) << "the clicked frame did not fill the graph";
    EXPECT_GT((*zoomed)["hidden"].get<int>(), 0) << "frames outside the clicked one stayed";
    EXPECT_NE((*zoomed)["status"].get<std::string>().find((*child)["name"].get<std::string>()), std::string::npos)
        << "hovering does not name the frame: " << (*zoomed)["status"];

    auto root = browser->Evaluate(FramePosition("root"));
    ASSERT_TRUE(root.ok());
    ASSERT_TRUE(browser->Click((*root)["x"].get<double>(), (*root)["y"].get<double>()).ok());
    auto reset = browser->Evaluate(kFrameState);
    ASSERT_TRUE(reset.ok());
    EXPECT_EQ((*reset)["hidden"], 0);
    for (size_t i = 0; i < (*before)["widths"].size(); ++i) {
      EXPECT_NEAR((*reset)["widths"][i].get<double>(), (*before)["widths"][i].get<double>(), 0.11) << "frame " << i;
    }
    EXPECT_EQ(browser->Errors(from), std::vector<std::string>{});
  }

  // The console check itself: a report whose script no longer matches the
  // hash its policy names is blocked, and that shows up as an error. Catches:
  // the test above passing because errors are not seen at all.
  void CheckBlockedScript() {
    std::string html = ReadFile(dir_->path() / "out" / "report.html");
    const size_t at = html.find("\"use strict\";");
    ASSERT_NE(at, std::string::npos);
    html.insert(at, "/* changed */ ");
    const std::filesystem::path tampered = dir_->path() / "tampered.html";
    std::ofstream(tampered) << html;
    auto browser = Browser(1280);
    ASSERT_TRUE(browser);
    const size_t from = browser->events().size();
    ASSERT_TRUE(browser->Load("file://" + tampered.string()).ok());
    ASSERT_TRUE(browser->Evaluate("1").ok());  // let the log entry arrive
    const std::vector<std::string> errors = browser->Errors(from);
    ASSERT_FALSE(errors.empty());
    EXPECT_NE(errors[0].find("Content Security Policy"), std::string::npos) << errors[0];
  }

  static inline std::string chromium_;
  static inline testing::TempDir* dir_ = nullptr;
  static inline int run_exit_ = -1;
  json results_;
};

// One run of fairbench (the slow part) serves every check.
TEST_F(ReportBrowserTest, ShowsTheReportAsWritten) {
  for (const int width : {1280, 1024}) {
    SCOPED_TRACE("viewport " + std::to_string(width) + " px");
    CheckPage(width);
  }
  CheckZoom();
  CheckBlockedScript();
}

}  // namespace
}  // namespace fairbench

// `fairbench serve` as a person uses it: the real binary over a store
// holding a series with a step the test made (12 runs at 10,000
// requests/s, then 12 at 7,000, ±1 % noise), and headless Chromium clicking
// through it — the front page, the series' link, its chart with the change
// point marked at the run where the step is, a point after the step, and
// that run's report. No console error or exception on any page.
//
// Needs Debian's chromium (scripts/setup installs it); skipped without it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "controller/report/format.h"
#include "controller/report/run_record.h"
#include "controller/results/result_store.h"
#include "tests/browser/devtools_pipe.h"
#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::string ReadFile(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
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

// ±1 % from a fixed sequence: the same store every time.
double Noise(uint64_t& state) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (static_cast<double>(state >> 11) / 9007199254740992.0 * 2 - 1) * 0.01;
}

constexpr int kRuns = 24;
constexpr int kStepAt = 12;  // the first run at the lower level
constexpr double kBefore = 10000, kAfter = 7000;

// The center of the element `selector` picks, scrolled into view, once the
// scroll has been drawn (input is hit-tested where the page was drawn).
std::string CenterOf(const std::string& selector) {
  return R"js((async () => {
  const e = document.querySelector()js" +
         json(selector).dump() + R"js();
  if (!e) return null;
  e.scrollIntoView({block: "center"});
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const r = e.getBoundingClientRect();
  return {x: r.left + r.width / 2, y: r.top + r.height / 2};
})())js";
}

// What the series page shows of its requests/s chart.
constexpr const char* kSeriesChart = R"js((() => {
  const svg = document.querySelector("svg#chart-rps");
  if (!svg) return null;
  const box = svg.getBoundingClientRect();
  const inside = b => b.width + b.height > 0 && b.left >= box.left - 1 && b.right <= box.right + 1 &&
                      b.top >= box.top - 1 && b.bottom <= box.bottom + 1;
  const points = [...svg.querySelectorAll("circle.point")].map(c => {
    const b = c.getBoundingClientRect();
    return {run: Number(c.dataset.run), index: Number(c.dataset.index), x: b.left + b.width / 2,
            y: b.top + b.height / 2, inside: inside(b), href: c.closest("a") ? c.closest("a").getAttribute("href") : "",
            title: c.querySelector("title").textContent};
  });
  const changes = [...svg.querySelectorAll("g.change")].map(g => {
    const b = g.querySelector("line").getBoundingClientRect();
    return {index: Number(g.dataset.index), run: Number(g.dataset.run), cls: g.getAttribute("class"),
            x: b.left + b.width / 2, inside: inside(b), title: g.querySelector("title").textContent};
  });
  return {url: location.pathname + location.search, width: box.width, height: box.height, points, changes,
          p99Changes: document.querySelectorAll("svg#chart-p99 g.change").length};
})())js";

class ServeBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) GTEST_SKIP() << "no chromium on PATH (scripts/setup installs Debian's chromium)";
    auto dir = testing::TempDir::Create("fairbench-serve-browser");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    FillStore();
    StartServe();
  }
  void TearDown() override {
    if (serve_) {
      auto status = serve_->Terminate(SIGTERM, 10s);
      ASSERT_TRUE(status.ok());
      // Catches: SIGTERM not stopping the server cleanly.
      EXPECT_TRUE(status->success()) << status->ToString() << "\n" << ReadFile(dir_->File("serve.err"));
    }
  }

  // The series beast/hello at 10 connections with its step, through the
  // ResultStore API; both repetitions of a run's cell at the run's level.
  void FillStore() {
    const json tmpl = json::parse(ReadFile(std::string(RESULTS_TESTDATA) + "/local_run.json"));
    auto store = results::OpenResultStore(dir_->File("results.db"));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    uint64_t noise = 1843;
    for (int i = 0; i < kRuns; ++i) {
      json d = tmpl;
      char name[32], start[64];
      std::snprintf(name, sizeof name, "nightly-%02d", i);
      std::snprintf(start, sizeof start, "2026-11-%02dT02:00:00Z", i + 1);
      d["run"]["metadata"]["name"] = name;
      d["run"]["metadata"]["uid"] = std::string("uid-") + name;
      d["run"]["status"]["startTime"] = start;
      d["run"]["status"]["completionTime"] = std::string(start).replace(14, 2, "10");
      const double rps = std::round((i < kStepAt ? kBefore : kAfter) * (1 + Noise(noise)));
      const double other = std::round(20000 * (1 + Noise(noise)));
      for (auto& c : d["cells"]) c["result"]["requestsPerSecond"] = c["result"]["connections"] == 10 ? rps : other;
      auto record = report::RunRecordFromJsonText(d.dump(), name);
      ASSERT_TRUE(record.ok()) << record.status().ToString();
      auto receipt = (*store)->Store(*record);
      ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
      ids_.push_back(receipt->id);
      names_.push_back(name);
      rps_.push_back(rps);
    }
  }

  // `fairbench serve` on a free port: its first line on stdout is the URL.
  void StartServe() {
    testing::SubprocessOptions o;
    o.argv = {testing::BinaryPath("fairbench"), "serve",    "--store",
              dir_->File("results.db"),         "--listen", "127.0.0.1:0"};
    o.stdout_to = testing::Redirect::File(dir_->File("serve.out"));
    o.stderr_to = testing::Redirect::File(dir_->File("serve.err"));
    auto p = testing::Subprocess::Start(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    serve_.emplace(std::move(*p));
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::string out;
    while ((out = ReadFile(dir_->File("serve.out"))).find('\n') == std::string::npos) {
      ASSERT_FALSE(serve_->Poll().has_value()) << "fairbench serve exited: " << ReadFile(dir_->File("serve.err"));
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no URL on stdout";
      std::this_thread::sleep_for(20ms);
    }
    url_ = out.substr(0, out.find('\n'));
    ASSERT_TRUE(std::regex_match(url_, std::regex(R"(http://127\.0\.0\.1:[0-9]+/)"))) << url_;
  }

  // Clicks the element and waits for the page it leads to.
  void ClickAndWait(testing::DevToolsPipe& browser, const std::string& selector) {
    auto at = browser.Evaluate(CenterOf(selector));
    ASSERT_TRUE(at.ok()) << at.status().ToString();
    ASSERT_FALSE(at->is_null()) << "nothing matches " << selector;
    const size_t from = browser.events().size();
    ASSERT_TRUE(browser.Click((*at)["x"].get<double>(), (*at)["y"].get<double>()).ok());
    auto loaded = browser.WaitForEvent("Page.loadEventFired", from, 20s);
    ASSERT_TRUE(loaded.ok()) << "clicking " << selector << " led nowhere: " << loaded.status().ToString();
  }

  std::string chromium_;
  std::optional<testing::TempDir> dir_;
  std::optional<testing::Subprocess> serve_;
  std::string url_;
  std::vector<int64_t> ids_;
  std::vector<std::string> names_;
  std::vector<double> rps_;
};

// Catches: a series link that does not lead to its series; a chart with
// points missing or drawn outside it; the change point not marked, marked
// twice, at the wrong run, or with the wrong direction or size; a change
// marked where there is none (p99); a point that does not lead to its run;
// a run page that is not that run's report; a page with a console error, a
// blocked resource or a script exception.
TEST_F(ServeBrowserTest, OpensASeriesSeesItsChangePointAndOpensARunFromIt) {
  auto opened = testing::DevToolsPipe::Open(chromium_, dir_->File("profile"), dir_->File("chromium.log"), 1280, 900);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  testing::DevToolsPipe& browser = **opened;

  // The front page: the runs and the series.
  size_t from = browser.events().size();
  ASSERT_TRUE(browser.Load(url_).ok());
  auto front = browser.Evaluate(
      "({runs: document.querySelectorAll('table.runs tbody tr').length, "
      "series: [...document.querySelectorAll('a.series')].map(a => a.textContent)})");
  ASSERT_TRUE(front.ok()) << front.status().ToString();
  EXPECT_EQ((*front)["runs"], kRuns);
  EXPECT_EQ((*front)["series"], json({"beast/hello at 10 connections", "beast/hello at 20 connections"}));
  EXPECT_EQ(browser.Errors(from), std::vector<std::string>{}) << "on /";

  // The series, by its link.
  from = browser.events().size();
  ClickAndWait(browser, "a.series[href$='connections=10']");
  auto chart = browser.Evaluate(kSeriesChart);
  ASSERT_TRUE(chart.ok()) << chart.status().ToString();
  ASSERT_FALSE(chart->is_null()) << "no requests/s chart";
  const json& c = *chart;
  EXPECT_EQ(c["url"], "/series?target=beast&scenario=hello&connections=10");
  EXPECT_GT(c["width"].get<double>(), 600);
  EXPECT_GT(c["height"].get<double>(), 200);
  ASSERT_EQ(c["points"].size(), static_cast<size_t>(kRuns));
  for (int i = 0; i < kRuns; ++i) {
    const json& p = c["points"][i];
    EXPECT_EQ(p["run"], ids_[i]) << i;
    EXPECT_EQ(p["href"], "/runs/" + std::to_string(ids_[i])) << i;
    EXPECT_TRUE(p["inside"].get<bool>()) << i;
    EXPECT_NE(p["title"].get<std::string>().find(names_[i]), std::string::npos) << p["title"];
  }
  // Lower on the page is fewer requests/s: the step is a drop.
  EXPECT_GT(c["points"][kStepAt]["y"].get<double>(), c["points"][kStepAt - 1]["y"].get<double>() + 50);
  ASSERT_EQ(c["changes"].size(), 1u) << c["changes"].dump(1);
  const json& change = c["changes"][0];
  EXPECT_EQ(change["index"], kStepAt);
  EXPECT_EQ(change["run"], ids_[kStepAt]);
  EXPECT_EQ(change["cls"], "change regression");
  EXPECT_TRUE(change["inside"].get<bool>());
  // Drawn between the last run before the step and the first after it.
  EXPECT_GT(change["x"].get<double>(), c["points"][kStepAt - 1]["x"].get<double>());
  EXPECT_LT(change["x"].get<double>(), c["points"][kStepAt]["x"].get<double>());
  const std::string title = change["title"].get<std::string>();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(title, m, std::regex("requests/s regression (−|-)([0-9.]+) %"))) << title;
  EXPECT_NEAR(-std::stod(m[2]), (kAfter / kBefore - 1) * 100, 1.5) << title;
  EXPECT_NE(title.find(names_[kStepAt - 1]), std::string::npos) << title;
  EXPECT_NE(title.find(names_[kStepAt]), std::string::npos) << title;
  EXPECT_EQ(c["p99Changes"], 0);
  EXPECT_EQ(browser.Errors(from), std::vector<std::string>{}) << "on the series page";

  // A point after the step: its run's report.
  const int pick = kStepAt + 5;
  from = browser.events().size();
  ClickAndWait(browser, "svg#chart-rps circle.point[data-index='" + std::to_string(pick) + "']");
  auto run = browser.Evaluate(
      "({url: location.pathname, title: document.querySelector('h1') ? document.querySelector('h1').textContent : '', "
      "text: document.body.innerText, marks: [...document.querySelectorAll('svg.chart title')].map(t => "
      "t.textContent)})");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ((*run)["url"], "/runs/" + std::to_string(ids_[pick]));
  EXPECT_NE((*run)["title"].get<std::string>().find(names_[pick]), std::string::npos) << (*run)["title"];
  // Its requests/s at 10 connections as the test stored it, in the
  // report's requests/s chart.
  const std::string rps = report::FormatRate(rps_[pick]);
  bool shown = false;
  for (const json& mark : (*run)["marks"]) {
    const std::string t = mark.get<std::string>();
    shown = shown || (t.find("@ 10") != std::string::npos && t.find(": " + rps) != std::string::npos);
  }
  EXPECT_TRUE(shown) << rps << " not among " << (*run)["marks"].dump();
  EXPECT_NE((*run)["text"].get<std::string>().find(rps), std::string::npos);
  EXPECT_EQ(browser.Errors(from), std::vector<std::string>{}) << "on the run page";
}

}  // namespace
}  // namespace fairbench

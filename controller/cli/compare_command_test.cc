// `fairbench compare` as a user runs it: the real binary on files, its exit
// codes, what it writes to stdout and stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "controller/report/run_record.h"
#include "testing/support/bin_dir.h"
#include "testing/support/temp_dir.h"

namespace fairbench::controller {
namespace {

struct Outcome {
  int code = -1;
  std::string out, err;
};

class CompareCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-compare");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_->path() / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string WriteRecord(const std::string& name, const std::vector<double>& rates) {
    report::RunRecord r;
    api::Target t;
    t.name = "drogon";
    t.image = "example.org/drogon";
    r.run.spec.targets = {t};
    api::Scenario s;
    s.name = "hello";
    s.request = api::Request{};
    r.run.spec.scenarios = {s};
    r.run.spec.load.connections = {100};
    r.run.spec.repetitions = static_cast<int32_t>(rates.size());
    for (size_t i = 0; i < rates.size(); ++i) {
      report::CellRecord c;
      c.result.target = "drogon";
      c.result.scenario = "hello";
      c.result.connections = 100;
      c.result.repetition = static_cast<int32_t>(i + 1);
      c.result.state = api::CellState::kSucceeded;
      c.result.requests_per_second = rates[i];
      c.result.latency.p99 = 5000;
      r.cells.push_back(c);
      r.run.status.results.push_back(c.result);
    }
    return Write(name, report::ToJson(r).dump());
  }
  // A run as its folder, results.json inside, as `fairbench run` leaves it.
  std::string WriteRunFolder(const std::string& name, const std::vector<double>& rates) {
    std::filesystem::create_directories(dir_->path() / name);
    const std::string file = WriteRecord(name + ".json", rates);
    std::filesystem::rename(file, dir_->path() / name / "results.json");
    return (dir_->path() / name).string();
  }
  Outcome Compare(const std::vector<std::string>& args) {
    std::string cmd = testing::BinaryPath("fairbench") + " compare";
    for (const std::string& a : args) cmd += " '" + a + "'";
    const std::string out = (dir_->path() / "out").string(), err = (dir_->path() / "err").string();
    const int status = std::system((cmd + " >" + out + " 2>" + err).c_str());
    Outcome o;
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::stringstream a, b;
    a << std::ifstream(out).rdbuf();
    b << std::ifstream(err).rdbuf();
    o.out = a.str();
    o.err = b.str();
    return o;
  }
  std::optional<testing::TempDir> dir_;
};

// Catches: a CI gate that passes on a significant regression (exit 0), fails
// without one, or ignores the limit given.
TEST_F(CompareCommandTest, TheGateFailsOnASignificantRegressionOnly) {
  const std::string base = WriteRecord("base.json", {1000, 1010, 990});
  const std::string slower = WriteRecord("slower.json", {900, 905, 895});
  const std::string same = WriteRecord("same.json", {1005, 995, 1000});
  Outcome o = Compare({base, slower, "--fail-on-regression", "5%"});
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.out.find("slower — REGRESSION"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("regression: drogon/hello/c100: requests/s -10.0 %"), std::string::npos) << o.err;
  EXPECT_EQ(Compare({base, slower, "--fail-on-regression", "20%"}).code, 0);
  EXPECT_EQ(Compare({base, slower}).code, 0) << "no gate asked for";
  o = Compare({base, same, "--fail-on-regression", "1%"});
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("no significant change"), std::string::npos) << o.out;
}

// Catches: --json or --html ignored (Markdown printed), or JSON that does
// not parse.
TEST_F(CompareCommandTest, JsonAndHtml) {
  const std::string base = WriteRecord("base.json", {1000, 1010, 990});
  const std::string slower = WriteRecord("slower.json", {900, 905, 895});
  Outcome o = Compare({base, slower, "--json"});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out;
  EXPECT_EQ(j["cells"][0]["requestsPerSecond"]["verdict"], "slower");
  EXPECT_NEAR(j["cells"][0]["requestsPerSecond"]["change"].get<double>(), -0.1, 1e-9);
  o = Compare({base, slower, "--html"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("<html"), std::string::npos);
  EXPECT_NE(o.out.find("Cell by cell"), std::string::npos);
}

// Catches: bad input half-written or crashing: each is one line on stderr,
// nothing on stdout, exit code 2.
TEST_F(CompareCommandTest, BadInputIsOneLineAndExitCode2) {
  const std::string base = WriteRecord("base.json", {1000, 1010, 990});
  const std::string other = Write("other.json", R"({"hello": "world"})");
  const std::string missing = (dir_->path() / "missing.json").string();
  report::RunRecord crow;
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{base, other}, "other.json"},
           {{base, missing}, "missing.json: cannot be read"},
           {{base, base, "--fail-on-regression", "lots"}, "--fail-on-regression: expected a percentage"},
       }) {
    const Outcome o = Compare(args);
    EXPECT_EQ(o.code, 2) << needle << ": " << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out;
    EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
  // Nothing in common: another target.
  std::string text;
  {
    std::stringstream s;
    s << std::ifstream(base).rdbuf();
    text = s.str();
  }
  for (size_t at; (at = text.find("drogon")) != std::string::npos;) text.replace(at, 6, "crow");
  const Outcome o = Compare({base, Write("crow.json", text)});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("no succeeded cell in common"), std::string::npos) << o.err;
  EXPECT_TRUE(o.out.empty());
}

// Same-versus-same runs with known noise: each run's level drawn from a
// seeded normal distribution (σ 2 % of 1000 requests/s, the noise between
// runs), its three repetitions ±0.5 around it (the noise within, far
// smaller), so every gap of levels past a limit is significant by orders of
// magnitude and a pair (base i → new j) fails exactly when
// level j ÷ level i − 1 ≤ −limit. The test counts that from the levels
// alone and the binary must say the same.
// Catches: a calibration count that disagrees with the gate it calibrates
// (another limit, unordered pairs, a pair counted per cell), a report
// without the line, a loose gate that "fails" on noise, run folders not
// read as their results.json.
TEST_F(CompareCommandTest, CalibrationCountsTheGatesFailuresOnSameVersusSameRuns) {
  std::mt19937 random(44);
  std::normal_distribution<double> noise(1000, 20);
  std::vector<double> levels;
  std::vector<std::string> runs;
  for (int i = 0; i < 5; ++i) {
    levels.push_back(std::round(noise(random) * 10) / 10);
    const double l = levels.back();
    runs.push_back(WriteRunFolder("same" + std::to_string(i), {l - 0.5, l, l + 0.5}));
  }
  const std::string base = WriteRecord("base.json", {1000, 1001, 999});
  const std::string next = WriteRecord("next.json", {1000, 1001, 999});
  for (const double limit : {0.01, 0.5}) {
    int expected = 0;
    for (size_t i = 0; i < levels.size(); ++i) {
      for (size_t j = 0; j < levels.size(); ++j) expected += i != j && levels[j] / levels[i] - 1 <= -limit;
    }
    if (limit == 0.01) {
      ASSERT_GT(expected, 0) << "the seed gives no failing pair: the test would prove nothing";
    }
    std::vector<std::string> args = {base, next, "--fail-on-regression", std::to_string(limit * 100) + "%",
                                     "--calibrate-with"};
    args.insert(args.end(), runs.begin(), runs.end());
    Outcome o = Compare(args);
    ASSERT_EQ(o.code, 0) << o.err;
    char share[16];
    std::snprintf(share, sizeof share, "%.1f", 100.0 * expected / 20);
    const std::string line =
        "failed " + std::to_string(expected) + " of 20 same-versus-same comparisons (" + share + " %, 95 % interval ";
    EXPECT_NE(o.out.find("The requests/s gate at " + std::string(limit == 0.01 ? "1.0" : "50.0") + " % " + line),
              std::string::npos)
        << o.out;
    args.push_back("--json");
    o = Compare(args);
    ASSERT_EQ(o.code, 0) << o.err;
    const auto j = nlohmann::json::parse(o.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << o.out;
    const auto& rate = j["gate"]["falsePositiveRate"]["requestsPerSecond"];
    EXPECT_EQ(rate["failed"], expected) << limit;
    EXPECT_EQ(rate["pairs"], 20);
    EXPECT_EQ(j["gate"]["falsePositiveRate"]["failures"].size(), static_cast<size_t>(expected));
  }
  // Without same-versus-same runs the report says the rate is unknown.
  const Outcome o = Compare({base, next, "--fail-on-regression", "1%"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("False-positive rate not measured"), std::string::npos) << o.out;
}

// Catches: --repeat-split ignored, or its halves paired across the two
// runs: BASE's repetitions drift by −5 % from its first half to its
// second, so of the 4 same-versus-same pairs (each run's halves, both ways)
// exactly one fails a 2 % gate.
TEST_F(CompareCommandTest, RepeatSplitCalibratesFromTheRunsThemselves) {
  const std::string base = WriteRecord("base.json", {1000, 1001, 999, 950, 951, 949});
  const std::string next = WriteRecord("next.json", {1000, 1001, 999, 1000, 1001, 999});
  const Outcome o = Compare({base, next, "--fail-on-regression", "2%", "--repeat-split"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("The requests/s gate at 2.0 % failed 1 of 4 same-versus-same comparisons (25.0 %"),
            std::string::npos)
      << o.out;
}

// Catches: calibration input that cannot measure the gate accepted (a rate
// from one run, from other cells, or of no gate), or its error not naming
// the run: one line on stderr, exit code 2, nothing on stdout.
TEST_F(CompareCommandTest, CalibrationBadInputIsNamed) {
  const std::string base = WriteRecord("base.json", {1000, 1010, 990});
  const std::string same = WriteRecord("same.json", {1000, 1010, 990});
  std::string crow_text;
  {
    std::stringstream s;
    s << std::ifstream(same).rdbuf();
    crow_text = s.str();
  }
  for (size_t at; (at = crow_text.find("drogon")) != std::string::npos;) crow_text.replace(at, 6, "crow");
  const std::string crow = Write("crow.json", crow_text);
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{base, base, "--fail-on-regression", "5%", "--calibrate-with", same},
            "only one same-versus-same run (" + same + ")"},
           {{base, base, "--fail-on-regression", "5%", "--calibrate-with", same, crow},
            crow + ": no succeeded cell drogon/hello/c100"},
           {{base, base, "--calibrate-with", same, same}, "give --fail-on-regression or --fail-on-p99-regression"},
           {{base, base, "--fail-on-regression", "5%", "--repeat-split"},
            "--repeat-split: " + base + ": cell drogon/hello/c100 has 3 succeeded repetitions"},
       }) {
    const Outcome o = Compare(args);
    EXPECT_EQ(o.code, 2) << needle << ": " << o.err;
    EXPECT_TRUE(o.out.empty()) << o.out;
    EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
}

}  // namespace
}  // namespace fairbench::controller

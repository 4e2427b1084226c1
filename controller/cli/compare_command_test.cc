// `fairbench compare` as a user runs it: the real binary on files, its exit
// codes, what it writes to stdout and stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/report/run_record.h"
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

}  // namespace
}  // namespace fairbench::controller

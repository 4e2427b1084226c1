// spec.calibration on a real `fairbench run`: before its one target, the
// run stops the delay server for a known time (SIGSTOP, then SIGCONT) in
// the middle of an open-model and a closed-loop cell, and keeps the
// verdict in results.json and the report. Loopback; about 12 s of load.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "testing/support/bin_dir.h"
#include "tests/e2e/fairbench_run.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using e2e::ReadFile;
using nlohmann::json;

// Catches: spec.calibration ignored, its verdict left out of results.json
// or the report, the stall it asked for not the one injected (the
// recorded stall is what SIGSTOP to SIGCONT took, ≥ 300 ms), the judge's
// checks not those of `fairbench selftest` (open max, the open model's
// percentile at rank N − R·S/2, the closed loop's max, its requests above
// S/2 and its p99), or the calibration's cells mixed into the run's own.
TEST(CalibrationE2eTest, ARunTestsItsHarnessFirstAndSaysSo) {
  auto dir = testing::TempDir::Create("fairbench-calibration-e2e");
  ASSERT_TRUE(dir.ok());
  const std::filesystem::path d = dir->path();
  const std::string run =
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: calibrated}\nspec:\n"
      "  calibration: {stall: 300ms, rate: 1000, duration: 2s}\n"
      "  targets:\n  - name: beast\n    local:\n      command: [" +
      testing::BinaryPath("fairbench-target-beast") +
      ", --port, \"{port}\", --threads, \"1\"]\n"
      "  scenarios:\n  - name: hello\n    request: {path: /}\n    expect: {status: 200}\n"
      "  load: {threads: 1, connections: [8], warmup: 300ms, duration: 1s, timeout: 1s}\n  cooldown: 0s\n";
  const std::optional<int> exit_code = e2e::RunFairbench(d, run, std::chrono::seconds(120));
  ASSERT_TRUE(exit_code.has_value());
  ASSERT_EQ(*exit_code, 0) << ReadFile(d / "stderr.txt");
  const json record = json::parse(ReadFile(d / "out" / "results.json"));
  const std::string report = ReadFile(d / "out" / "report.md");

  ASSERT_TRUE(record.contains("calibration")) << record.dump().substr(0, 2000);
  const json& c = record["calibration"];
  EXPECT_FALSE(c.contains("error")) << c.dump();
  EXPECT_GE(c["stallMs"].get<double>(), 300.0) << c.dump();
  EXPECT_LT(c["stallMs"].get<double>(), 400.0) << c.dump();
  EXPECT_EQ(c["rate"], 1000.0);
  EXPECT_EQ(c["delayMs"], 1.0);
  std::vector<std::string> checks;
  bool all_passed = true;
  for (const json& k : c["checks"]) {
    checks.push_back(k["cell"].get<std::string>() + " " + k["name"].get<std::string>());
    all_passed = all_passed && k["passed"].get<bool>();
  }
  ASSERT_EQ(checks.size(), 5u) << c.dump();
  EXPECT_EQ(checks[0], "open max");
  EXPECT_EQ(checks[1].rfind("open p", 0), 0u) << checks[1];
  EXPECT_EQ(checks[2], "closed max");
  EXPECT_EQ(checks[3], "closed requests >= S/2");
  EXPECT_EQ(checks[4], "closed p99");
  EXPECT_EQ(c["passed"].get<bool>(), all_passed) << c.dump();
  EXPECT_TRUE(c["passed"].get<bool>()) << "the harness failed its own calibration here: " << c.dump();
  EXPECT_FALSE(c["uncorrectedWouldPass"].get<bool>()) << c.dump();
  // The run's own cells: its one target only.
  ASSERT_EQ(record["cells"].size(), 1u);
  EXPECT_EQ(record["cells"][0]["result"]["target"], "beast");
  EXPECT_TRUE(std::filesystem::exists(d / "out" / "calibration" / "selftest-open"));
  EXPECT_NE(report.find("## Calibration: the harness on this machine"), std::string::npos) << report;
  EXPECT_NE(report.find("The harness passed on "), std::string::npos) << report;
  EXPECT_NE(report.find("| open | max | "), std::string::npos) << report;
}

}  // namespace
}  // namespace fairbench

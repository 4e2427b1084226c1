// "Why not double?" on real `fairbench run`s (loopback, under 2 s of load
// each), against limits the test sets and the kernel enforces:
//   - the reference Beast server in a cgroup with a CPU quota of 200m: the
//     kernel's CFS caps it at 0.2 cores, its cgroup's CPU accounting is
//     what the cell reports, and the verdict must be TargetCpu;
//   - the delay server answering after a fixed 10 ms to 4 connections in a
//     closed loop: by Little's law they carry 4 ÷ 10 ms = 400 requests/s
//     and no more, with CPU to spare, so the verdict must be Connections.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"
#include "tests/e2e/fairbench_run.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using e2e::ReadFile;
using nlohmann::json;

// Runs `targets` (YAML list items) with one scenario and `load`; the
// record of the run, or an empty object after a failure reported here.
json RunFairbench(const std::filesystem::path& d, const std::string& targets, const std::string& load,
                  std::string* report = nullptr) {
  const std::string run =
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: limiter}\nspec:\n"
      "  targets:\n" +
      targets +
      "  scenarios:\n  - name: hello\n    request: {path: /}\n    expect: {status: 200}\n"
      "  load: " +
      load + "\n  cooldown: 0s\n";
  const std::optional<int> exit_code = e2e::RunFairbench(d, run);
  if (!exit_code.has_value()) return json::object();
  EXPECT_EQ(*exit_code, 0) << ReadFile(d / "stderr.txt");
  if (report != nullptr) *report = ReadFile(d / "out" / "report.md");
  return json::parse(ReadFile(d / "out" / "results.json"));
}

// Catches: a target pinned at its quota not judged TargetCpu — its ceiling
// taken from its CPU count (1) rather than its quota (0.2), its CPU read
// from anywhere but its cgroup (the kernel's cap would not hold), the
// verdict missing from results.json or from the report's column and its "Why not double?".
TEST(LimiterE2eTest, TargetAtItsCpuQuotaIsTargetCpu) {
  auto dir = testing::TempDir::Create("fairbench-limiter-e2e");
  ASSERT_TRUE(dir.ok());
  std::string report;
  const json record =
      RunFairbench(dir->path(),
                   "  - name: beast\n    resources: {cpu: 200m}\n    local:\n      command: [" +
                       testing::BinaryPath("fairbench-target-beast") + ", --port, \"{port}\", --threads, \"1\"]\n",
                   "{threads: 1, connections: [16], warmup: 300ms, duration: 1500ms, timeout: 1s}", &report);
  ASSERT_EQ(record["cells"].size(), 1u) << record.dump().substr(0, 2000);
  const json& cpus = record["run"]["status"]["cpus"];
  ASSERT_EQ(cpus.size(), 1u);
  if (!cpus[0].contains("cpuQuota")) {
    GTEST_SKIP() << "no writable cgroup: the quota was not enforced (" << cpus[0].dump() << ")";
  }
  EXPECT_EQ(cpus[0]["cpuQuota"], "200m");
  const json& result = record["cells"][0]["result"];
  ASSERT_EQ(result["state"], "Succeeded") << result.dump();
  // The kernel's CFS lets it run 20 ms in each 100 ms period.
  const double cores = result["targetCpu"].get<double>();
  EXPECT_GE(cores, 0.18) << result.dump();
  EXPECT_LE(cores, 0.22) << result.dump();
  ASSERT_TRUE(result.contains("limiter")) << result.dump();
  EXPECT_EQ(result["limiter"]["kind"], "TargetCpu") << result["limiter"].dump();
  EXPECT_NE(result["limiter"]["evidence"].get<std::string>().find("of its CPU quota of 200m"), std::string::npos)
      << result["limiter"].dump();
  EXPECT_NE(report.find("| max | limited by |"), std::string::npos) << report;
  EXPECT_NE(report.find("## Why not double?"), std::string::npos);
  EXPECT_NE(report.find("| beast | hello | 16 | TargetCpu | target CPU "), std::string::npos) << report;
}

// Catches: a closed loop whose connections set the rate not judged
// Connections — Little's law computed from the wrong figures, in-flight
// taken as anything but the connections, headroom on the target's or the
// agents' CPU not proven from their CPU lists.
TEST(LimiterE2eTest, FewConnectionsToAFixedDelayAreConnections) {
  auto dir = testing::TempDir::Create("fairbench-limiter-e2e");
  ASSERT_TRUE(dir.ok());
  constexpr int kConnections = 4;
  constexpr double kDelaySeconds = 0.010;
  const json record =
      RunFairbench(dir->path(),
                   "  - name: delay\n    local:\n      command: [" +
                       testing::BinaryPath("fairbench-test-delay-server") + ", --port, \"{port}\", --delay, 10ms]\n",
                   "{threads: 1, connections: [4], warmup: 300ms, duration: 1500ms, timeout: 1s}");
  ASSERT_EQ(record["cells"].size(), 1u) << record.dump().substr(0, 2000);
  const json& result = record["cells"][0]["result"];
  ASSERT_EQ(result["state"], "Succeeded") << result.dump();
  // Little's law: each connection completes one request per delay (plus
  // the loopback's few tens of µs).
  const double expected = kConnections / kDelaySeconds;
  EXPECT_LE(result["requestsPerSecond"].get<double>(), expected * 1.001) << result.dump();
  EXPECT_GE(result["requestsPerSecond"].get<double>(), expected * 0.90) << result.dump();
  ASSERT_TRUE(result.contains("limiter")) << result.dump();
  EXPECT_EQ(result["limiter"]["kind"], "Connections") << result["limiter"].dump();
  EXPECT_NE(result["limiter"]["evidence"].get<std::string>().find("for 4 connections"), std::string::npos)
      << result["limiter"].dump();
}

}  // namespace
}  // namespace fairbench

// Efficiency at fixed rates (scenarios[].rates) on a real `fairbench run`
// against the delay server: it answers each request after exactly 10 ms,
// so 8 connections carry at most 8 ÷ 10 ms = 800 requests/s (Little's law),
// whatever the load generator does. The server's own records (when each
// request arrived, CLOCK_MONOTONIC) are the count each cell is checked
// against. Loopback; about 8 s of load.
#include <gtest/gtest.h>
#include <time.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "testing/delay_server/delay_records.h"
#include "tests/e2e/fairbench_run.h"
#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using e2e::ReadFile;
using nlohmann::json;

int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// Nanoseconds since the epoch of an RFC 3339 time with a fraction
// ("2026-12-06T02:40:01.123456789Z").
int64_t EpochNs(const std::string& text) {
  std::tm tm{};
  std::istringstream in(text.substr(0, 19));
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  int64_t ns = static_cast<int64_t>(timegm(&tm)) * 1'000'000'000LL;
  if (text.size() > 20 && text[19] == '.') {
    std::string digits;
    for (size_t i = 20; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) digits += text[i];
    digits.resize(9, '0');
    ns += std::stoll(digits);
  }
  return ns;
}

// Catches: a share of capacity taken of anything but the closed loop just
// measured, a rate level not offered as written, the validity gate not
// applied (a cell that got half its offer ranked) or applied to a cell
// that got its offer, the report's efficiency table or its invalid line
// missing, or an offered rate the server's own count contradicts.
TEST(RatesE2eTest, FixedRatesAgainstAServerOfKnownCapacity) {
  auto dir = testing::TempDir::Create("fairbench-rates-e2e");
  ASSERT_TRUE(dir.ok());
  const std::filesystem::path d = dir->path();
  const std::string records = (d / "records.txt").string();
  const std::string run =
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: rates}\nspec:\n"
      "  targets:\n  - name: delay\n    local:\n      command: [" +
      testing::BinaryPath("fairbench-test-delay-server") + ", --port, \"{port}\", --delay, 10ms, --records, " +
      records +
      "]\n"
      "  scenarios:\n  - name: hello\n    request: {path: /}\n    expect: {status: 200}\n"
      "    rates: [400, 1600, \"50%\"]\n"
      "  load: {threads: 1, connections: [8], warmup: 300ms, duration: 1500ms, timeout: 1s}\n  cooldown: 0s\n";
  const std::optional<int> exit_code = e2e::RunFairbench(d, run);
  ASSERT_TRUE(exit_code.has_value());
  ASSERT_EQ(*exit_code, 0) << ReadFile(d / "stderr.txt");
  const json record = json::parse(ReadFile(d / "out" / "results.json"));
  const std::string report = ReadFile(d / "out" / "report.md");
  auto server = testing::DelayRecords::FromText(ReadFile(records));
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  // The server's clock (monotonic) on the wall clock the cells' windows use.
  const int64_t wall_minus_mono = ClockNs(CLOCK_REALTIME) - ClockNs(CLOCK_MONOTONIC);
  auto served_in = [&](const json& r) {
    const int64_t from = EpochNs(r["startTime"].get<std::string>()) - wall_minus_mono;
    const int64_t to = EpochNs(r["endTime"].get<std::string>()) - wall_minus_mono;
    uint64_t n = 0;
    for (const testing::DelayRecord& rec : server->records) n += rec.arrived_ns >= from && rec.arrived_ns < to ? 1 : 0;
    return static_cast<double>(n) / (static_cast<double>(to - from) / 1e9);
  };

  ASSERT_EQ(record["cells"].size(), 4u) << record.dump().substr(0, 3000);
  const json& closed = record["cells"][0]["result"];
  const json& at400 = record["cells"][1]["result"];
  const json& at1600 = record["cells"][2]["result"];
  const json& half = record["cells"][3]["result"];
  for (const json* r : {&closed, &at400, &at1600, &half}) ASSERT_EQ((*r)["state"], "Succeeded") << r->dump();
  EXPECT_FALSE(closed.contains("rateLevel"));
  EXPECT_EQ(at400["rateLevel"], 400);
  EXPECT_EQ(at1600["rateLevel"], 1600);
  EXPECT_EQ(half["rateLevel"], "50%");
  auto flags = [&](size_t i) { return record["cells"][i].value("flags", json::array()); };
  auto flagged = [&](size_t i) {
    for (const json& f : flags(i)) {
      if (f == "RateNotAchieved") return true;
    }
    return false;
  };

  // The closed loop: Little's law with a 10 ms answer.
  const double capacity = closed["requestsPerSecond"].get<double>();
  EXPECT_LE(capacity, 800 * 1.001) << closed.dump();
  EXPECT_GE(capacity, 800 * 0.90) << closed.dump();

  // 400/s: offered as written, taken, and the server counted it.
  EXPECT_EQ(at400["offeredRate"], 400.0);
  EXPECT_NEAR(served_in(at400), 400, 400 * 0.03) << "the server's own count";
  EXPECT_NEAR(at400["requestsPerSecond"].get<double>(), 400, 400 * 0.02) << at400.dump();
  EXPECT_FALSE(flagged(1)) << flags(1).dump();

  // 1,600/s is twice what 8 connections can carry: the server answered at
  // most 800/s, the cell is invalid.
  EXPECT_EQ(at1600["offeredRate"], 1600.0);
  EXPECT_LE(served_in(at1600), 800 * 1.02) << "the server's own count";
  EXPECT_LE(at1600["requestsPerSecond"].get<double>(), 800 * 1.001);
  EXPECT_TRUE(flagged(2)) << flags(2).dump();

  // 50 % of what the closed loop answered, rounded.
  EXPECT_EQ(half["offeredRate"].get<double>(), std::round(capacity * 0.5)) << half.dump();
  EXPECT_NEAR(served_in(half), capacity * 0.5, capacity * 0.5 * 0.03) << "the server's own count";
  EXPECT_FALSE(flagged(3)) << flags(3).dump();

  // The report ranks the valid cells and names the invalid one.
  EXPECT_NE(report.find("## Efficiency at fixed rates"), std::string::npos) << report;
  EXPECT_NE(report.find("### hello at 400 requests/s, 8 connections\n"), std::string::npos) << report;
  EXPECT_NE(report.find("| 1 | delay | 400 | "), std::string::npos) << report;
  EXPECT_NE(report.find("### hello at 50 % of capacity, 8 connections\n"), std::string::npos) << report;
  EXPECT_NE(report.find("- Invalid, not ranked — delay: answered "), std::string::npos) << report;
  EXPECT_EQ(report.find("| 1 | delay | 1,600 | "), std::string::npos) << "an invalid cell ranked:\n" << report;
}

}  // namespace
}  // namespace fairbench

// `fairbench run`'s HdrHistogram interval logs (OUTPUT/hlog/*.hlog), read by
// an independent HdrHistogram implementation: hdr-histogram-js's
// HistogramLogReader (installed by scripts/setup --with-tools), over a real
// run of two agents against the delay server (2 ms per response, loopback).
// Each interval it reads must be the record's timeline point of that
// interval: the same request count, tag for the warmup, start and length,
// max and percentiles (from the buckets it decoded, at the record's rank);
// the measure intervals together must be the cell.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/histogram.h"
#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"
#include "tests/e2e/fairbench_run.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using e2e::ReadFile;
using nlohmann::json;

const std::string kModules = FAIRBENCH_SOURCE_DIR "/.tools/node_modules";

// Every interval of the log as hdr-histogram-js reads it, one JSON object a
// line: tag, start and end (seconds after the log's BaseTime), total count,
// max, and the decoded buckets as [highest equivalent value, count].
constexpr const char* kReadLog = R"(
const { HistogramLogReader } = require("hdr-histogram-js");
const fs = require("fs");
const reader = new HistogramLogReader(fs.readFileSync(process.argv[2], "utf8"), 64, false);
let h;
while ((h = reader.nextIntervalHistogram()) !== null) {
  const buckets = [];
  for (let i = 0; i < h.countsArrayLength; i++) {
    const c = h.getCountAtIndex(i);
    if (c > 0) buckets.push([h.highestEquivalentValue(h.valueFromIndex(i)), c]);
  }
  console.log(JSON.stringify({tag: h.tag, start: h.startTimeStampMsec / 1000 - reader.baseTimeSec,
                              end: h.endTimeStampMsec / 1000 - reader.baseTimeSec, count: h.totalCount,
                              max: h.maxValue, buckets: buckets}));
}
)";

std::vector<json> ReadWithHdrHistogramJs(const std::filesystem::path& log, const std::filesystem::path& dir) {
  EXPECT_TRUE(std::filesystem::exists(kModules + "/hdr-histogram-js"))
      << "hdr-histogram-js is missing: run scripts/setup --with-tools";
  std::ofstream(dir / "read.js") << kReadLog;
  testing::SubprocessOptions o;
  o.argv = {"node", (dir / "read.js").string(), log.string()};
  o.env["NODE_PATH"] = kModules;
  o.stdout_to = testing::Redirect::File((dir / "node.out").string());
  o.stderr_to = testing::Redirect::File((dir / "node.err").string());
  auto p = testing::Subprocess::Start(o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return {};
  auto status = p->Wait(30s);
  EXPECT_TRUE(status.ok() && status->success()) << ReadFile(dir / "node.err");
  std::vector<json> out;
  std::istringstream in(ReadFile(dir / "node.out"));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

// The value at rank max(1, round(p/100 × n)) of the decoded buckets (the
// rank the record's percentiles use, common/histogram.h).
uint64_t ValueAtRank(const json& buckets, uint64_t n, double p) {
  auto rank = static_cast<uint64_t>(std::llround(p / 100.0 * static_cast<double>(n)));
  if (rank < 1) rank = 1;
  uint64_t cumulative = 0;
  for (const json& b : buckets) {
    cumulative += b[1].get<uint64_t>();
    if (cumulative >= rank) return b[0].get<uint64_t>();
  }
  return 0;
}

// Catches: an hlog that HdrHistogram's own reader cannot read (a wrong
// cookie, uncompressed encoding, a malformed header or line); an interval
// histogram that is one agent's instead of the agents' merged one, or the
// cell's running total instead of the interval's (counts would differ from
// the timeline's); warmup intervals left untagged (the measure intervals
// would not add up to the cell); start/length off the timeline's; values in
// another unit than the record's microseconds (max and percentiles would
// be 1000× off).
TEST(HlogE2eTest, HdrHistogramJsReadsEachCellsIntervals) {
  auto dir = testing::TempDir::Create("fairbench-hlog-e2e");
  ASSERT_TRUE(dir.ok());
  const std::filesystem::path d = dir->path();
  const std::string run =
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: hlog}\nspec:\n  targets:\n"
      "  - name: delay\n    local:\n      command: [" +
      testing::BinaryPath("fairbench-test-delay-server") +
      ", --port, \"{port}\", --delay, 2ms]\n"
      "  scenarios:\n  - name: hello\n    request: {path: /}\n    expect: {status: 200, body: \"Hello, World!\"}\n"
      "  load: {threads: 1, connections: [4], warmup: 500ms, duration: 2s, timeout: 1s, agents: 2}\n"
      "  cooldown: 0s\n";
  const std::optional<int> exit_code = e2e::RunFairbench(d, run);
  ASSERT_TRUE(exit_code.has_value());
  ASSERT_EQ(*exit_code, 0) << ReadFile(d / "stderr.txt");

  const json record = json::parse(ReadFile(d / "out" / "results.json"));
  ASSERT_EQ(record["cells"].size(), 1u);
  const json& cell = record["cells"][0];
  const json& timeline = cell["timeline"];
  ASSERT_GE(timeline.size(), 3u);  // a warmup interval and two measured seconds

  const auto intervals = ReadWithHdrHistogramJs(d / "out" / "hlog" / "delay_hello_c4_r1.hlog", d);
  ASSERT_EQ(intervals.size(), timeline.size());
  uint64_t measured = 0, measure_intervals = 0;
  for (size_t i = 0; i < intervals.size(); ++i) {
    const json& theirs = intervals[i];
    const json& point = timeline[i];
    SCOPED_TRACE("interval " + std::to_string(i + 1) + ": " + theirs.dump().substr(0, 200));
    const bool warmup = point["phase"] == "warmup";
    EXPECT_EQ(theirs["tag"].get<std::string>(), warmup ? "warmup" : "NO TAG");
    const uint64_t n = theirs["count"].get<uint64_t>();
    EXPECT_EQ(n, point["requests"].get<uint64_t>());
    EXPECT_NEAR(theirs["start"].get<double>(), point["start"].get<double>(), 0.002);
    EXPECT_NEAR(theirs["end"].get<double>(), point["end"].get<double>(), 0.002);
    if (!warmup) {
      measured += n;
      ++measure_intervals;
    }
    if (n == 0) continue;
    // Microseconds: every response took the server's 2 ms at least.
    EXPECT_GE(theirs["buckets"][0][0].get<uint64_t>(), 2000u);
    const json& lat = point["latencyUs"];
    // The reader reports a bucket's highest equivalent value; the record the
    // exact max, and percentiles capped at it: equal up to the bucket.
    EXPECT_EQ(theirs["max"].get<int64_t>(), Histogram::HighestEquivalentValue(lat["max"].get<int64_t>()));
    for (const auto& [name, pct] : {std::pair<const char*, double>{"p50", 50}, {"p90", 90}, {"p99", 99}}) {
      EXPECT_EQ(ValueAtRank(theirs["buckets"], n, pct), Histogram::HighestEquivalentValue(lat[name].get<int64_t>()))
          << name;
    }
  }
  EXPECT_GE(measure_intervals, 2u);
  // The measure phase's intervals are the cell.
  EXPECT_EQ(measured, cell["result"]["requests"].get<uint64_t>());
  EXPECT_GT(measured, 100u);
}

}  // namespace
}  // namespace fairbench

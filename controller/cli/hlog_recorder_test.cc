#include "controller/cli/hlog_recorder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/hlog.h"
#include "testing/support/temp_dir.h"

namespace fairbench::controller {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

api::CurrentCell Cell(int repetition = 1, std::optional<api::Stage> stage = std::nullopt) {
  return api::CurrentCell{"beast", "hello", 8, repetition, stage, std::nullopt};
}

// An interval of `n` requests of `latency_us` each, from start_ms to end_ms.
Snapshot Interval(uint64_t seq, Phase phase, int64_t start_ms, int64_t end_ms, int n, int64_t latency_us) {
  Snapshot s;
  s.sequence = seq;
  s.phase = phase;
  s.start_ns = start_ms * 1'000'000;
  s.end_ns = end_ms * 1'000'000;
  s.stats.counters.requests = static_cast<uint64_t>(n);
  for (int i = 0; i < n; ++i) s.stats.latency.Record(latency_us);
  return s;
}

class HlogRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-hlog-recorder");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  std::filesystem::path Hlog() const { return dir_->path() / "hlog"; }
  // The load started at 1,000,000 s after the epoch.
  static api::Time At(int64_t ms) { return api::Time(std::chrono::milliseconds(1'000'000'000 + ms)); }

  std::optional<testing::TempDir> dir_;
  api::BenchmarkRun run_;
};

// Catches: warmup intervals written untagged (HdrHistogram's tools would
// fold them into the measure phase), a BaseTime that is not the load's
// start (the interval end minus its offset), intervals written only at the
// cell's end (a crash would lose them all), or a file named otherwise than
// the cell's cells/ file.
TEST_F(HlogRecorderTest, WritesEachIntervalAsItArrives) {
  HlogRecorder r(Hlog(), "Logged with fairbench test");
  r.OnStage(run_, Cell(1, api::Stage::kWarmingUp));
  r.OnInterval("e2e", Cell(), Interval(1, Phase::kWarmup, 0, 300, 30, 50), At(300));
  r.OnInterval("e2e", Cell(), Interval(2, Phase::kMeasure, 300, 1300, 100, 2000), At(1300));
  const auto path = Hlog() / "beast_hello_c8_r1.hlog";
  // Before the cell is done, both intervals are in the file.
  auto log = ParseHlog(ReadFile(path));
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->intervals.size(), 2u);
  r.OnInterval("e2e", Cell(), Interval(3, Phase::kMeasure, 1300, 2300, 7, 90'000), At(2300));
  r.OnCellDone(report::RunRecord{}, report::CellRecord{});

  const std::string text = ReadFile(path);
  EXPECT_NE(text.find("#[Logged with fairbench test, run e2e, cell beast/hello/c8/r1: latency in microseconds"),
            std::string::npos)
      << text;
  log = ParseHlog(text);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->base_time_s, 1'000'000.0);
  EXPECT_EQ(log->max_value_divisor, 1000.0);
  ASSERT_EQ(log->intervals.size(), 3u);
  EXPECT_EQ(log->intervals[0].tag, "warmup");
  EXPECT_EQ(log->intervals[0].start_s, 0.0);
  EXPECT_EQ(log->intervals[0].length_s, 0.3);
  EXPECT_EQ(log->intervals[0].histogram.count(), 30u);
  EXPECT_EQ(log->intervals[1].tag, "");
  EXPECT_EQ(log->intervals[1].start_s, 0.3);
  EXPECT_EQ(log->intervals[1].length_s, 1.0);
  EXPECT_EQ(log->intervals[1].max, 2.0);  // 2000 µs in ms
  EXPECT_EQ(log->intervals[1].histogram.count(), 100u);
  EXPECT_EQ(log->intervals[2].max, 90.0);
  EXPECT_EQ(log->intervals[2].histogram.count(), 7u);
}

// Catches: a capacity search's trials (one warm-up per trial) written over
// each other, or appended into one file as if they were one measurement;
// and the next cell's intervals appended to the previous cell's file.
TEST_F(HlogRecorderTest, OneFilePerMeasurementAndCell) {
  HlogRecorder r(Hlog(), "c");
  for (int trial = 1; trial <= 3; ++trial) {
    r.OnStage(run_, Cell(1, api::Stage::kWarmingUp));
    r.OnInterval("e2e", Cell(), Interval(1, Phase::kMeasure, 0, 1000, trial, 100), At(1000));
  }
  r.OnCellDone(report::RunRecord{}, report::CellRecord{});
  r.OnStage(run_, Cell(2, api::Stage::kWarmingUp));
  r.OnInterval("e2e", Cell(2), Interval(1, Phase::kMeasure, 0, 1000, 9, 100), At(1000));
  const std::pair<const char*, uint64_t> expected[] = {{"beast_hello_c8_r1.hlog", 1},
                                                       {"beast_hello_c8_r1-2.hlog", 2},
                                                       {"beast_hello_c8_r1-3.hlog", 3},
                                                       {"beast_hello_c8_r2.hlog", 9}};
  for (const auto& [name, count] : expected) {
    auto log = ParseHlog(ReadFile(Hlog() / name));
    ASSERT_TRUE(log.ok()) << name << ": " << log.status().ToString();
    ASSERT_EQ(log->intervals.size(), 1u) << name;
    EXPECT_EQ(log->intervals[0].histogram.count(), count) << name;
  }
}

// Catches: a folder that cannot be written stopping the run (or crashing
// it) instead of being given up.
TEST_F(HlogRecorderTest, UnwritableFolderIsGivenUp) {
  std::ofstream(dir_->path() / "file") << "x";
  HlogRecorder r(dir_->path() / "file" / "hlog", "c");
  r.OnStage(run_, Cell(1, api::Stage::kWarmingUp));
  r.OnInterval("e2e", Cell(), Interval(1, Phase::kMeasure, 0, 1000, 1, 100), At(1000));
  r.OnInterval("e2e", Cell(), Interval(2, Phase::kMeasure, 1000, 2000, 1, 100), At(2000));
  r.OnCellDone(report::RunRecord{}, report::CellRecord{});
  EXPECT_FALSE(std::filesystem::exists(dir_->path() / "file" / "hlog"));
}

}  // namespace
}  // namespace fairbench::controller

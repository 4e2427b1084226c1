#include "controller/metrics/run_metrics.h"

#include <gtest/gtest.h>

#include <map>

#include "controller/metrics/exposition.h"

namespace fairbench::metrics {
namespace {

using namespace std::chrono_literals;

class MemorySink final : public SampleSink {
 public:
  bool Enqueue(std::vector<RemoteSample> batch) override {
    batches.push_back(std::move(batch));
    return true;
  }
  // Samples of one series (name + extra labels), in arrival order.
  std::vector<std::pair<int64_t, double>> Series(const std::string& name, const std::string& target,
                                                 std::map<std::string, std::string> extra = {}) const {
    std::vector<std::pair<int64_t, double>> out;
    for (const auto& b : batches) {
      for (const RemoteSample& s : b) {
        std::map<std::string, std::string> l(s.labels.begin(), s.labels.end());
        if (l["__name__"] != name || l["target"] != target) continue;
        bool match = true;
        for (const auto& [k, v] : extra) match = match && l[k] == v;
        if (match) out.emplace_back(s.timestamp_ms, s.value);
      }
    }
    return out;
  }
  std::vector<std::vector<RemoteSample>> batches;
};

api::BenchmarkRun MakeRun(const std::string& name) {
  api::BenchmarkRun r;
  r.metadata.name = name;
  return r;
}

api::CurrentCell Cell(const std::string& target, std::optional<api::Stage> stage = std::nullopt,
                      int32_t repetition = 1) {
  return api::CurrentCell{target, "hello", 8, repetition, stage, std::nullopt};
}

// One interval with `requests` responses of `latency_us` each.
Snapshot Interval(uint64_t seq, Phase phase, int64_t start_ms, int64_t end_ms, uint64_t requests, int64_t latency_us) {
  Snapshot s;
  s.sequence = seq;
  s.phase = phase;
  s.start_ns = start_ms * 1'000'000;
  s.end_ns = end_ms * 1'000'000;
  s.stats.counters.requests = requests;
  s.stats.counters.bytes_read = requests * 100;
  s.stats.counters.status_classes[2] = requests;
  s.stats.counters.errors.timeout = 1;
  for (uint64_t i = 0; i < requests; ++i) s.stats.latency.Record(latency_us);
  s.connections_open = 8;
  s.cpu_seconds = 0.25;
  return s;
}

api::Time At(int64_t ms) { return api::Time(std::chrono::milliseconds(ms)); }

class RunMetricsTest : public ::testing::Test {
 protected:
  RunMetricsTest() {
    options_.remote = &sink_;
    options_.retention = 10min;
    options_.now = [this] { return now_; };
    options_.wall_now = [this] { return wall_; };
    metrics_ = std::make_unique<RunMetrics>(registry_, options_);
  }
  double Value(const std::string& text, const std::string& line_prefix) {
    const size_t at = ("\n" + text).find("\n" + line_prefix + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + line_prefix.size() + 1));
  }
  std::string Scrape() { return RenderText(registry_.Collect()); }

  MetricRegistry registry_;
  MemorySink sink_;
  RunMetricsOptions options_;
  std::chrono::steady_clock::time_point now_{};
  api::Time wall_{};
  std::unique_ptr<RunMetrics> metrics_;
};

const std::string kCell = R"({run="r1",target="beast",scenario="hello",connections="8"})";

TEST_F(RunMetricsTest, CountersCountTheMeasurementAndStartAtZeroAtWarmup) {
  metrics_->RunQueued("r1");
  metrics_->OnStage(MakeRun("r1"), Cell("beast", api::Stage::kWarmingUp));
  std::string text = Scrape();
  EXPECT_EQ(Value(text, "fairbench_requests_total" + kCell), 0) << text;
  EXPECT_EQ(Value(text, R"(fairbench_runs{phase="Running"})"), 1);
  EXPECT_EQ(Value(text, R"(fairbench_load_slot_holder{run="r1",target="beast"})"), 1);

  const int64_t t0 = 1'700'000'000'000;  // the job's wall-clock start, ms
  metrics_->OnInterval("r1", Cell("beast"), Interval(1, Phase::kWarmup, 0, 300, 30, 50), At(t0 + 300));
  metrics_->OnInterval("r1", Cell("beast"), Interval(2, Phase::kMeasure, 300, 1300, 100, 90), At(t0 + 1300));
  metrics_->OnInterval("r1", Cell("beast"), Interval(3, Phase::kMeasure, 1300, 2300, 200, 3000), At(t0 + 2300));
  text = Scrape();
  EXPECT_EQ(Value(text, "fairbench_requests_total" + kCell), 300) << text;
  EXPECT_EQ(Value(text, "fairbench_read_bytes_total" + kCell), 30000);
  EXPECT_EQ(
      Value(text, R"(fairbench_errors_total{run="r1",target="beast",scenario="hello",connections="8",kind="timeout"})"),
      2);
  EXPECT_EQ(
      Value(
          text,
          R"(fairbench_responses_total{run="r1",target="beast",scenario="hello",connections="8",status_class="2xx"})"),
      300);
  EXPECT_EQ(Value(text, "fairbench_agent_cpu_seconds_total" + kCell), 0.5);
  EXPECT_EQ(Value(text, "fairbench_request_duration_seconds_count" + kCell), 300);
  EXPECT_NEAR(Value(text, "fairbench_request_duration_seconds_sum" + kCell), 100 * 90e-6 + 200 * 3000e-6, 1e-9);
  EXPECT_EQ(
      Value(
          text,
          R"(fairbench_request_duration_seconds_bucket{run="r1",target="beast",scenario="hello",connections="8",le="0.0001"})"),
      100);
  EXPECT_EQ(
      Value(
          text,
          R"(fairbench_request_duration_seconds_bucket{run="r1",target="beast",scenario="hello",connections="8",le="0.005"})"),
      300);
  EXPECT_EQ(
      Value(
          text,
          R"(fairbench_request_duration_seconds_bucket{run="r1",target="beast",scenario="hello",connections="8",le="+Inf"})"),
      300);
  // Gauges follow the newest interval.
  EXPECT_EQ(Value(text, "fairbench_requests_per_second" + kCell), 200);
  EXPECT_EQ(
      Value(
          text,
          R"(fairbench_request_duration_percentile_seconds{run="r1",target="beast",scenario="hello",connections="8",percentile="99"})"),
      0.003);

  // Remote write: counters one interval apart from the measurement's start
  // (0) to its end; gauges at every interval's end.
  const auto requests = sink_.Series("fairbench_requests_total", "beast");
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0], std::make_pair(t0 + 300, 0.0));
  EXPECT_EQ(requests[1], std::make_pair(t0 + 1300, 100.0));
  EXPECT_EQ(requests[2], std::make_pair(t0 + 2300, 300.0));
  const auto rps = sink_.Series("fairbench_requests_per_second", "beast");
  ASSERT_EQ(rps.size(), 3u);
  EXPECT_EQ(rps[0], std::make_pair(t0 + 300, 100.0));
  EXPECT_EQ(rps[2], std::make_pair(t0 + 2300, 200.0));
  EXPECT_EQ(sink_.Series("fairbench_request_duration_seconds_bucket", "beast", {{"le", "+Inf"}}).back().second, 300);
}

// Catches: gRPC calls by status not exposed, a code under another's name,
// the warmup's calls counted, or HTTP cells given a gRPC series.
TEST_F(RunMetricsTest, GrpcCallsByStatusCountTheMeasurement) {
  metrics_->RunQueued("r1");
  metrics_->OnStage(MakeRun("r1"), Cell("beast", api::Stage::kWarmingUp));
  Snapshot warm = Interval(1, Phase::kWarmup, 0, 300, 30, 50);
  warm.stats.counters.grpc.status[0] = 30;
  Snapshot measure = Interval(2, Phase::kMeasure, 300, 1300, 100, 90);
  measure.stats.counters.grpc.status[0] = 96;
  measure.stats.counters.grpc.status[14] = 4;
  measure.stats.counters.grpc.no_status = 2;
  measure.stats.counters.grpc.too_large = 1;
  metrics_->OnInterval("r1", Cell("beast"), warm, At(300));
  metrics_->OnInterval("r1", Cell("beast"), measure, At(1300));
  const std::string text = Scrape();
  const std::string cell =
      R"(fairbench_grpc_calls_total{run="r1",target="beast",scenario="hello",connections="8",code=")";
  EXPECT_EQ(Value(text, cell + "OK\"}"), 96) << text;
  EXPECT_EQ(Value(text, cell + "UNAVAILABLE\"}"), 4);
  EXPECT_EQ(Value(text, cell + "DEADLINE_EXCEEDED\"}"), 0);
  EXPECT_EQ(Value(text, cell + "protocol_error\"}"), 3);
  EXPECT_EQ(sink_.Series("fairbench_grpc_calls_total", "beast", {{"code", "UNAVAILABLE"}}).back().second, 4);
  metrics_->OnInterval("r1", Cell("nginx"), Interval(1, Phase::kMeasure, 0, 1000, 10, 50), At(1000));
  EXPECT_EQ(Scrape().find(R"(fairbench_grpc_calls_total{run="r1",target="nginx")"), std::string::npos);
}

TEST_F(RunMetricsTest, RepetitionsAddUpAndEachStartsWithASample) {
  metrics_->OnInterval("r1", Cell("beast", std::nullopt, 1), Interval(1, Phase::kMeasure, 0, 1000, 10, 50), At(1000));
  metrics_->OnInterval("r1", Cell("beast", std::nullopt, 2), Interval(1, Phase::kMeasure, 0, 1000, 5, 50), At(9000));
  const auto requests = sink_.Series("fairbench_requests_total", "beast");
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0], std::make_pair(int64_t{0}, 0.0));
  EXPECT_EQ(requests[1], std::make_pair(int64_t{1000}, 10.0));
  EXPECT_EQ(requests[2], std::make_pair(int64_t{8000}, 10.0));
  EXPECT_EQ(requests[3], std::make_pair(int64_t{9000}, 15.0));
}

// Catches: the cells of scenarios[].rates at one connection count (one per
// level) added up in one series, or a closed-loop cell given a rate label
// (its series would change name for every dashboard): each level is a
// series of its own, scraped and remote-written, and a cell of no level
// has none.
TEST_F(RunMetricsTest, EachRateLevelIsASeriesOfItsOwn) {
  api::CurrentCell low = Cell("beast");
  low.rate_level = api::RateLevel{2000, 0};
  api::CurrentCell half = Cell("beast");
  half.rate_level = api::RateLevel{0, 50};
  metrics_->OnInterval("r1", low, Interval(1, Phase::kMeasure, 0, 1000, 10, 50), At(1000));
  metrics_->OnInterval("r1", half, Interval(1, Phase::kMeasure, 0, 1000, 7, 50), At(2000));
  metrics_->OnInterval("r1", Cell("beast"), Interval(1, Phase::kMeasure, 0, 1000, 3, 50), At(3000));
  const std::string text = Scrape();
  const std::string cell = R"(run="r1",target="beast",scenario="hello",connections="8")";
  EXPECT_EQ(Value(text, "fairbench_requests_total{" + cell + R"(,rate="2000/s"})"), 10) << text;
  EXPECT_EQ(Value(text, "fairbench_requests_total{" + cell + R"(,rate="50%"})"), 7) << text;
  EXPECT_EQ(Value(text, "fairbench_requests_total{" + cell + "}"), 3) << text;
  const auto at = [&](const std::string& rate) {
    return sink_.Series("fairbench_requests_total", "beast", {{"rate", rate}}).back().second;
  };
  EXPECT_EQ(at("2000/s"), 10);
  EXPECT_EQ(at("50%"), 7);
  EXPECT_EQ(at(""), 3);
  for (const auto& batch : sink_.batches) {
    for (const RemoteSample& s : batch) {
      for (const auto& [name, value] : s.labels) EXPECT_FALSE(name == "rate" && value.empty()) << "sent empty";
    }
  }
}

TEST_F(RunMetricsTest, TargetUsageAndPeakDuringMeasurement) {
  controller::TargetUsage u{50 << 20, 1.5};
  metrics_->OnTargetUsage("r1", Cell("beast", api::Stage::kSamplingIdle), u);
  u.memory_bytes = 80 << 20;
  metrics_->OnTargetUsage("r1", Cell("beast", api::Stage::kMeasuring), u);
  u.memory_bytes = 70 << 20;
  u.cpu_seconds = 2.5;
  metrics_->OnTargetUsage("r1", Cell("beast", api::Stage::kMeasuring), u);
  const std::string text = Scrape();
  EXPECT_EQ(Value(text, R"(fairbench_target_memory_bytes{run="r1",target="beast"})"), 70 << 20);
  EXPECT_EQ(Value(text, R"(fairbench_target_cpu_seconds_total{run="r1",target="beast"})"), 2.5);
  EXPECT_EQ(Value(text, "fairbench_target_memory_peak_bytes" + kCell), 80 << 20);
  // Remote write: at most one sample a second per target.
  EXPECT_EQ(sink_.Series("fairbench_target_memory_bytes", "beast").size(), 1u);
  wall_ += 1s;
  metrics_->OnTargetUsage("r1", Cell("beast", api::Stage::kMeasuring), u);
  EXPECT_EQ(sink_.Series("fairbench_target_memory_bytes", "beast").size(), 2u);
}

TEST_F(RunMetricsTest, FinishedRunsSeriesStayForTheRetentionThenGo) {
  metrics_->RunQueued("r1");
  metrics_->RunQueued("r2");
  std::string text = Scrape();
  EXPECT_EQ(Value(text, "fairbench_queue_length"), 2);
  EXPECT_EQ(Value(text, R"(fairbench_runs{phase="Queued"})"), 2);
  metrics_->OnStage(MakeRun("r1"), Cell("beast", api::Stage::kWarmingUp));
  metrics_->OnInterval("r1", Cell("beast"), Interval(1, Phase::kMeasure, 0, 1000, 10, 50), At(1000));
  metrics_->OnTargetUsage("r1", Cell("beast", api::Stage::kMeasuring), {1 << 20, 1});

  report::RunRecord rec;
  rec.run = MakeRun("r1");
  rec.run.status.phase = api::RunPhase::kSucceeded;
  rec.run.status.progress.total = 1;
  report::CellRecord cell;
  cell.result.state = api::CellState::kSucceeded;
  rec.cells.push_back(cell);
  metrics_->OnPersist(rec);
  text = Scrape();
  EXPECT_EQ(Value(text, R"(fairbench_runs{phase="Succeeded"})"), 1);
  EXPECT_EQ(Value(text, R"(fairbench_runs{phase="Queued"})"), 1);
  EXPECT_EQ(Value(text, R"(fairbench_cells_finished_total{run="r1",state="Succeeded"})"), 1);
  EXPECT_EQ(Value(text, R"(fairbench_run_cells{run="r1"})"), 1);
  EXPECT_EQ(text.find("fairbench_load_slot_holder{"), std::string::npos) << "a finished run holds no slot";

  now_ += 9min;
  text = Scrape();
  EXPECT_EQ(Value(text, "fairbench_requests_total" + kCell), 10) << "still within the retention";
  now_ += 1min;
  text = Scrape();
  EXPECT_EQ(text.find("run=\"r1\""), std::string::npos) << text;
  EXPECT_EQ(Value(text, R"(fairbench_runs{phase="Succeeded"})"), 0);
  EXPECT_EQ(Value(text, R"(fairbench_runs{phase="Queued"})"), 1);
}

TEST_F(RunMetricsTest, ARunStartedAgainIsNotExpired) {
  report::RunRecord rec;
  rec.run = MakeRun("r1");
  rec.run.status.phase = api::RunPhase::kFailed;
  metrics_->OnPersist(rec);
  rec.run.status.phase = api::RunPhase::kRunning;
  metrics_->OnPersist(rec);
  metrics_->OnInterval("r1", Cell("beast"), Interval(1, Phase::kMeasure, 0, 1000, 10, 50), At(1000));
  now_ += 1h;
  EXPECT_EQ(Value(Scrape(), "fairbench_requests_total" + kCell), 10);
}

}  // namespace
}  // namespace fairbench::metrics

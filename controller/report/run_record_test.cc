// results.json: exact round trips, and damaged files refused with the field
// that is wrong.
#include "controller/report/run_record.h"

#include <gtest/gtest.h>

#include "api/time_text.h"
#include "common/base64.h"
#include "common/histogram.h"
#include "controller/report/study_figures.h"

namespace fairbench::report {
namespace {

using nlohmann::json;

TimelinePoint Point(uint64_t sequence, Phase phase, double start) {
  TimelinePoint p;
  p.sequence = sequence;
  p.phase = phase;
  p.start_s = start;
  p.end_s = start + 1.000123456789;
  p.counters.requests = 123456 + sequence;
  p.counters.bytes_read = 21604800;
  p.counters.bytes_written = 4567890;
  p.counters.errors = {1, 2, 3, 4, 5, 6};
  p.counters.status_classes = {7, 8, 123440, 9, 10, 11};
  p.counters.connects = 100;
  p.counters.connect_time_us = 4242;
  p.counters.closes_by_server = 3;
  p.p50_us = 150;
  p.p90_us = 210;
  p.p99_us = 990;
  p.max_us = 12220;
  p.mean_us = 149.52000000000001;
  p.connections_open = 100;
  p.cpu_seconds = 3.3333333333333335;
  return p;
}

std::string EncodedHistogram(std::initializer_list<int64_t> values) {
  Histogram h;
  for (int64_t v : values) h.Record(v);
  return Base64Encode(h.EncodeCompressed());
}

// A record that sets every field the format carries.
RunRecord RichRecord() {
  RunRecord r;
  r.schedule.order = "Interleaved";
  r.schedule.seed = 1234567890123;
  r.schedule.rounds = {{"drogon", "crow"}, {"crow", "drogon"}};
  CalibrationRecord cal;
  cal.passed = false;
  cal.host = "bench-1";
  cal.stall_ms = 501.25;
  cal.delay_ms = 1;
  cal.rate = 1000;
  cal.closed_connections = 4;
  cal.uncorrected_would_pass = true;
  cal.checks = {CalibrationCheck{"open", "max", "[500.0, 600.0] ms", "ms", 512.5, 500, 600, 11.25, true},
                CalibrationCheck{"closed", "requests >= S/2", "at most 4", "requests", 9, 0, 4, 5, false}};
  r.calibration = cal;
  api::BenchmarkRun& run = r.run;
  run.metadata.name = "nightly";
  run.metadata.namespace_ = "bench";
  run.metadata.labels = {{"team", "web"}};
  run.metadata.annotations = {{"fairbench.dev/description", "with \"quotes\", <tags> & ünïcödé"}};
  run.metadata.generation = 3;
  api::Target t;
  t.name = "drogon";
  t.image = "example.org/drogon:1.9.8";
  t.resources.cpu = api::CpuQuantity{4000};
  t.local = api::LocalProcess{};
  t.local->command = {"./drogon-server", "--port", "{port}"};
  run.spec.targets = {t};
  api::Scenario s;
  s.name = "hello";
  s.request = api::Request{};
  s.request->path = "/";
  s.connections = {100, 1000};
  run.spec.scenarios = {s};
  run.spec.load.rate = 50000;
  run.spec.repetitions = 2;
  run.status.phase = api::RunPhase::kRunning;
  run.status.observed_generation = 3;
  run.status.current = api::CurrentCell{"drogon", "hello", 1000, 2, api::Stage::kMeasuring, std::nullopt};
  run.status.progress = {2, 4};
  run.status.start_time = *api::ParseTime("2026-09-28T12:00:00.125Z");
  run.status.conditions.push_back(api::Condition{"Progressing", api::ConditionStatus::kTrue, "CellRunning",
                                                 "drogon/hello/c1000/r2", *api::ParseTime("2026-09-28T12:01:00Z"), 3});

  r.environment = {"node-1", "6.1.0-26-amd64", "AMD EPYC 7B13", 16,        uint64_t{64} << 30,
                   "local",  "0.1.0",          {0, 1, 2, 3},    {4, 5, 8}, {"virtio-net", "somaxconn 65535"}};

  CellRecord ok;
  ok.result.target = "drogon";
  ok.result.scenario = "hello";
  ok.result.connections = 100;
  ok.result.repetition = 1;
  ok.result.requests_per_second = 515760.123456789;
  ok.result.latency = {195.54, 265.15, 16080, 150, 170, 210, 990, 4100, 12000};
  ok.result.errors = {1, 2, 3, 4, 5, 6};
  ok.result.status_classes = {0, 15472803, 0, 5, 0};
  ok.result.requests = 15472808;
  ok.result.bytes = 2336393008;
  ok.result.bytes_per_response = 151.00000000000003;
  ok.result.transfer_per_second = 77879766.9;
  ok.result.memory_idle = 102540247;
  ok.result.memory_loaded = 96520601;
  ok.result.target_cpu = 3.9876;
  ok.result.agent_cpu = 2.5;
  ok.result.limiter = api::Limiter{api::LimiterKind::kTargetCpu, "target CPU 1.98 cores of its 2 CPUs (2-3)."};
  ok.result.start_time = *api::ParseTime("2026-09-28T12:00:05.000000001Z");
  ok.result.end_time = *api::ParseTime("2026-09-28T12:00:35Z");
  ok.timeline = {Point(1, Phase::kWarmup, 0), Point(2, Phase::kMeasure, 1.000123456789)};
  ok.latency_histogram = EncodedHistogram({150, 210, 990, 16080});
  ok.uncorrected_histogram = EncodedHistogram({140, 200});
  ok.latency_corrected = true;
  ok.wrk_text =
      "Running 30s test @ http://127.0.0.1:8080/\n  4 threads and 100 connections\n\tLatency 195.54us \"µ\"\n";
  ok.agents = 2;
  ok.connections_peak = 100;
  ok.drained = 17;
  ok.abandoned = 2;
  ok.measure_seconds = 29.999871;
  ok.littles_law_connections = 100.85;
  ok.usage_samples = 7;
  ok.usage_span_seconds = 6.25;
  ok.flags = {CellFlag::kSnapshotGap, CellFlag::kErrors};

  CellRecord failed;
  failed.result.target = "drogon";
  failed.result.scenario = "hello";
  failed.result.connections = 1000;
  failed.result.repetition = 1;
  failed.result.state = api::CellState::kFailed;
  failed.result.reason = api::CellReason::kTargetExited;
  failed.result.message = "exit status 137 | killed";

  r.cells = {ok, failed};
  for (const CellRecord& c : r.cells) run.status.results.push_back(c.result);
  return r;
}

void ExpectSameTimeline(const std::vector<TimelinePoint>& a, const std::vector<TimelinePoint>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].sequence, b[i].sequence);
    EXPECT_EQ(a[i].phase, b[i].phase);
    EXPECT_EQ(a[i].start_s, b[i].start_s);
    EXPECT_EQ(a[i].end_s, b[i].end_s);
    EXPECT_EQ(a[i].counters, b[i].counters);
    EXPECT_EQ(a[i].p50_us, b[i].p50_us);
    EXPECT_EQ(a[i].p90_us, b[i].p90_us);
    EXPECT_EQ(a[i].p99_us, b[i].p99_us);
    EXPECT_EQ(a[i].max_us, b[i].max_us);
    EXPECT_EQ(a[i].mean_us, b[i].mean_us);
    EXPECT_EQ(a[i].connections_open, b[i].connections_open);
    EXPECT_EQ(a[i].cpu_seconds, b[i].cpu_seconds);
  }
}

void ExpectSameRecord(const RunRecord& a, const RunRecord& b) {
  EXPECT_EQ(a.run, b.run);
  EXPECT_EQ(a.environment.hostname, b.environment.hostname);
  EXPECT_EQ(a.environment.kernel, b.environment.kernel);
  EXPECT_EQ(a.environment.cpu_model, b.environment.cpu_model);
  EXPECT_EQ(a.environment.cpus, b.environment.cpus);
  EXPECT_EQ(a.environment.memory_bytes, b.environment.memory_bytes);
  EXPECT_EQ(a.environment.platform, b.environment.platform);
  EXPECT_EQ(a.environment.fairbench_version, b.environment.fairbench_version);
  EXPECT_EQ(a.environment.target_cpus, b.environment.target_cpus);
  EXPECT_EQ(a.environment.agent_cpus, b.environment.agent_cpus);
  EXPECT_EQ(a.environment.notes, b.environment.notes);
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.calibration, b.calibration);
  ASSERT_EQ(a.cells.size(), b.cells.size());
  for (size_t i = 0; i < a.cells.size(); ++i) {
    const CellRecord& x = a.cells[i];
    const CellRecord& y = b.cells[i];
    EXPECT_EQ(x.result, y.result) << i;
    ExpectSameTimeline(x.timeline, y.timeline);
    EXPECT_EQ(x.latency_histogram, y.latency_histogram);
    EXPECT_EQ(x.uncorrected_histogram, y.uncorrected_histogram);
    EXPECT_EQ(x.latency_corrected, y.latency_corrected);
    EXPECT_EQ(x.wrk_text, y.wrk_text);
    EXPECT_EQ(x.agents, y.agents);
    EXPECT_EQ(x.connections_peak, y.connections_peak);
    EXPECT_EQ(x.drained, y.drained);
    EXPECT_EQ(x.abandoned, y.abandoned);
    EXPECT_EQ(x.measure_seconds, y.measure_seconds);
    EXPECT_EQ(x.littles_law_connections, y.littles_law_connections);
    EXPECT_EQ(x.usage_samples, y.usage_samples);
    EXPECT_EQ(x.usage_span_seconds, y.usage_span_seconds);
    EXPECT_EQ(x.flags, y.flags);
  }
}

Result<RunRecord> ThroughText(const RunRecord& record) {
  return RunRecordFromJsonText(ToJson(record).dump(2), "out/results.json");
}

TEST(RunRecordTest, RichRecordRoundTripsExactly) {
  const RunRecord original = RichRecord();
  const Result<RunRecord> back = ThroughText(original);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameRecord(original, *back);
  EXPECT_EQ(ToJson(*back), ToJson(original));
}

TEST(RunRecordTest, StudyFiguresRoundTrip) {
  const RunRecord original = StudyFigures();
  const Result<RunRecord> back = RunRecordFromJson(json::parse(ToJson(original).dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameRecord(original, *back);
}

TEST(RunRecordTest, LayoutHasAHeaderAndEachResultOnce) {
  const nlohmann::ordered_json j = ToJson(RichRecord());
  EXPECT_EQ(j["apiVersion"], "fairbench.dev/v1alpha1");
  EXPECT_EQ(j["kind"], "BenchmarkResults");
  EXPECT_EQ(j["run"]["kind"], "BenchmarkRun");
  EXPECT_EQ(j["run"]["status"]["phase"], "Running");
  EXPECT_FALSE(j["run"]["status"].contains("results"));  // under cells[].result instead
  EXPECT_EQ(j["cells"][0]["result"]["requestsPerSecond"], 515760.123456789);
  EXPECT_EQ(j["cells"][0]["flags"], (nlohmann::ordered_json{"SnapshotGap", "Errors"}));
  EXPECT_EQ(j["cells"][0]["timeline"][1]["phase"], "measure");
  EXPECT_EQ(j["cells"][1]["result"]["reason"], "TargetExited");
  // Catches: the limiter verdict left out of results.json, or spelt other than the API's names.
  EXPECT_EQ(
      j["cells"][0]["result"]["limiter"],
      (nlohmann::ordered_json{{"kind", "TargetCpu"}, {"evidence", "target CPU 1.98 cores of its 2 CPUs (2-3)."}}));
  EXPECT_EQ(j["environment"]["agentCpus"], "4-5,8");
}

TEST(RunRecordTest, EmptyRecordRoundTrips) {
  const Result<RunRecord> back = ThroughText(RunRecord{});
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->cells.empty());
}

// The stores write ToJsonText, built a cell at a time: it must be the whole
// tree's text byte for byte (an indentation, a comma or the closing bracket
// off would show here), with none, one or several cells.
TEST(RunRecordTest, TextBuiltCellByCellIsTheTreesText) {
  RunRecord record = RichRecord();
  ASSERT_GE(record.cells.size(), 2u);
  EXPECT_EQ(ToJsonText(record), ToJson(record).dump(1) + "\n");
  record.cells.resize(1);
  EXPECT_EQ(ToJsonText(record), ToJson(record).dump(1) + "\n");
  record.cells.clear();
  EXPECT_EQ(ToJsonText(record), ToJson(record).dump(1) + "\n");
  EXPECT_EQ(ToJsonText(RunRecord{}), ToJson(RunRecord{}).dump(1) + "\n");
}

// The error message after damaging a good file with `damage`.
std::string ErrorAfter(const std::function<void(json&)>& damage) {
  json j = json::parse(ToJson(RichRecord()).dump());
  damage(j);
  const Result<RunRecord> r = RunRecordFromJsonText(j.dump(), "out/results.json");
  return r.ok() ? "" : r.status().message();
}

TEST(RunRecordTest, DamagedFilesNameTheField) {
  EXPECT_EQ(ErrorAfter([](json& j) { j["kind"] = "BenchmarkRun"; }),
            "out/results.json: kind: must be \"BenchmarkResults\", got \"BenchmarkRun\"");
  EXPECT_EQ(ErrorAfter([](json& j) {
              j["cells"][1]["timeline"] = json::array({{{"requests", "many"}}});
            }),
            "out/results.json: cells[1].timeline[0].requests: must be an integer, got \"many\"");
  EXPECT_EQ(ErrorAfter([](json& j) { j["cells"][0]["drained"] = -1; }),
            "out/results.json: cells[0].drained: must not be negative, got -1");
  EXPECT_EQ(ErrorAfter([](json& j) { j["cells"][0]["agents"] = 1e10; }),
            "out/results.json: cells[0].agents: must be an integer, got 10000000000.0");
  EXPECT_EQ(ErrorAfter([](json& j) { j["cells"][0]["flags"][1] = "Slow"; }),
            "out/results.json: cells[0].flags[1]: unknown flag \"Slow\" (known: GeneratorSaturated, "
            "LittlesLawMismatch, FewerConnections, SnapshotGap, SparseUsage, SharedCpus, Errors, RateNotAchieved, "
            "ContentLengthMismatch, DateMissing, DateFrozen, AnswersUnsampled)");
  EXPECT_EQ(ErrorAfter([](json& j) {
              j["cells"][0]["latencyHistogram"] = "AAAA";
            }).rfind("out/results.json: cells[0].latencyHistogram: is not an HdrHistogram: ", 0),
            0u);
  EXPECT_EQ(ErrorAfter([](json& j) {
              j["cells"][0]["latencyHistogram"] = "not base64!";
            }).rfind("out/results.json: cells[0].latencyHistogram: is not base64", 0),
            0u);
  EXPECT_EQ(ErrorAfter([](json& j) { j["cells"][0]["colour"] = "red"; }),
            "out/results.json: cells[0].colour: unknown field");
  EXPECT_EQ(ErrorAfter([](json& j) {
              j["environment"]["targetCpus"] = "3-1";
            }).rfind("out/results.json: environment.targetCpus: ", 0),
            0u);
  EXPECT_EQ(ErrorAfter([](json& j) { j["cells"][0]["timeline"][0]["phase"] = "cooldown"; }),
            "out/results.json: cells[0].timeline[0].phase: must be warmup or measure, got \"cooldown\"");
}

TEST(RunRecordTest, DamagedResultsAndRunUseTheApiCodecsMessages) {
  EXPECT_EQ(ErrorAfter([](json& j) { j["cells"][1]["result"]["latency"]["mean"] = "fast"; }),
            "out/results.json: cells[1].result.latency.mean: must be a number, got \"fast\"");
  EXPECT_EQ(ErrorAfter([](json& j) {
              j["cells"][0]["result"]["state"] = "Done";
            }).rfind("out/results.json: cells[0].result.state: must be one of Succeeded, Failed, Skipped", 0),
            0u);
  EXPECT_EQ(ErrorAfter([](json& j) { j["cells"][0].erase("result"); }), "out/results.json: cells[0].result: required");
  EXPECT_EQ(ErrorAfter([](json& j) {
              j["run"]["spec"]["load"]["threads"] = "four";
            }).rfind("out/results.json: run.spec.load.threads: must be an integer", 0),
            0u);
  EXPECT_EQ(ErrorAfter([](json& j) { j["run"]["status"]["results"] = json::array(); }),
            "out/results.json: run.status.results: must not be set: each cell's result is written under "
            "cells[].result");
}

TEST(RunRecordTest, SeveralProblemsAreReportedTogether) {
  const std::string message = ErrorAfter([](json& j) {
    j["cells"][0]["drained"] = "x";
    j["cells"][1]["abandoned"] = "y";
  });
  EXPECT_NE(message.find("cells[0].drained"), std::string::npos) << message;
  EXPECT_NE(message.find("cells[1].abandoned"), std::string::npos) << message;
}

TEST(RunRecordTest, NotJsonOrNotAResultsFile) {
  const Result<RunRecord> truncated = RunRecordFromJsonText("{\n  \"apiVersion\": ", "out/results.json");
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().message().rfind("out/results.json:2:", 0), 0u) << truncated.status().message();
  EXPECT_NE(truncated.status().message().find("invalid JSON"), std::string::npos);

  const Result<RunRecord> list = RunRecordFromJson(json::array());
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().message(),
            "results.json: expected an object with apiVersion \"fairbench.dev/v1alpha1\" and kind "
            "\"BenchmarkResults\", got a list");

  const Result<RunRecord> empty = RunRecordFromJson(json::object());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("run: required"), std::string::npos) << empty.status().message();
  EXPECT_NE(empty.status().message().find("cells: required"), std::string::npos);
}

TEST(RunRecordTest, FlagNamesRoundTrip) {
  for (CellFlag f : {CellFlag::kGeneratorSaturated, CellFlag::kLittlesLawMismatch, CellFlag::kFewerConnections,
                     CellFlag::kSnapshotGap, CellFlag::kSparseUsage, CellFlag::kErrors}) {
    EXPECT_EQ(FlagFromName(FlagName(f)), f);
  }
  EXPECT_STREQ(FlagName(CellFlag::kLittlesLawMismatch), "LittlesLawMismatch");
  EXPECT_FALSE(FlagFromName("littleslawmismatch").has_value());
}

}  // namespace
}  // namespace fairbench::report

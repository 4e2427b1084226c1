// What a result store indexes of a record, checked against the record's own
// results.json (read here with a JSON parser, not through RunRecord) and
// the fingerprint against sha256sum.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "controller/results/run_index.h"

namespace fairbench::results {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

const std::string kLocalRun = std::string(RESULTS_TESTDATA) + "/local_run.json";

// Catches: a cell row that takes a figure from the wrong field (p90 for
// p99, the agent's CPU for the target's), CPU per request in other units
// than µs, a rate not taken from spec.load, flags or memory lost.
TEST(RunIndex, CellRowsCarryTheRecordsOwnFigures) {
  const std::string text = ReadFile(kLocalRun);
  auto record = report::RunRecordFromJsonText(text, kLocalRun);
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  const RunIndex x = IndexRun(*record, report::ToJsonText(*record));
  const auto j = nlohmann::json::parse(text);
  ASSERT_EQ(x.cells.size(), j["cells"].size());
  ASSERT_EQ(x.cells.size(), 4u);
  for (size_t i = 0; i < x.cells.size(); ++i) {
    const auto& r = j["cells"][i]["result"];
    const CellRow& c = x.cells[i];
    EXPECT_EQ(c.position, static_cast<int32_t>(i));
    EXPECT_EQ(c.target, r["target"].get<std::string>());
    EXPECT_EQ(c.scenario, r["scenario"].get<std::string>());
    EXPECT_EQ(c.connections, r["connections"].get<int64_t>());
    EXPECT_EQ(c.repetition, r["repetition"].get<int32_t>());
    EXPECT_EQ(c.state, r["state"].get<std::string>());
    EXPECT_EQ(c.rate, j["run"]["spec"]["load"].value("rate", int64_t{0}));
    EXPECT_DOUBLE_EQ(c.requests_per_second, r["requestsPerSecond"].get<double>());
    EXPECT_DOUBLE_EQ(c.p50_us, r["latency"]["p50"].get<double>());
    EXPECT_DOUBLE_EQ(c.p90_us, r["latency"]["p90"].get<double>());
    EXPECT_DOUBLE_EQ(c.p99_us, r["latency"]["p99"].get<double>());
    EXPECT_DOUBLE_EQ(c.p999_us, r["latency"]["p999"].get<double>());
    ASSERT_TRUE(c.cpu_us_per_request.has_value());
    EXPECT_NEAR(*c.cpu_us_per_request, r["targetCpu"].get<double>() / r["requestsPerSecond"].get<double>() * 1e6, 1e-9);
    ASSERT_TRUE(c.memory_loaded_bytes.has_value());
    EXPECT_EQ(*c.memory_loaded_bytes, r["memoryLoaded"].get<uint64_t>());
    uint64_t errors = 0;
    if (r.contains("errors")) {
      for (const auto& [k, v] : r["errors"].items()) errors += v.get<uint64_t>();
    }
    EXPECT_EQ(c.errors_total, errors);
    std::string flags;
    for (const auto& f : j["cells"][i]["flags"]) flags += (flags.empty() ? "" : ",") + f.get<std::string>();
    EXPECT_EQ(c.flags, flags);
  }
  EXPECT_EQ(x.name, "store-testdata");
  EXPECT_EQ(x.labels_json, R"({"branch":"main","commit":"abc1234"})");
  ASSERT_EQ(x.targets.size(), 1u);
  EXPECT_EQ(x.targets[0].image, "ghcr.io/fairbench/fairbench-target-beast:0.1.0");
  EXPECT_EQ(x.targets[0].command, "fairbench-target-beast --port {port} --threads 1");
  ASSERT_FALSE(x.targets[0].facts.empty());
  EXPECT_TRUE(x.targets[0].facts[0].starts_with("target beast ran ")) << x.targets[0].facts[0];
}

// Catches: a fixed rate's cells keyed like the closed loop of the same
// connections (their series would mix), a share of capacity keyed by the
// requests/s it resolved to (different in every run: no series would ever
// have two points), or --rate's text read otherwise than the run file's.
TEST(RunIndex, RateLevelsKeyTheirOwnSeries) {
  api::BenchmarkRunSpec spec;
  api::CellResult closed;
  EXPECT_EQ(SeriesRate(spec, closed), 0);
  spec.load.rate = 700;
  EXPECT_EQ(SeriesRate(spec, closed), 700);
  api::CellResult fixed;
  fixed.rate_level = api::RateLevel{2000, 0};
  fixed.offered_rate = 2000;
  EXPECT_EQ(SeriesRate(spec, fixed), 2000);
  api::CellResult share;
  share.rate_level = api::RateLevel{0, 50};
  share.offered_rate = 12345;
  EXPECT_EQ(SeriesRate(spec, share), -50);
  EXPECT_EQ(SeriesRateText(-50), "50 % of capacity");
  EXPECT_EQ(SeriesRateText(2000), "2000 requests/s");
  EXPECT_EQ(SeriesRateText(0), "");
  EXPECT_EQ(*ParseSeriesRate("50%"), -50);
  EXPECT_EQ(*ParseSeriesRate("2k"), 2000);
  EXPECT_EQ(*ParseSeriesRate("0"), 0);
  EXPECT_FALSE(ParseSeriesRate("150%").ok());
  EXPECT_FALSE(ParseSeriesRate("fast").ok());
}

// Catches: a fingerprint over other facts than the documented ones (the
// host name in it, the CPU layout left out) or over another spelling of
// them than environment_json shows.
TEST(RunIndex, FingerprintIsTheSha256OfTheComparableFacts) {
  auto record = report::RunRecordFromJsonText(ReadFile(kLocalRun), kLocalRun);
  ASSERT_TRUE(record.ok());
  const RunIndex x = IndexRun(*record, report::ToJsonText(*record));
  const auto env = nlohmann::json::parse(ReadFile(kLocalRun))["environment"];
  const std::string facts =
      nlohmann::ordered_json{
          {"platform", env["platform"]}, {"cpuModel", env["cpuModel"]},     {"cpus", env["cpus"]},
          {"kernel", env["kernel"]},     {"targetCpus", env["targetCpus"]}, {"agentCpus", env["agentCpus"]}}
          .dump();
  EXPECT_EQ(x.environment_json, facts);
  const std::string file = ::testing::TempDir() + "/fingerprint-facts.json";
  std::ofstream(file, std::ios::binary) << facts;
  const std::string sum = Shell("sha256sum " + file);
  EXPECT_EQ(x.fingerprint, sum.substr(0, 64));

  report::Environment e = record->environment;
  e.hostname = "another-machine-of-the-same-kind";
  e.notes.clear();
  EXPECT_EQ(EnvironmentFingerprint(e), x.fingerprint);
  for (auto change : std::vector<std::function<void(report::Environment&)>>{
           [](report::Environment& v) { v.kernel += "-2"; }, [](report::Environment& v) { v.cpus += 1; },
           [](report::Environment& v) { v.cpu_model = "Intel"; }, [](report::Environment& v) { v.platform = "docker"; },
           [](report::Environment& v) {
             v.target_cpus = {0, 1};
           },
           [](report::Environment& v) { v.agent_cpus = {3}; }}) {
    report::Environment other = record->environment;
    change(other);
    EXPECT_NE(EnvironmentFingerprint(other), x.fingerprint);
  }
}

// Catches: two runs sharing a key (dedup dropping a run) or one run getting
// two (dedup missing it): the key follows uid, else namespace/name, with
// the start time; a record that never started is keyed by its content.
TEST(RunIndex, KeyIsUidOrNameWithTheStartTime) {
  report::RunRecord r;
  r.run.metadata.name = "nightly";
  r.run.metadata.namespace_ = "bench";
  const std::string text = report::ToJsonText(r);
  RunIndex x = IndexRun(r, text);
  EXPECT_EQ(x.key, "sha256:" + x.content_sha256);
  r.run.status.start_time = api::Time(std::chrono::nanoseconds(1'790'000'000'123'456'789));
  x = IndexRun(r, report::ToJsonText(r));
  EXPECT_EQ(x.key, "name:bench/nightly@1790000000123456789");
  r.run.metadata.uid = "0f9a";
  x = IndexRun(r, report::ToJsonText(r));
  EXPECT_EQ(x.key, "uid:0f9a@1790000000123456789");
}

}  // namespace
}  // namespace fairbench::results

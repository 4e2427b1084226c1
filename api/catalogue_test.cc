// The catalogue of run files under testdata/: every broken file fails with
// exactly the lines it announces, every valid file loads and round-trips.
//
// A broken file announces its expected output in leading comment lines,
// one per error, in order:
//   # expect: unknown-field.yaml:9:5: spec.load.conections: unknown field (did you mean "connections"?)
// A JSON file, which cannot hold comments, keeps them in FILE.expect. An
// optional "# platform: local" or "# platform: kubernetes" selects the
// platform rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/codec.h"
#include "api/loader.h"

namespace fairbench::api {
namespace {

namespace fs = std::filesystem;

const fs::path kTestdata = FAIRBENCH_API_TESTDATA;

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() != ".expect") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct Expectation {
  std::vector<std::string> lines;
  Platform platform = Platform::kAny;
};

Expectation ReadExpectation(const fs::path& file) {
  Expectation e;
  fs::path source = file;
  source += ".expect";
  const bool sidecar = fs::exists(source);
  for (const std::string& line : SplitLines(Slurp(sidecar ? source : file))) {
    static const std::string kExpect = "# expect: ";
    static const std::string kPlatform = "# platform: ";
    if (line.rfind(kExpect, 0) == 0) e.lines.push_back(line.substr(kExpect.size()));
    if (line == kPlatform + "local") e.platform = Platform::kLocal;
    if (line == kPlatform + "kubernetes") e.platform = Platform::kKubernetes;
  }
  return e;
}

TEST(CatalogueTest, EveryBrokenFileFailsWithItsMessages) {
  const std::vector<fs::path> files = FilesIn(kTestdata / "invalid");
  EXPECT_GE(files.size(), 30u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    const Expectation expected = ReadExpectation(file);
    ASSERT_FALSE(expected.lines.empty()) << "announces no \"# expect: \" line";
    LoadOptions options;
    options.display_name = file.filename().string();
    options.validation.platform = expected.platform;
    const Result<BenchmarkRun> run = LoadRunFile(file, options);
    ASSERT_FALSE(run.ok()) << "loaded";
    EXPECT_EQ(run.status().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(SplitLines(run.status().message()), expected.lines);
  }
}

TEST(CatalogueTest, EveryValidFileLoadsAndRoundTrips) {
  const std::vector<fs::path> files = FilesIn(kTestdata / "valid");
  EXPECT_GE(files.size(), 4u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    const Result<BenchmarkRun> run = LoadRunFile(file);
    ASSERT_TRUE(run.ok()) << run.status().message();

    ParseOptions yaml;
    yaml.source = "written.yaml";
    yaml.base_dir = kTestdata / "valid";
    const Result<BenchmarkRun> from_yaml = ParseRun(ToYaml(*run), yaml);
    ASSERT_TRUE(from_yaml.ok()) << from_yaml.status().message() << "\n" << ToYaml(*run);
    EXPECT_EQ(*from_yaml, *run);

    ParseOptions json = yaml;
    json.format = Format::kJson;
    const Result<BenchmarkRun> from_json = ParseRun(ToJson(*run).dump(2), json);
    ASSERT_TRUE(from_json.ok()) << from_json.status().message();
    EXPECT_EQ(*from_json, *run);
  }
}

TEST(CatalogueTest, YamlAndJsonSpellingsAgree) {
  const Result<BenchmarkRun> yaml = LoadRunFile(kTestdata / "valid" / "full.yaml");
  const Result<BenchmarkRun> json = LoadRunFile(kTestdata / "valid" / "full.json");
  ASSERT_TRUE(yaml.ok()) << yaml.status().message();
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(*yaml, *json);
  // Spot checks that the file says what the model holds.
  const BenchmarkRun& run = *yaml;
  EXPECT_EQ(run.metadata.creation_timestamp.has_value(), true);
  EXPECT_EQ(run.spec.targets[0].local->ready_timeout, std::chrono::seconds(90));
  EXPECT_EQ(run.spec.targets[1].resources.memory->bytes, 1'000'000'000);
  EXPECT_EQ(run.spec.scenarios[0].connections, (std::vector<int64_t>{100, 1000, 10000}));
  EXPECT_EQ(run.spec.scenarios[2].requests[1].request.EffectiveBody(),
            R"({"name":"Alice","age":30,"email":"alice@example.com"})");
  EXPECT_EQ(run.spec.load.rate, 50000);
  EXPECT_EQ(run.spec.local.agent_cpus.cpus, (std::vector<int>{4, 5, 6, 7, 12}));
  EXPECT_EQ(run.status.phase, RunPhase::kRunning);
  EXPECT_EQ(run.status.progress, (Progress{4, 36}));
  EXPECT_EQ(run.status.results[0].status_classes.c2xx, 15472807u);
  EXPECT_EQ(run.status.results[1].state, CellState::kFailed);
  // Catches: the limiter verdict not read from status.results, or spelt apart in YAML and JSON.
  EXPECT_EQ(run.status.results[0].limiter,
            (Limiter{LimiterKind::kTargetCpu, "target CPU 3.97 cores of its 4 CPUs (0-3)."}));
  EXPECT_EQ(run.status.conditions[0].status, ConditionStatus::kTrue);
}

TEST(CatalogueTest, MinimalFileExpandsToItsDefaults) {
  const Result<BenchmarkRun> run = LoadRunFile(kTestdata / "valid" / "minimal.yaml");
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(ToYaml(*run), Slurp(kTestdata / "valid" / "minimal.expanded.yaml"));
}

TEST(CatalogueTest, KubernetesObjectsAreReadLeniently) {
  nlohmann::json object = nlohmann::json::parse(Slurp(kTestdata / "valid" / "full.json"));
  object["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "kubectl"}}});
  object["spec"]["load"]["someFutureField"] = 1;
  // bodyFile has no meaning on a cluster.
  object["spec"]["scenarios"][2]["requests"][1].erase("bodyFile");
  object["spec"]["scenarios"][2]["requests"][1]["body"] = "{}";
  const Result<BenchmarkRun> run = FromKubernetesObject(object);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->metadata.uid, "0b3c6a52-1f1e-4d0e-9a55-6f0c1c8f5a11");

  object["spec"]["load"]["threads"] = "four";
  object["spec"]["scenarios"][0]["request"]["bodyFile"] = "x.json";
  object["spec"]["scenarios"][0]["request"].erase("body");
  EXPECT_EQ(FromKubernetesObject(object).status().message(),
            "spec.scenarios[0].request.bodyFile: only available in a local run file; use body\n"
            "spec.load.threads: must be an integer, got \"four\"");
}

// Catches: the operator's reading of a BenchmarkRun letting load.rate with
// load.pipeline > 1 through (an object stored while the CRD had no CEL rule
// for it, or written past it), so that the run is deployed and every cell
// fails at its agents, instead of the run failing as InvalidSpec with the
// field named.
TEST(CatalogueTest, KubernetesObjectsWithARatedPipelineAreRefused) {
  nlohmann::json object = nlohmann::json::parse(Slurp(kTestdata / "valid" / "full.json"));
  object["spec"]["scenarios"][2]["requests"][1].erase("bodyFile");
  object["spec"]["scenarios"][2]["requests"][1]["body"] = "{}";
  ASSERT_TRUE(FromKubernetesObject(object).ok());
  object["spec"]["load"]["pipeline"] = 4;
  EXPECT_EQ(FromKubernetesObject(object).status().message(),
            "spec.load.pipeline: cannot be combined with load.rate: a constant rate sends one request at a time on "
            "each connection (set pipeline to 1, or remove rate)");
}

TEST(CatalogueTest, UnreadableFiles) {
  LoadOptions options;
  options.display_name = "x.yaml";
  const Result<BenchmarkRun> run = LoadRunFile(kTestdata / "no-such-file.yaml", options);
  EXPECT_EQ(run.status().code(), Status::Code::kIoError);
  EXPECT_EQ(run.status().message(), "x.yaml: cannot read: No such file or directory");
  options.display_name = "dir";
  EXPECT_EQ(LoadRunFile(kTestdata, options).status().message(), "dir: cannot read: is a directory");
}

}  // namespace
}  // namespace fairbench::api

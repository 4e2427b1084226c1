// examples/study.yaml: the published six-framework study as a BenchmarkRun.
#include <gtest/gtest.h>

#include <filesystem>

#include "api/cells.h"
#include "api/loader.h"

namespace fairbench::api {
namespace {

TEST(StudyExampleTest, LoadsAndExpandsIntoTheStudysCells) {
  LoadOptions options;
  options.validation.platform = Platform::kKubernetes;
  const Result<BenchmarkRun> loaded =
      LoadRunFile(std::filesystem::path(FAIRBENCH_EXAMPLES_DIR) / "study.yaml", options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const BenchmarkRunSpec& spec = loaded->spec;

  std::vector<std::string> targets;
  for (const Target& t : spec.targets) {
    targets.push_back(t.name);
    EXPECT_EQ(t.resources.cpu, CpuQuantity{4000}) << t.name;
    EXPECT_EQ(t.resources.memory, MemoryQuantity{int64_t{1} << 30}) << t.name;
    EXPECT_EQ(t.nofile, 65536) << t.name;
    EXPECT_FALSE(t.image.empty()) << t.name;
  }
  EXPECT_EQ(targets, (std::vector<std::string>{"hical", "drogon", "crow", "oatpp", "cpp-httplib", "cinatra"}));

  EXPECT_EQ(spec.load.threads, 4);
  EXPECT_EQ(spec.load.duration, std::chrono::seconds(30));
  EXPECT_EQ(spec.load.connections, (std::vector<int64_t>{100}));
  EXPECT_EQ(spec.repetitions, 1);

  const Scenario& echo = spec.scenarios[2];
  EXPECT_EQ(echo.request->method, "POST");
  EXPECT_EQ(echo.request->path, "/api/echo");
  EXPECT_EQ(echo.request->EffectiveBody(), R"({"name":"Alice","age":30,"email":"alice@example.com"})");
  EXPECT_EQ(*echo.expect.json, nlohmann::json::parse(echo.request->EffectiveBody()));
  EXPECT_EQ(spec.scenarios[0].expect.body, "Hello, World!");

  // Six cells per framework — the study's six scenarios — in run order.
  const std::vector<Cell> cells = ExpandCells(spec);
  ASSERT_EQ(cells.size(), 36u);
  for (size_t t = 0; t < targets.size(); ++t) {
    std::vector<std::string> keys;
    for (size_t i = 0; i < 6; ++i) keys.push_back(cells[t * 6 + i].Key());
    const std::string& n = targets[t];
    EXPECT_EQ(keys, (std::vector<std::string>{n + "/hello/c100/r1", n + "/hello/c1000/r1", n + "/hello/c10000/r1",
                                              n + "/json/c100/r1", n + "/echo/c100/r1", n + "/path-param/c100/r1"}));
  }
  for (const Scenario& s : spec.scenarios) {
    const ScenarioSettings settings = EffectiveSettings(spec, s);
    EXPECT_EQ(settings.threads, 4);
    EXPECT_EQ(settings.duration, std::chrono::seconds(30));
  }
}

}  // namespace
}  // namespace fairbench::api

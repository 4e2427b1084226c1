// Cell expansion, effective settings, and the small helpers the
// orchestrator uses with them (splitting, {port}, results, conditions).
#include "api/cells.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/conditions.h"

namespace fairbench::api {
namespace {

using std::chrono::seconds;

BenchmarkRunSpec Spec() {
  BenchmarkRunSpec spec;
  for (const char* name : {"drogon", "crow"}) {
    Target t;
    t.name = name;
    spec.targets.push_back(t);
  }
  Scenario hello;
  hello.name = "hello";
  hello.request = Request{};
  hello.request->path = "/";
  hello.connections = {100, 1000};
  spec.scenarios.push_back(hello);
  Scenario mix;
  mix.name = "mix";
  mix.requests.push_back(WeightedRequest{Request{}, 3});
  mix.requests.push_back(WeightedRequest{Request{}, 1});
  mix.duration = seconds(5);
  spec.scenarios.push_back(mix);
  spec.load.connections = {50};
  spec.repetitions = 2;
  return spec;
}

TEST(CellsTest, ExpandsTargetThenScenarioThenLevelThenRepetition) {
  const std::vector<Cell> cells = ExpandCells(Spec());
  std::vector<std::string> keys;
  for (const Cell& c : cells) keys.push_back(c.Key());
  EXPECT_EQ(keys, (std::vector<std::string>{"drogon/hello/c100/r1", "drogon/hello/c100/r2", "drogon/hello/c1000/r1",
                                            "drogon/hello/c1000/r2", "drogon/mix/c50/r1", "drogon/mix/c50/r2",
                                            "crow/hello/c100/r1", "crow/hello/c100/r2", "crow/hello/c1000/r1",
                                            "crow/hello/c1000/r2", "crow/mix/c50/r1", "crow/mix/c50/r2"}));
  for (size_t i = 0; i < cells.size(); ++i) EXPECT_EQ(cells[i].index, i);
  EXPECT_EQ(cells[6].target_index, 1u);
  EXPECT_EQ(cells[4].scenario_index, 1u);
  EXPECT_EQ(CountCells(Spec()), cells.size());
  EXPECT_TRUE(ExpandCells(BenchmarkRunSpec{}).empty());
}

// Which cells spec.profile selects: none without it, all with all, else
// those every set field of a selector matches, in every repetition.
TEST(CellsTest, ProfiledCellsFollowTheSelectors) {
  BenchmarkRunSpec spec;
  spec.targets.resize(2);
  spec.targets[0].name = "a";
  spec.targets[1].name = "b";
  spec.scenarios.resize(2);
  spec.scenarios[0].name = "s";
  spec.scenarios[1].name = "t";
  spec.load.connections = {10, 20};
  spec.repetitions = 2;
  auto profiled = [&spec] {
    std::vector<std::string> out;
    for (const Cell& c : ExpandCells(spec)) {
      if (IsProfiled(spec, c)) out.push_back(c.Key());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_TRUE(profiled().empty());
  spec.profile = Profile{true, {}, 99};
  EXPECT_EQ(profiled().size(), 16u);
  spec.profile = Profile{false, {ProfileCell{"b", "s", 20}, ProfileCell{"a", "t", 0}}, 99};
  EXPECT_EQ(profiled(), (std::vector<std::string>{"a/t/c10/r1", "a/t/c10/r2", "a/t/c20/r1", "a/t/c20/r2", "b/s/c20/r1",
                                                  "b/s/c20/r2"}));
}

TEST(CellsTest, ResolvesScenarioOverrides) {
  const BenchmarkRunSpec spec = Spec();
  const ScenarioSettings hello = EffectiveSettings(spec, spec.scenarios[0]);
  ASSERT_EQ(hello.requests.size(), 1u);
  EXPECT_EQ(hello.requests[0].weight, 1);
  EXPECT_EQ(hello.requests[0].request.path, "/");
  EXPECT_EQ(hello.connections, (std::vector<int64_t>{100, 1000}));
  EXPECT_EQ(hello.duration, seconds(30));
  EXPECT_EQ(hello.warmup, seconds(5));
  EXPECT_EQ(hello.timeout, seconds(2));
  EXPECT_EQ(hello.cooldown, seconds(10));
  EXPECT_EQ(hello.threads, 4);
  EXPECT_EQ(hello.agents, 1);
  EXPECT_EQ(hello.pipeline, 1);
  EXPECT_TRUE(hello.keep_alive);
  EXPECT_EQ(hello.expect.status, 200);

  const ScenarioSettings mix = EffectiveSettings(spec, spec.scenarios[1]);
  ASSERT_EQ(mix.requests.size(), 2u);
  EXPECT_EQ(mix.requests[0].weight, 3);
  EXPECT_EQ(mix.connections, (std::vector<int64_t>{50}));
  EXPECT_EQ(mix.duration, seconds(5));
}

TEST(CellsTest, SplitsEvenlyLargerSharesFirst) {
  EXPECT_EQ(SplitEvenly(10, 3), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(SplitEvenly(100, 1), (std::vector<int64_t>{100}));
  EXPECT_EQ(SplitEvenly(2, 4), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_TRUE(SplitEvenly(5, 0).empty());
}

TEST(CellsTest, SubstitutesPort) {
  EXPECT_EQ(SubstitutePort("--port={port}", 8080), "--port=8080");
  EXPECT_EQ(SubstitutePort("{port}{port}", 1), "11");
  EXPECT_EQ(SubstitutePort("{por}", 1), "{por}");
  EXPECT_EQ(SubstitutePort("", 1), "");
}

TEST(CellsTest, FindsResults) {
  const std::vector<Cell> cells = ExpandCells(Spec());
  BenchmarkRunStatus status;
  CellResult r;
  r.target = "drogon";
  r.scenario = "hello";
  r.connections = 1000;
  r.repetition = 2;
  status.results.push_back(r);
  EXPECT_EQ(FindResult(status, cells[3]), &status.results[0]);
  EXPECT_EQ(FindResult(status, cells[2]), nullptr);
}

// Catches: a rate level expanded without its closed-loop cell when it is a
// share of capacity (nothing would measure the capacity), or with one when
// none is (a cell nobody asked for), the levels out of the written order,
// repetitions not innermost, CountCells disagreeing with ExpandCells, or a
// rate level's result matching the closed-loop cell's.
TEST(CellsTest, RateLevelsFollowTheirClosedLoopCell) {
  BenchmarkRunSpec spec = Spec();
  spec.scenarios[0].connections = {100};
  spec.scenarios[0].rates = {RateLevel{2000, 0}, RateLevel{0, 50}};
  spec.scenarios[1].rates = {RateLevel{300, 0}};
  spec.targets.pop_back();
  const std::vector<Cell> cells = ExpandCells(spec);
  std::vector<std::string> keys;
  for (const Cell& c : cells) keys.push_back(c.Key());
  EXPECT_EQ(keys, (std::vector<std::string>{"drogon/hello/c100/r1", "drogon/hello/c100/r2",
                                            "drogon/hello/c100/q2000/r1", "drogon/hello/c100/q2000/r2",
                                            "drogon/hello/c100/q50pct/r1", "drogon/hello/c100/q50pct/r2",
                                            "drogon/mix/c50/q300/r1", "drogon/mix/c50/q300/r2"}));
  EXPECT_EQ(CountCells(spec), cells.size());
  EXPECT_FALSE(cells[0].rate.has_value());
  EXPECT_EQ(cells[4].rate, (RateLevel{0, 50}));

  BenchmarkRunStatus status;
  CellResult closed;
  closed.target = "drogon";
  closed.scenario = "hello";
  closed.connections = 100;
  closed.repetition = 2;
  status.results.push_back(closed);
  CellResult at_share = closed;
  at_share.rate_level = RateLevel{0, 50};
  status.results.push_back(at_share);
  EXPECT_EQ(FindResult(status, cells[1]), &status.results[0]);
  EXPECT_EQ(FindResult(status, cells[5]), &status.results[1]);
  EXPECT_EQ(FindResult(status, cells[3]), nullptr) << "the 2,000/s cell has no result";
  EXPECT_EQ(CapacityResult(status, cells[5]), &status.results[0]);
  EXPECT_EQ(CapacityResult(status, cells[4]), nullptr) << "repetition 1's closed loop has no result";
}

TEST(CellsTest, BodiesComeFromBodyOrFile) {
  Request r;
  EXPECT_EQ(r.EffectiveBody(), "");
  r.body_file = "x.json";
  r.body_file_content = "{}";
  EXPECT_EQ(r.EffectiveBody(), "{}");
  Request copy = r;
  copy.body_file_content = "other";
  EXPECT_EQ(copy, r);  // the content read from disk is not part of the API
}

TEST(ConditionsTest, TransitionTimeMovesOnlyWithStatus) {
  std::vector<Condition> conditions;
  const Time t0 = Time(seconds(1000));
  const Time t1 = Time(seconds(2000));
  EXPECT_TRUE(SetCondition(conditions, Condition{"Progressing", ConditionStatus::kTrue, "Deploying", "", {}, 1}, t0));
  EXPECT_EQ(conditions[0].last_transition_time, t0);
  EXPECT_TRUE(SetCondition(conditions, Condition{"Progressing", ConditionStatus::kTrue, "Measuring", "x", {}, 1}, t1));
  EXPECT_EQ(conditions[0].last_transition_time, t0);
  EXPECT_EQ(conditions[0].reason, "Measuring");
  EXPECT_FALSE(SetCondition(conditions, Condition{"Progressing", ConditionStatus::kTrue, "Measuring", "x", {}, 1}, t1));
  EXPECT_TRUE(SetCondition(conditions, Condition{"Progressing", ConditionStatus::kFalse, "Done", "", {}, 1}, t1));
  EXPECT_EQ(conditions[0].last_transition_time, t1);
  EXPECT_TRUE(SetCondition(conditions, Condition{"Complete", ConditionStatus::kTrue, "AllCellsDone", "", {}, 1}, t1));
  EXPECT_EQ(conditions.size(), 2u);
  EXPECT_TRUE(IsConditionTrue(conditions, "Complete"));
  EXPECT_FALSE(IsConditionTrue(conditions, "Progressing"));
  EXPECT_EQ(FindCondition(conditions, "Missing"), nullptr);
}

}  // namespace
}  // namespace fairbench::api

#include "controller/report/analysis.h"

#include <gtest/gtest.h>

#include "controller/report/study_figures.h"

namespace fairbench::report {
namespace {

CellRecord Cell(const std::string& target, const std::string& scenario, int64_t connections, int32_t repetition,
                double rps, api::CellState state = api::CellState::kSucceeded) {
  CellRecord c;
  c.result.target = target;
  c.result.scenario = scenario;
  c.result.connections = connections;
  c.result.repetition = repetition;
  c.result.requests_per_second = rps;
  c.result.state = state;
  return c;
}

std::vector<std::string> Targets(const std::vector<RankEntry>& ranking) {
  std::vector<std::string> out;
  for (const RankEntry& e : ranking) out.push_back(e.target);
  return out;
}

TEST(AnalysisTest, RanksTheStudyAsTheStudyDoes) {
  const RunRecord record = StudyFigures();
  const RunIndex index(record);
  EXPECT_EQ(index.baseline(), "hello");
  EXPECT_EQ(index.Levels("hello"), (std::vector<int64_t>{100, 1000, 10000}));
  EXPECT_EQ(Targets(Rank(index, "hello", 100)),
            (std::vector<std::string>{"cinatra", "hical", "drogon", "crow", "oatpp", "cpp-httplib"}));
  // Drogon overtakes Hical at 1,000 and everyone at 10,000.
  EXPECT_EQ(Targets(Rank(index, "hello", 1000)),
            (std::vector<std::string>{"cinatra", "drogon", "hical", "crow", "oatpp", "cpp-httplib"}));
  EXPECT_EQ(Rank(index, "hello", 10000).front().target, "drogon");
  const std::vector<RankEntry> json = Rank(index, "json", 100);
  EXPECT_DOUBLE_EQ(json[0].share_of_best, 1.0);
  EXPECT_NEAR(json[1].share_of_best, 534547.0 / 567065.0, 1e-12);
  EXPECT_EQ(index.TargetsByBaselineRank(), Targets(Rank(index, "hello", 100)));
}

TEST(AnalysisTest, BaselineIsHelloElseTheFirstScenario) {
  RunRecord record;
  api::Scenario a, b;
  a.name = "static";
  b.name = "json";
  record.run.spec.scenarios = {a, b};
  EXPECT_EQ(RunIndex(record).baseline(), "static");
  b.name = "hello";
  record.run.spec.scenarios = {a, b};
  EXPECT_EQ(RunIndex(record).baseline(), "hello");
  EXPECT_EQ(RunIndex(RunRecord{}).baseline(), "");
}

TEST(AnalysisTest, RepresentativeIsTheMedianRepetition) {
  RunRecord record;
  record.cells = {Cell("a", "s", 100, 1, 100), Cell("a", "s", 100, 2, 300), Cell("a", "s", 100, 3, 200),
                  Cell("a", "s", 100, 4, 900, api::CellState::kFailed)};
  const RunIndex index(record);
  EXPECT_EQ(index.Representative("a", "s", 100), &record.cells[2]);
  EXPECT_EQ(index.Failure("a", "s", 100), nullptr);  // it has successes
  EXPECT_EQ(index.Cells("a", "s", 100).size(), 4u);
  EXPECT_EQ(index.MaxRepetitions(), 4u);

  record.cells.push_back(Cell("a", "s", 100, 5, 250));  // four successes: the lower middle
  const RunIndex even(record);
  EXPECT_EQ(even.Representative("a", "s", 100), &record.cells[2]);
}

TEST(AnalysisTest, FailedAndMissingTargetsRankLast) {
  RunRecord record;
  api::Target t;
  for (const char* name : {"slow", "broken", "absent", "fast"}) {
    t.name = name;
    record.run.spec.targets.push_back(t);
  }
  record.cells = {Cell("slow", "s", 100, 1, 10), Cell("broken", "s", 100, 1, 0, api::CellState::kFailed),
                  Cell("fast", "s", 100, 1, 40), Cell("extra", "s", 100, 1, 20)};
  const RunIndex index(record);
  // A target with cells but not in the spec is still shown, after the spec's.
  EXPECT_EQ(index.targets(), (std::vector<std::string>{"slow", "broken", "absent", "fast", "extra"}));
  const std::vector<RankEntry> r = Rank(index, "s", 100);
  EXPECT_EQ(Targets(r), (std::vector<std::string>{"fast", "extra", "slow", "broken", "absent"}));
  EXPECT_DOUBLE_EQ(r[1].share_of_best, 0.5);
  EXPECT_EQ(r[3].cell, nullptr);
  EXPECT_EQ(r[3].failure, &record.cells[1]);
  EXPECT_EQ(r[4].failure, nullptr);
}

TEST(AnalysisTest, ChangeNeedsTwoPositiveNumbers) {
  EXPECT_NEAR(*Change(515760, 361592), -0.299, 0.0005);  // the study's −29.9 % for Drogon
  EXPECT_FALSE(Change(0, 10).has_value());
  EXPECT_FALSE(Change(10, 0).has_value());
}

TEST(AnalysisTest, SpreadHasMedianAndCoefficientOfVariation) {
  const Spread s = ComputeSpread({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4u);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.cv, 1.2909944 / 2.5, 1e-7);
  EXPECT_EQ(ComputeSpread({7}).cv, 0);
  EXPECT_EQ(ComputeSpread({}).count, 0u);
}

// A cell of a fixed rate: `cpu` cores for `rps` answered of `offered`.
CellRecord AtRate(const std::string& target, int32_t repetition, double offered, double rps,
                  std::optional<double> cpu) {
  CellRecord c = Cell(target, "hello", 100, repetition, rps);
  c.result.rate_level = api::RateLevel{0, 50};
  c.result.offered_rate = offered;
  c.result.target_cpu = cpu;
  if (rps < 0.98 * offered) c.flags.push_back(CellFlag::kRateNotAchieved);
  return c;
}

// Catches: fixed-rate cells ranked by requests/s with the closed loop
// (they answer what they are offered), a cell flagged RateNotAchieved
// ranked, the ranking not by CPU per request ascending, a target without
// a CPU figure ranked before one with it, or the median repetition not the
// one shown.
TEST(AnalysisTest, EfficiencyRanksValidCellsByCpuPerRequest) {
  RunRecord record;
  for (const char* t : {"a", "b", "c", "d"}) {
    api::Target target;
    target.name = t;
    record.run.spec.targets.push_back(target);
  }
  record.cells = {Cell("a", "hello", 100, 1, 20000), AtRate("a", 1, 10000, 10000, 0.5),
                  AtRate("a", 2, 10000, 10000, 0.3), AtRate("a", 3, 10000, 10000, 0.4),
                  Cell("b", "hello", 100, 1, 8000),  AtRate("b", 1, 4000, 4000, 0.04),
                  Cell("c", "hello", 100, 1, 30000), AtRate("c", 1, 15000, 9000, 0.01),
                  Cell("d", "hello", 100, 1, 1000),  AtRate("d", 1, 500, 500, std::nullopt)};
  const RunIndex index(record);
  EXPECT_EQ(index.RateCells().size(), 6u);
  EXPECT_EQ(index.Cells("a", "hello", 100).size(), 1u) << "the closed loop alone";
  EXPECT_EQ(Targets(Rank(index, "hello", 100)), (std::vector<std::string>{"c", "a", "b", "d"}));

  const std::vector<EfficiencyGroup> groups = EfficiencyGroups(index);
  ASSERT_EQ(groups.size(), 1u);
  const EfficiencyGroup& g = groups[0];
  EXPECT_EQ(g.level, (api::RateLevel{0, 50}));
  std::vector<std::string> order;
  for (const EfficiencyEntry& e : g.entries) order.push_back(e.target);
  // b: 10 µs per request; a: 40 µs (the median of 30, 40, 50); d: no CPU
  // figure; c: answered 60 % of its offer, not ranked.
  EXPECT_EQ(order, (std::vector<std::string>{"b", "a", "d", "c"}));
  ASSERT_NE(g.entries[1].cell, nullptr);
  EXPECT_EQ(g.entries[1].cell->result.repetition, 3);
  EXPECT_NEAR(*g.entries[1].cpu_us_per_request, 40.0, 1e-9);
  EXPECT_EQ(g.entries[1].valid, 3u);
  EXPECT_NE(g.entries[2].cell, nullptr);
  EXPECT_FALSE(g.entries[2].cpu_us_per_request.has_value());
  EXPECT_EQ(g.entries[3].cell, nullptr);
  ASSERT_NE(g.entries[3].invalid, nullptr);
  EXPECT_EQ(g.entries[3].invalid->result.requests_per_second, 9000);
}

}  // namespace
}  // namespace fairbench::report

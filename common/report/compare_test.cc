// fairbench compare's verdicts on records built here, whose figures are
// known: a real regression, noise, per-second samples, differences of
// environment, nothing in common.
#include "common/report/compare.h"

#include <gtest/gtest.h>

#include "common/report/markdown.h"

namespace fairbench::report {
namespace {

CellRecord Cell(const std::string& target, int32_t rep, double rps, double p99) {
  CellRecord c;
  c.result.target = target;
  c.result.scenario = "hello";
  c.result.connections = 100;
  c.result.repetition = rep;
  c.result.state = api::CellState::kSucceeded;
  c.result.requests_per_second = rps;
  c.result.latency.p99 = p99;
  return c;
}

RunRecord Record(const std::vector<double>& rates, const std::vector<double>& p99s, const std::string& target = "drogon") {
  RunRecord r;
  api::Target t;
  t.name = target;
  t.image = "example.org/" + target;
  r.run.spec.targets = {t};
  api::Scenario s;
  s.name = "hello";
  s.request = api::Request{};
  r.run.spec.scenarios = {s};
  r.run.spec.load.connections = {100};
  r.run.spec.repetitions = static_cast<int32_t>(rates.size());
  r.environment.kernel = "6.1.0";
  for (size_t i = 0; i < rates.size(); ++i) r.cells.push_back(Cell(target, static_cast<int32_t>(i + 1), rates[i], p99s[i]));
  return r;
}

// Catches: a drop of 10 % that every repetition shows (far beyond their
// spread) not called slower, not failing the 5 % gate, or its change
// computed the wrong way round.
TEST(CompareTest, ARealRegressionFailsTheGate) {
  CompareOptions o;
  o.fail_on_regression = 0.05;
  auto c = Compare(Record({1000, 1010, 990}, {5000, 5100, 4900}), Record({900, 905, 895}, {5000, 5050, 4950}), o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->cells.size(), 1u);
  const CellComparison& x = c->cells[0];
  EXPECT_NEAR(*x.rate_change, 900.0 / 1000 - 1, 1e-9);
  EXPECT_EQ(x.rate_verdict, "slower");
  EXPECT_LT(x.rate_test.p, 0.001);
  EXPECT_EQ(x.p99_verdict, "no significant change");
  EXPECT_TRUE(x.regression);
  ASSERT_EQ(c->regressions.size(), 1u);
  EXPECT_NE(c->regressions[0].find("drogon/hello/c100: requests/s -10.0 %"), std::string::npos) << c->regressions[0];
  EXPECT_EQ(x.method, "repetitions (n = 3 and 3)");
  // A 15 % gate is not passed by a 10 % drop.
  o.fail_on_regression = 0.15;
  EXPECT_TRUE(Compare(Record({1000, 1010, 990}, {5, 5, 5}), Record({900, 905, 895}, {5, 5, 5}), o)->regressions.empty());
}

// Catches: noise called a change (the gate failing on it): a 3 % lower mean
// within a spread of ±5 % is no significant change.
TEST(CompareTest, NoiseIsNoChange) {
  CompareOptions o;
  o.fail_on_regression = 0.02;
  auto c = Compare(Record({1000, 1050, 950}, {5000, 5500, 4500}), Record({970, 1020, 920}, {5200, 4700, 5600}), o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->cells[0].rate_verdict, "no significant change");
  EXPECT_GT(c->cells[0].rate_test.p, 0.05);
  EXPECT_TRUE(c->regressions.empty());
}

// Catches: one repetition per side compared as if the single figures were
// exact (no test), instead of over the per-second samples of the window;
// warmup intervals counted among them.
TEST(CompareTest, OneRepetitionUsesPerSecondSamples) {
  RunRecord a = Record({1000}, {5000});
  RunRecord b = Record({1200}, {4000});
  auto timeline = [](CellRecord& c, double rps) {
    TimelinePoint warm;
    warm.phase = Phase::kWarmup;
    warm.end_s = 1;
    warm.counters.requests = 1;  // would pull the mean far down if counted
    c.timeline.push_back(warm);
    for (int i = 0; i < 10; ++i) {
      TimelinePoint p;
      p.phase = Phase::kMeasure;
      p.start_s = 1 + i;
      p.end_s = 2 + i;
      p.counters.requests = static_cast<uint64_t>(rps + (i % 2 ? 10 : -10));
      p.p99_us = 5000;
      c.timeline.push_back(p);
    }
  };
  timeline(a.cells[0], 1000);
  timeline(b.cells[0], 1200);
  auto c = Compare(a, b);
  ASSERT_TRUE(c.ok());
  const CellComparison& x = c->cells[0];
  EXPECT_EQ(x.method, "per-second samples of one repetition (n = 10 and 10)");
  EXPECT_NEAR(x.base_rate.mean, 1000, 1e-9);
  EXPECT_NEAR(x.new_rate.mean, 1200, 1e-9);
  EXPECT_EQ(x.rate_verdict, "faster");
  EXPECT_NEAR(*x.rate_change, 0.2, 1e-9);
}

// Catches: differences of machine or settings left out (a change would be
// blamed on the server), or listed after the cells.
TEST(CompareTest, DifferencesOfEnvironmentComeFirst) {
  RunRecord a = Record({1000, 1010}, {5, 5});
  RunRecord b = Record({1000, 1010}, {5, 5});
  b.environment.kernel = "6.8.0";
  b.run.spec.load.duration = std::chrono::seconds(10);
  auto c = Compare(a, b);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->differences.size(), 2u);
  EXPECT_EQ(c->differences[0], "kernel: 6.1.0 → 6.8.0");
  EXPECT_EQ(c->differences[1], "settings of scenario hello differ: duration");
  const std::string md = RenderMarkdown(CompareDocument(*c, "a.json", "b.json", {}));
  EXPECT_LT(md.find("kernel: 6.1.0 → 6.8.0"), md.find("| drogon | hello |")) << md;
}

// Catches: two records with nothing in common "compared" as an empty table
// (a CI gate would pass on nothing).
TEST(CompareTest, NothingInCommonIsAnError) {
  auto c = Compare(Record({1000}, {5}, "drogon"), Record({1000}, {5}, "crow"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no succeeded cell in common"), std::string::npos);
}

}  // namespace
}  // namespace fairbench::report

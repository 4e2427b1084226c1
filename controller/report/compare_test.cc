// fairbench compare's verdicts on records built here, whose figures are
// known: a real regression, noise, per-second samples, differences of
// environment, nothing in common.
#include "controller/report/compare.h"

#include <gtest/gtest.h>

#include "controller/report/markdown.h"

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

RunRecord Record(const std::vector<double>& rates, const std::vector<double>& p99s,
                 const std::string& target = "drogon") {
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
  for (size_t i = 0; i < rates.size(); ++i)
    r.cells.push_back(Cell(target, static_cast<int32_t>(i + 1), rates[i], p99s[i]));
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
  EXPECT_TRUE(
      Compare(Record({1000, 1010, 990}, {5, 5, 5}), Record({900, 905, 895}, {5, 5, 5}), o)->regressions.empty());
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

// Newcombe (1998), "Two-sided confidence intervals for the single
// proportion", Table I, method 3 (Wilson's score interval), and 0 of n by
// hand: the upper end is z² ÷ (n + z²), 3.8415 ÷ 13.8415 = 0.2775 for n = 10.
// Catches: a Wald interval (p ± z·√(p(1−p)/n), which is 0–0 at k = 0), a z
// other than 1.96, or the continuity correction slipped in.
TEST(GateCalibrationTest, WilsonIntervalKnownAnswers) {
  struct Case {
    int k, n;
    double low, high;
  };
  for (const Case& c : {Case{81, 263, 0.2553, 0.3662}, Case{15, 148, 0.0624, 0.1605}, Case{0, 20, 0, 0.1611},
                        Case{1, 29, 0.0061, 0.1718}, Case{0, 10, 0, 0.2775}, Case{1, 10, 0.0179, 0.4042}}) {
    const FailureRate r = Wilson95(c.k, c.n);
    EXPECT_EQ(r.failed, c.k);
    EXPECT_EQ(r.pairs, c.n);
    EXPECT_NEAR(r.low, c.low, 5e-5) << c.k << "/" << c.n;
    EXPECT_NEAR(r.high, c.high, 5e-5) << c.k << "/" << c.n;
  }
  const FailureRate all = Wilson95(10, 10);
  EXPECT_NEAR(all.low, 1 - 0.2775, 5e-5);  // the mirror of 0 of 10
  EXPECT_EQ(all.high, 1);
}

// Three repetitions a run, a hair apart (±1 requests/s, ±10 µs), around a
// level that differs from run to run: every difference of level is
// significant, so a pair fails a gate exactly when its change passes the
// limit. The runs' levels, requests/s 1000, 1000, 970, 1050 and p99 5200,
// 5000, 5000, 5000 µs, give by hand, of the 12 ordered pairs (base → new):
//   requests/s down ≥ 2 %: 0→2, 1→2 (−3 %), 3→0, 3→1 (−4.8 %), 3→2 (−7.6 %): 5;
//   at 5 %: 3→2 only: 1;
//   p99 up ≥ 3 %: 1→0, 2→0, 3→0 (+4 %): 3;
//   either: the 5 and 1→0, 2→0: 7.
RunRecord Level(double rate, double p99) { return Record({rate - 1, rate, rate + 1}, {p99 - 10, p99, p99 + 10}); }

SameRuns FourRuns() {
  SameRuns s;
  s.names = {"r0", "r1", "r2", "r3"};
  s.records = {Level(1000, 5200), Level(1000, 5000), Level(970, 5000), Level(1050, 5000)};
  return s;
}

// Catches: pairs counted one way round only (6, not 12), a pair counted
// once per failing cell or gate, the either-gate count taken as a sum
// (8) instead of a union (7), or the calibration run with another gate.
TEST(GateCalibrationTest, CountsEachOrderedPairOncePerGate) {
  CompareOptions o;
  o.fail_on_regression = 0.02;
  o.fail_on_p99_regression = 0.03;
  auto c = Compare(Level(1000, 5000), Level(900, 5000), o);
  ASSERT_TRUE(c.ok());
  auto k = CalibrateGate(*c, {FourRuns()}, o);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->runs, 4);
  ASSERT_TRUE(k->rate && k->p99);
  EXPECT_EQ(k->rate->failed, 5);
  EXPECT_EQ(k->rate->pairs, 12);
  EXPECT_EQ(k->p99->failed, 3);
  EXPECT_EQ(k->any.failed, 7);
  EXPECT_EQ(k->any.pairs, 12);
  EXPECT_EQ(k->failures.size(), 8u);  // 5 requests/s and 3 p99 reasons
  EXPECT_NE(k->failures[0].find("r0 → r2: drogon/hello/c100: requests/s -3.0 %"), std::string::npos) << k->failures[0];

  o.fail_on_p99_regression.reset();
  o.fail_on_regression = 0.05;
  k = CalibrateGate(*c, {FourRuns()}, o);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->rate->failed, 1);
  EXPECT_FALSE(k->p99);
  EXPECT_EQ(k->any.failed, 1);
  o.fail_on_regression = 0.10;
  k = CalibrateGate(*c, {FourRuns()}, o);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->any.failed, 0);
  EXPECT_EQ(k->any.high, Wilson95(0, 12).high);
}

// Catches: the report silent on the false-positive rate (with calibration:
// the counts and interval missing; without: no "not measured").
TEST(GateCalibrationTest, TheReportStatesTheRateOrThatItIsNotMeasured) {
  CompareOptions o;
  o.fail_on_regression = 0.02;
  auto c = Compare(Level(1000, 5000), Level(900, 5000), o);
  ASSERT_TRUE(c.ok());
  std::string md = RenderMarkdown(CompareDocument(*c, "a.json", "b.json", o));
  EXPECT_NE(md.find("False-positive rate not measured"), std::string::npos) << md;
  EXPECT_TRUE(CompareJson(*c, o)["gate"]["falsePositiveRate"].is_null());
  auto k = CalibrateGate(*c, {FourRuns()}, o);
  ASSERT_TRUE(k.ok());
  c->calibration = *k;
  md = RenderMarkdown(CompareDocument(*c, "a.json", "b.json", o));
  // 5 of 12 is 41.7 %; Wilson: centre (5/12 + 1.9208/12) ÷ 1.3201 = 0.4369,
  // half-width 1.96 ÷ 1.3201 × √(0.2431/12 + 3.8415/576) = 0.2436.
  EXPECT_NE(md.find("The requests/s gate at 2.0 % failed 5 of 12 same-versus-same comparisons (41.7 %, 95 % "
                    "interval 19.3–68.0 %)"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("not measured"), std::string::npos);
  const auto j = CompareJson(*c, o)["gate"]["falsePositiveRate"];
  EXPECT_EQ(j["requestsPerSecond"]["failed"], 5);
  EXPECT_EQ(j["requestsPerSecond"]["pairs"], 12);
  EXPECT_TRUE(j["p99Us"].is_null());
}

// Catches: a calibration that cannot measure this gate accepted: one run
// (no pair), a run without a compared cell (a rate of other cells), no
// gate, or single-repetition runs (per-second samples, another test)
// calibrating a comparison over repetitions.
TEST(GateCalibrationTest, RunsThatCannotCalibrateAreNamed) {
  CompareOptions o;
  o.fail_on_regression = 0.02;
  auto c = Compare(Level(1000, 5000), Level(900, 5000), o);
  ASSERT_TRUE(c.ok());
  auto expect_error = [&](const std::vector<SameRuns>& groups, const CompareOptions& opts, const std::string& needle) {
    auto k = CalibrateGate(*c, groups, opts);
    ASSERT_FALSE(k.ok()) << needle;
    EXPECT_NE(k.status().message().find(needle), std::string::npos) << k.status().message();
  };
  expect_error({SameRuns{{"only.json"}, {Level(1000, 5000)}}}, o, "only one same-versus-same run (only.json)");
  expect_error({SameRuns{{"a.json", "crow.json"}, {Level(1000, 5000), Record({1, 2, 3}, {4, 5, 6}, "crow")}}}, o,
               "crow.json: no succeeded cell drogon/hello/c100");
  expect_error({FourRuns()}, CompareOptions{}, "no gate to calibrate");
  expect_error({SameRuns{{"x.json", "y.json"}, {Record({1000}, {5000}), Record({990}, {5000})}}}, o,
               "compared over per-second samples");
}

// Catches: halves taken in the records' order of cells rather than by
// repetition number, a half with fewer than two repetitions accepted, or
// the split pairs counted across runs (A's half against B's).
TEST(GateCalibrationTest, RepetitionsSplitInHalves) {
  CompareOptions o;
  o.fail_on_regression = 0.02;
  // Repetitions 1–3 at 1000, 4–6 at 950 (a drift of −5 %), stored shuffled.
  RunRecord a = Record({950, 1000, 951, 1001, 949, 999}, {5000, 5000, 5000, 5000, 5000, 5000});
  const int32_t reps[] = {4, 1, 5, 2, 6, 3};
  for (size_t i = 0; i < a.cells.size(); ++i) a.cells[i].result.repetition = reps[i];
  RunRecord b = Record({1000, 1001, 999, 1000, 1001, 999}, {5000, 5000, 5000, 5000, 5000, 5000});
  auto c = Compare(a, b, o);
  ASSERT_TRUE(c.ok());
  auto ha = SplitRepetitions(*c, a, "a.json");
  auto hb = SplitRepetitions(*c, b, "b.json");
  ASSERT_TRUE(ha.ok() && hb.ok()) << ha.status().ToString() << hb.status().ToString();
  ASSERT_EQ(ha->records.size(), 2u);
  EXPECT_EQ(Compare(ha->records[0], ha->records[0])->cells[0].base_rate.mean, 1000);
  EXPECT_EQ(Compare(ha->records[1], ha->records[1])->cells[0].base_rate.mean, 950);
  auto k = CalibrateGate(*c, {*ha, *hb}, o);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->any.pairs, 4);   // a1→a2, a2→a1, b1→b2, b2→b1
  EXPECT_EQ(k->any.failed, 1);  // a1→a2, −5 %
  auto few = SplitRepetitions(*c, Level(1000, 5000), "three.json");
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("three.json: cell drogon/hello/c100 has 3 succeeded repetitions"),
            std::string::npos)
      << few.status().message();
}

}  // namespace
}  // namespace fairbench::report

// RunTotals: what it keeps, and that leaving the timeline out changes
// nothing else.
#include "common/wrk_summary.h"

#include <gtest/gtest.h>

namespace fairbench {
namespace {

Snapshot MakeSnapshot(uint64_t sequence, Phase phase, uint64_t requests) {
  Snapshot s;
  s.sequence = sequence;
  s.phase = phase;
  s.start_ns = static_cast<int64_t>(sequence - 1) * 1'000'000'000;
  s.end_ns = s.start_ns + 1'000'000'000;
  s.stats.counters.requests = requests;
  s.stats.counters.status_classes[2] = requests;
  for (uint64_t i = 0; i < requests; ++i) s.stats.latency.Record(static_cast<int64_t>(100 + i * 7 % 900));
  for (int i = 0; i < 10; ++i) s.stats.rate_samples.push_back(static_cast<double>(requests * 10 + i));
  s.connections_open = 4;
  s.cpu_seconds = 0.25;
  return s;
}

// Catches: a timeline kept although it was switched off (memory that grows
// with the run's length for nothing), and the measure-phase totals skipped
// or counted twice along with it.
TEST(RunTotalsTest, WithoutTheTimelineTheTotalsAndTheSummaryAreTheSame) {
  RunTotals with;
  RunTotals without;
  without.set_keep_timeline(false);
  without.Reserve(8, 100);
  const std::vector<Snapshot> snaps = {MakeSnapshot(1, Phase::kWarmup, 50), MakeSnapshot(2, Phase::kMeasure, 120),
                                       MakeSnapshot(3, Phase::kMeasure, 130), MakeSnapshot(4, Phase::kMeasure, 90)};
  for (const Snapshot& s : snaps) {
    with.Add(s);
    without.Add(s);
  }
  ASSERT_EQ(with.timeline().size(), 4u);
  EXPECT_EQ(with.timeline()[0].phase, Phase::kWarmup);
  EXPECT_EQ(with.timeline()[3].counters.requests, 90u);
  EXPECT_TRUE(without.timeline().empty());

  // Only the measure phase counts: 120 + 130 + 90 requests, 30 samples.
  EXPECT_EQ(without.measure().counters.requests, 340u);
  EXPECT_EQ(without.measure().counters, with.measure().counters);
  EXPECT_EQ(without.measure().latency.count(), 340u);
  EXPECT_EQ(without.measure().rate_samples, with.measure().rate_samples);
  EXPECT_EQ(without.measure().rate_samples.size(), 30u);
  EXPECT_DOUBLE_EQ(without.agent_cpu_seconds(), 0.75);

  SummaryContext ctx;
  ctx.url = "http://127.0.0.1:8080/";
  ctx.threads = 1;
  ctx.connections = 4;
  ctx.duration_s = 3;
  EndReport end;
  end.measure_seconds = 3;
  EXPECT_EQ(RenderText(ctx, without, end), RenderText(ctx, with, end));
  nlohmann::json a = RenderJson(ctx, with, end);
  nlohmann::json b = RenderJson(ctx, without, end);
  EXPECT_EQ(a["timeline"].size(), 4u);
  EXPECT_TRUE(b["timeline"].empty());
  a.erase("timeline");
  b.erase("timeline");
  EXPECT_EQ(a, b);
}

// Catches: sampled answers (a scenario with vary) summed wrong across
// snapshots, or missing from the text and the JSON — and their line shown
// for a run without vary.
TEST(RunTotalsTest, AnswersAreSummedAndShown) {
  RunTotals totals;
  Snapshot a = MakeSnapshot(1, Phase::kMeasure, 100);
  a.stats.counters.answers = AnswerCounts{10, 1, 2, 0};
  Snapshot b = MakeSnapshot(2, Phase::kMeasure, 100);
  b.stats.counters.answers = AnswerCounts{10, 0, 3, 1};
  totals.Add(a);
  totals.Add(b);
  EXPECT_EQ(totals.measure().counters.answers, (AnswerCounts{20, 1, 5, 1}));
  SummaryContext ctx;
  ctx.url = "http://127.0.0.1:8080/echo/{n}";
  ctx.threads = 1;
  ctx.connections = 4;
  ctx.duration_s = 2;
  EndReport end;
  end.measure_seconds = 2;
  EXPECT_NE(RenderText(ctx, totals, end)
                .find("Answers sampled and verified: 20, of which 1 differed from what their requests asked for, 5 "
                      "without Date, Date frozen\n"),
            std::string::npos)
      << RenderText(ctx, totals, end);
  const nlohmann::json j = RenderJson(ctx, totals, end);
  EXPECT_EQ(j["answers"]["verified"], 20);
  EXPECT_EQ(j["answers"]["failed"], 1);
  RunTotals plain;
  plain.Add(MakeSnapshot(1, Phase::kMeasure, 100));
  EXPECT_EQ(RenderText(ctx, plain, end).find("Answers"), std::string::npos);
  EXPECT_FALSE(RenderJson(ctx, plain, end).contains("answers"));
}

}  // namespace
}  // namespace fairbench

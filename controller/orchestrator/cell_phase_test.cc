#include "controller/orchestrator/cell_phase.h"

#include <gtest/gtest.h>

#include <vector>

namespace fairbench::controller {
namespace {

using namespace std::chrono_literals;

const Clock::Steady kT0{std::chrono::seconds(1000)};

// A cell starting at kT0 + 100 ms with 2 s of warmup, 5 s measured and 3 s
// of grace.
CellTimeline Timeline() { return MakeCellTimeline(kT0 + 100ms, 2s, 5s, 3s); }

// Steps the machine at `now` until it stays, as the orchestrator does.
CellPhase StepAll(CellPhase p, const CellTimeline& t, Clock::Steady now, std::vector<CellPhase>* entered = nullptr) {
  for (CellPhase next = NextPhase(p, t, now); next != p; next = NextPhase(p, t, now)) {
    p = next;
    if (entered != nullptr) entered->push_back(p);
  }
  return p;
}

// Catches: an edge of the timeline computed from the wrong base (the
// warmup added to the send time instead of the start, the grace to the
// start instead of the window's end).
TEST(CellPhase, TheTimelineFollowsTheSettings) {
  const CellTimeline t = Timeline();
  EXPECT_EQ(t.start, kT0 + 100ms);
  EXPECT_EQ(t.measure_start, kT0 + 2100ms);
  EXPECT_EQ(t.measure_end, kT0 + 7100ms);
  EXPECT_EQ(t.deadline, kT0 + 10100ms);
}

// Catches: a phase entered before its edge (the usage of the warmup taken
// as measured), the window's end itself not measured (the old rule: the
// window is [start, end]), a phase skipped.
TEST(CellPhase, EachPhaseBeginsAtItsEdge) {
  const CellTimeline t = Timeline();
  EXPECT_EQ(StepAll(CellPhase::kScheduled, t, kT0), CellPhase::kScheduled);
  EXPECT_EQ(StepAll(CellPhase::kScheduled, t, t.start - 1ns), CellPhase::kScheduled);
  EXPECT_EQ(StepAll(CellPhase::kScheduled, t, t.start), CellPhase::kWarmingUp);
  EXPECT_EQ(StepAll(CellPhase::kWarmingUp, t, t.measure_start - 1ns), CellPhase::kWarmingUp);
  EXPECT_EQ(StepAll(CellPhase::kWarmingUp, t, t.measure_start), CellPhase::kMeasuring);
  EXPECT_EQ(StepAll(CellPhase::kMeasuring, t, t.measure_end), CellPhase::kMeasuring);
  EXPECT_EQ(StepAll(CellPhase::kMeasuring, t, t.measure_end + 1ns), CellPhase::kDraining);
  EXPECT_EQ(StepAll(CellPhase::kDraining, t, t.deadline + 1h), CellPhase::kDraining);
}

// A tick that comes late passes through every phase in between, once each
// and in order, so entering kMeasuring (the status's stage) is never
// skipped. Catches: a jump straight to the phase of `now`.
TEST(CellPhase, ALateTickEntersEveryPhaseInOrder) {
  std::vector<CellPhase> entered;
  EXPECT_EQ(StepAll(CellPhase::kScheduled, Timeline(), kT0 + 1h, &entered), CellPhase::kDraining);
  EXPECT_EQ(entered, (std::vector<CellPhase>{CellPhase::kWarmingUp, CellPhase::kMeasuring, CellPhase::kDraining}));
  // No warmup: the window opens with the load.
  entered.clear();
  const CellTimeline cold = MakeCellTimeline(kT0, 0s, 1s, 1s);
  EXPECT_EQ(StepAll(CellPhase::kScheduled, cold, kT0, &entered), CellPhase::kMeasuring);
  EXPECT_EQ(entered, (std::vector<CellPhase>{CellPhase::kWarmingUp, CellPhase::kMeasuring}));
}

// Catches: a run stopped while its jobs were scheduled or warming up
// recorded as measuring, or the reverse.
TEST(CellPhase, TheStageOfEachPhase) {
  EXPECT_EQ(StageOf(CellPhase::kScheduled), api::Stage::kWarmingUp);
  EXPECT_EQ(StageOf(CellPhase::kWarmingUp), api::Stage::kWarmingUp);
  EXPECT_EQ(StageOf(CellPhase::kMeasuring), api::Stage::kMeasuring);
  EXPECT_EQ(StageOf(CellPhase::kDraining), api::Stage::kMeasuring);
}

// What an interrupted run's record says (orchestrator_test checks the
// whole sentence). Catches: the warmup's progress counted from the send
// time (it would read 0.6 s), the measured time not capped at the window
// once draining, the totals not the settings'.
TEST(CellPhase, ProgressSaysHowFarTheLoadGot) {
  const CellTimeline t = Timeline();
  EXPECT_EQ(Progress(CellPhase::kScheduled, t, kT0 + 50ms), "the load had not started");
  EXPECT_EQ(Progress(CellPhase::kWarmingUp, t, t.start + 500ms), "0.5 s of the 2.0 s warmup");
  EXPECT_EQ(Progress(CellPhase::kMeasuring, t, t.measure_start + 1200ms), "1.2 s of 5.0 s measured");
  EXPECT_EQ(Progress(CellPhase::kDraining, t, t.measure_end + 2s), "5.0 s of 5.0 s measured");
}

}  // namespace
}  // namespace fairbench::controller

// CellPhase: where one cell's load is, as an explicit state machine (wrk's
// connection is the model). The orchestrator sends the jobs ahead of the
// load's start, so that every agent has its connections open in time:
//
//   kScheduled ──start──▶ kWarmingUp ──measure_start──▶ kMeasuring
//        ──measure_end──▶ kDraining (the agents' last reports) ──▶ the cell ends
//
// The agents' outcome (done, failed), a cancel, a lost slot, a target gone
// or the deadline end the cell in any phase; what the cell does on each
// tick (sample the target's usage in kMeasuring only, show live numbers
// once the load runs) and what an interrupted run's record says depend on
// the phase alone. Times are on the orchestrator's clock. Pure functions.
#pragma once

#include <string>

#include "api/benchmark_run.h"
#include "common/clock.h"

namespace fairbench::controller {

enum class CellPhase { kScheduled, kWarmingUp, kMeasuring, kDraining };

// The edges of one cell's load.
struct CellTimeline {
  Clock::Steady start;          // the agents begin (jobs sent a lead before)
  Clock::Steady measure_start;  // start + warmup
  Clock::Steady measure_end;    // measure_start + duration
  Clock::Steady deadline;       // the controller gives up waiting for the agents
};

CellTimeline MakeCellTimeline(Clock::Steady start, std::chrono::nanoseconds warmup, std::chrono::nanoseconds duration,
                              std::chrono::nanoseconds grace);

// The phase after `phase` once `now` has come: one step at most (the
// caller steps until the phase stays, running each entry once).
CellPhase NextPhase(CellPhase phase, const CellTimeline& t, Clock::Steady now);

// The stage a BenchmarkRun's status shows for the phase: the load's
// warmup until the window opens, measuring from then on.
api::Stage StageOf(CellPhase phase);

// How far the load got, for the record of an interrupted run: "the load
// had not started", "1.2 s of the 5.0 s warmup", "3.4 s of 10.0 s measured".
std::string Progress(CellPhase phase, const CellTimeline& t, Clock::Steady now);

}  // namespace fairbench::controller

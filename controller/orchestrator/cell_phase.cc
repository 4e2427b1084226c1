#include "controller/orchestrator/cell_phase.h"

#include <algorithm>
#include <cstdio>

namespace fairbench::controller {
namespace {

std::string Seconds(Clock::Steady::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::max(0.0, std::chrono::duration<double>(d).count()));
  return text;
}

}  // namespace

CellTimeline MakeCellTimeline(Clock::Steady start, std::chrono::nanoseconds warmup, std::chrono::nanoseconds duration,
                              std::chrono::nanoseconds grace) {
  CellTimeline t;
  t.start = start;
  t.measure_start = start + warmup;
  t.measure_end = t.measure_start + duration;
  t.deadline = t.measure_end + grace;
  return t;
}

CellPhase NextPhase(CellPhase phase, const CellTimeline& t, Clock::Steady now) {
  switch (phase) {
    case CellPhase::kScheduled: return now >= t.start ? CellPhase::kWarmingUp : phase;
    case CellPhase::kWarmingUp: return now >= t.measure_start ? CellPhase::kMeasuring : phase;
    case CellPhase::kMeasuring: return now > t.measure_end ? CellPhase::kDraining : phase;
    case CellPhase::kDraining: return phase;
  }
  return phase;
}

api::Stage StageOf(CellPhase phase) {
  switch (phase) {
    case CellPhase::kScheduled:
    case CellPhase::kWarmingUp: return api::Stage::kWarmingUp;
    case CellPhase::kMeasuring:
    case CellPhase::kDraining: return api::Stage::kMeasuring;
  }
  return api::Stage::kMeasuring;
}

std::string Progress(CellPhase phase, const CellTimeline& t, Clock::Steady now) {
  switch (phase) {
    case CellPhase::kScheduled: return "the load had not started";
    case CellPhase::kWarmingUp:
      return Seconds(now - t.start) + " of the " + Seconds(t.measure_start - t.start) + " warmup";
    case CellPhase::kMeasuring:
    case CellPhase::kDraining:
      return Seconds(std::min(now, t.measure_end) - t.measure_start) + " of " +
             Seconds(t.measure_end - t.measure_start) + " measured";
  }
  return "";
}

}  // namespace fairbench::controller

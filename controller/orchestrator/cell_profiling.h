// CellProfiling: spec.profile for one cell. The orchestrator ticks it from
// its wait loop; it starts the platform's sampling when the measured window
// opens and stops it when the window closes, so the warmup and the drain
// after the load are never in a profile.
//
// A profile that cannot be taken (the platform has none, perf is missing or
// not permitted) is a profile that says why; the cell goes on. Destroying
// it unfinished (a failed or cancelled cell) discards the sampling.
//
// Used from the orchestrator's thread only.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>

#include "common/clock.h"
#include "controller/report/profile.h"
#include "controller/platform/platform.h"

namespace fairbench::controller {

class CellProfiling {
 public:
  // Does nothing unless `wanted`.
  CellProfiling(TargetInstance& instance, bool wanted, int32_t frequency_hz, Clock::Steady measure_start,
                Clock::Steady measure_end);

  // When Tick must next run (the window's start or end); max() when never.
  Clock::Steady NextEdge() const;
  // Starts sampling once the window has opened, stops it once it closed.
  void Tick(Clock::Steady now, std::stop_token stop);
  // The cell's profile: stops sampling if it still runs. nullopt unless wanted.
  std::optional<report::CellProfile> Finish(std::stop_token stop);

 private:
  enum class Phase { kOff, kWaiting, kSampling, kDone };
  TargetInstance& instance_;
  Phase phase_;
  int32_t frequency_hz_;
  Clock::Steady start_, end_;
  std::unique_ptr<ProfileSession> session_;
  std::optional<report::CellProfile> profile_;
};

}  // namespace fairbench::controller

#include "controller/orchestrator/cell_profiling.h"

namespace fairbench::controller {

CellProfiling::CellProfiling(TargetInstance& instance, bool wanted, int32_t frequency_hz, Clock::Steady measure_start,
                             Clock::Steady measure_end)
    : instance_(instance),
      phase_(wanted ? Phase::kWaiting : Phase::kOff),
      frequency_hz_(frequency_hz),
      start_(measure_start),
      end_(measure_end) {}

Clock::Steady CellProfiling::NextEdge() const {
  switch (phase_) {
    case Phase::kWaiting: return start_;
    case Phase::kSampling: return end_;
    default: return Clock::Steady::max();
  }
}

void CellProfiling::Tick(Clock::Steady now, std::stop_token stop) {
  if (phase_ == Phase::kWaiting && now >= start_) {
    ProfileRequest request;
    request.frequency_hz = frequency_hz_;
    // Its own bound: the window plus a margin, should nobody stop it.
    request.max_duration = std::chrono::duration_cast<std::chrono::nanoseconds>(end_ - now) + std::chrono::seconds(10);
    auto session = instance_.StartProfile(request);
    if (session.ok()) {
      session_ = std::move(*session);
      phase_ = Phase::kSampling;
    } else {
      report::CellProfile p;
      p.state = report::ProfileState::kUnavailable;
      p.message = session.status().message();
      p.frequency_hz = frequency_hz_;
      profile_ = std::move(p);
      phase_ = Phase::kDone;
    }
  }
  if (phase_ == Phase::kSampling && now >= end_) {
    profile_ = session_->Finish(stop);
    session_.reset();
    phase_ = Phase::kDone;
  }
}

std::optional<report::CellProfile> CellProfiling::Finish(std::stop_token stop) {
  if (phase_ == Phase::kOff) return std::nullopt;
  if (phase_ == Phase::kSampling) {
    profile_ = session_->Finish(stop);
    session_.reset();
  } else if (phase_ == Phase::kWaiting) {
    report::CellProfile p;
    p.state = report::ProfileState::kFailed;
    p.message = "the cell ended before its measured window opened";
    p.frequency_hz = frequency_hz_;
    profile_ = std::move(p);
  }
  phase_ = Phase::kDone;
  return profile_;
}

}  // namespace fairbench::controller

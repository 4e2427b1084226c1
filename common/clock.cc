#include "common/clock.h"

#include <algorithm>
#include <optional>

namespace fairbench {
namespace {

// The Hold the calling thread stands for (Hold::Bind), if any.
thread_local const FakeClock::Hold* bound_hold = nullptr;

}  // namespace

bool SystemClock::SleepFor(std::chrono::nanoseconds d, std::stop_token stop) {
  if (d <= std::chrono::nanoseconds::zero()) return !stop.stop_requested();
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> lock(m);
  return !cv.wait_for(lock, stop, d, [] { return false; }) && !stop.stop_requested();
}

SystemClock& SystemClock::Instance() {
  static SystemClock clock;
  return clock;
}

FakeClock::Hold::Hold(FakeClock& clock) : clock_(clock) {
  std::lock_guard<std::mutex> lock(clock_.mu_);
  ++clock_.awake_holds_;
}

FakeClock::Hold::~Hold() {
  if (bound_hold == this) bound_hold = nullptr;
  std::lock_guard<std::mutex> lock(clock_.mu_);
  --clock_.awake_holds_;
  clock_.AdvanceIfIdle();
}

void FakeClock::Hold::Bind() { bound_hold = this; }

FakeClock::FakeClock(Mode mode)
    : mode_(mode),
      steady_base_(std::chrono::steady_clock::now()),
      // A fixed, readable wall time makes timestamps in test failures obvious.
      wall_base_(std::chrono::system_clock::from_time_t(1782900000)) {}

Clock::Steady FakeClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return steady_base_ + offset_;
}

Clock::Wall FakeClock::WallNow() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wall_base_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(offset_);
}

bool FakeClock::SleepFor(std::chrono::nanoseconds d, std::stop_token stop) {
  if (mode_ == Mode::kOnSleep || d <= std::chrono::nanoseconds::zero()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (d > std::chrono::nanoseconds::zero()) {
      slept_ += d;
      if (mode_ == Mode::kOnSleep) {
        offset_ += d;
        WakeDue();
      }
    }
    return !stop.stop_requested();
  }
  Sleeper me;
  me.held = bound_hold != nullptr && &bound_hold->clock_ == this;
  // Made before the lock is taken: with `stop` already requested it runs at
  // once, on this thread.
  std::stop_callback wake(stop, [this, &me] {
    std::lock_guard<std::mutex> l(mu_);
    Wake(me);
  });
  std::unique_lock<std::mutex> lock(mu_);
  slept_ += d;
  if (me.woken) return false;
  me.until = offset_ + d;
  me.registered = true;
  sleepers_.push_back(&me);
  if (me.held) --awake_holds_;
  AdvanceIfIdle();
  cv_.wait(lock, [&] { return me.woken; });
  sleepers_.erase(std::find(sleepers_.begin(), sleepers_.end(), &me));
  return !stop.stop_requested();
}

void FakeClock::Wake(Sleeper& s) {
  if (s.woken) return;
  s.woken = true;
  // A held thread is awake again from this moment, not from when it gets
  // to run: time must not go on before it has.
  if (s.registered && s.held) ++awake_holds_;
  cv_.notify_all();
}

void FakeClock::WakeDue() {
  for (Sleeper* s : sleepers_) {
    if (!s->woken && s->until <= offset_) Wake(*s);
  }
}

void FakeClock::AdvanceIfIdle() {
  if (mode_ != Mode::kWhenIdle || awake_holds_ > 0) return;
  std::optional<std::chrono::nanoseconds> next;
  for (const Sleeper* s : sleepers_) {
    if (!s->woken && (!next || s->until < *next)) next = s->until;
  }
  if (!next) return;
  offset_ = std::max(offset_, *next);
  WakeDue();
}

void FakeClock::Advance(std::chrono::nanoseconds d) {
  std::lock_guard<std::mutex> lock(mu_);
  offset_ += d;
  WakeDue();
}

int FakeClock::sleepers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(
      std::count_if(sleepers_.begin(), sleepers_.end(), [](const Sleeper* s) { return !s->woken; }));
}

std::chrono::nanoseconds FakeClock::slept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slept_;
}

}  // namespace fairbench

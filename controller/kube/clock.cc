#include "controller/kube/clock.h"
#include "common/mutex.h"

#include <thread>

namespace fairbench::kube {

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

FakeClock::FakeClock(bool auto_advance)
    : auto_advance_(auto_advance),
      steady_base_(std::chrono::steady_clock::now()),
      // A fixed, readable wall time makes timestamps in test failures obvious.
      wall_base_(std::chrono::system_clock::from_time_t(1782900000)) {}

Clock::Steady FakeClock::Now() const {
  MutexLock lock(mu_);
  return steady_base_ + offset_;
}

Clock::Wall FakeClock::WallNow() const {
  MutexLock lock(mu_);
  return wall_base_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(offset_);
}

bool FakeClock::SleepFor(std::chrono::nanoseconds d, std::stop_token stop) {
  MutexLock lock(mu_);
  slept_ += d;
  if (auto_advance_) {
    offset_ += d;
    cv_.notify_all();
    return !stop.stop_requested();
  }
  auto until = offset_ + d;
  ++sleepers_;
  std::stop_callback wake(stop, [this] {
    MutexLock l(mu_);
    cv_.notify_all();
  });
  cv_.wait(lock, [&]() REQUIRES(mu_) { return offset_ >= until || stop.stop_requested(); });
  --sleepers_;
  return !stop.stop_requested();
}

void FakeClock::Advance(std::chrono::nanoseconds d) {
  MutexLock lock(mu_);
  offset_ += d;
  cv_.notify_all();
}

int FakeClock::sleepers() const {
  MutexLock lock(mu_);
  return sleepers_;
}

std::chrono::nanoseconds FakeClock::slept() const {
  MutexLock lock(mu_);
  return slept_;
}

}  // namespace fairbench::kube

// Clock: the time seam of the Kubernetes client. Leader election, the load
// slot, token-file refresh and retry backoff read time and sleep only
// through it, so tests drive them with a FakeClock instead of waiting.
//
// SystemClock is stateless. FakeClock is thread-safe: sleepers block until
// another thread advances the time past their deadline (or, in auto-advance
// mode, a sleep advances the time itself and returns at once).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

#include "common/mutex.h"

namespace fairbench::kube {

class Clock {
 public:
  using Steady = std::chrono::steady_clock::time_point;
  using Wall = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  // Monotonic time: all durations (lease expiry, backoff) are measured on it.
  virtual Steady Now() const = 0;
  // Wall time: only for timestamps written into objects.
  virtual Wall WallNow() const = 0;
  // Sleeps for `d`; returns false early if `stop` is requested.
  virtual bool SleepFor(std::chrono::nanoseconds d, std::stop_token stop = {}) = 0;
};

class SystemClock final : public Clock {
 public:
  Steady Now() const override { return std::chrono::steady_clock::now(); }
  Wall WallNow() const override { return std::chrono::system_clock::now(); }
  bool SleepFor(std::chrono::nanoseconds d, std::stop_token stop = {}) override;
  // One shared instance for the common case.
  static SystemClock& Instance();
};

class FakeClock final : public Clock {
 public:
  // auto_advance: SleepFor moves the time forward and returns immediately.
  explicit FakeClock(bool auto_advance = false);
  Steady Now() const override;
  Wall WallNow() const override;
  bool SleepFor(std::chrono::nanoseconds d, std::stop_token stop = {}) override;
  void Advance(std::chrono::nanoseconds d);
  // Threads currently blocked in SleepFor (tests wait for them to settle).
  int sleepers() const;
  // Total time passed to SleepFor (what a retry loop would have waited).
  std::chrono::nanoseconds slept() const;

 private:
  const bool auto_advance_;
  mutable Mutex mu_;
  CondVar cv_;
  std::chrono::nanoseconds offset_ GUARDED_BY(mu_){0};
  std::chrono::nanoseconds slept_ GUARDED_BY(mu_){0};
  int sleepers_ GUARDED_BY(mu_) = 0;
  const Steady steady_base_;
  const Wall wall_base_;
};

}  // namespace fairbench::kube

// Clock: the time seam (LevelDB's Env, for time). Whatever measures a
// duration or waits on one — the orchestrator's cells, leader election,
// the load slot, token-file refresh, retry backoff — reads time and sleeps
// only through a Clock, so tests drive it with a FakeClock instead of
// waiting.
//
// SystemClock is stateless. FakeClock is thread-safe; its time moves in one
// of three ways (FakeClock::Mode):
//   kManual    only Advance() moves it: a sleeper blocks until the time
//              passes its deadline (or its stop token is stopped);
//   kOnSleep   every SleepFor moves it by its own length and returns at once
//              (a retry loop's waits are recorded, never waited);
//   kWhenIdle  it stands still while any Hold is awake; once every Hold is
//              asleep on the clock (or there is none) it jumps to the
//              earliest deadline of the sleepers and wakes them — as Tokio's
//              paused clock does. Tests of several threads (an orchestrator,
//              fake agents, the test itself) run in virtual time: each
//              thread whose work must come before time goes on holds it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <vector>

namespace fairbench {

class Clock {
 public:
  using Steady = std::chrono::steady_clock::time_point;
  using Wall = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  // Monotonic time: all durations (lease expiry, backoff, a cell's phases)
  // are measured on it.
  virtual Steady Now() const = 0;
  // Wall time: timestamps written into objects and records, and the start
  // time given to agents (which run on other machines' clocks).
  virtual Wall WallNow() const = 0;
  // Sleeps for `d`; returns false early if `stop` is requested (and false
  // if it already was).
  virtual bool SleepFor(std::chrono::nanoseconds d, std::stop_token stop = {}) = 0;
  // Sleeps until `t` on this clock (at once when it has passed).
  bool SleepUntil(Steady t, std::stop_token stop = {}) { return SleepFor(t - Now(), std::move(stop)); }
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
  enum class Mode { kManual, kOnSleep, kWhenIdle };

  // With kWhenIdle: a thread that must act before time goes on. It counts
  // as awake from its construction (so a thread about to start cannot be
  // overtaken); the thread it stands for calls Bind(), and its sleeps on the
  // clock then let time go on. Destroyed by that thread, never while it
  // sleeps; a thread that is going to wait for another thread (join) lets
  // its Hold go first, or time would stand still for good.
  class Hold {
   public:
    explicit Hold(FakeClock& clock);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    void Bind();

   private:
    friend class FakeClock;
    FakeClock& clock_;
  };

  explicit FakeClock(Mode mode = Mode::kManual);
  Steady Now() const override;
  Wall WallNow() const override;
  bool SleepFor(std::chrono::nanoseconds d, std::stop_token stop = {}) override;
  // Moves the time forward (any mode) and wakes the sleepers it passes.
  void Advance(std::chrono::nanoseconds d);
  // Threads currently blocked in SleepFor (tests wait for them to settle).
  int sleepers() const;
  // Total time passed to SleepFor (what a retry loop would have waited).
  std::chrono::nanoseconds slept() const;

 private:
  struct Sleeper {
    std::chrono::nanoseconds until{0};
    bool held = false;        // its thread is bound to a Hold of this clock
    bool registered = false;  // in sleepers_
    bool woken = false;
  };
  void Wake(Sleeper& s);  // mu_ held
  void WakeDue();         // mu_ held: every sleeper whose deadline has passed
  void AdvanceIfIdle();   // mu_ held: kWhenIdle's jump

  const Mode mode_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::chrono::nanoseconds offset_{0};  // guarded by mu_
  std::chrono::nanoseconds slept_{0};   // guarded by mu_
  std::vector<Sleeper*> sleepers_;      // guarded by mu_; those registered, woken or not
  int awake_holds_ = 0;                 // guarded by mu_
  const Steady steady_base_;
  const Wall wall_base_;
};

}  // namespace fairbench

#include "common/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace fairbench {
namespace {

using namespace std::chrono_literals;

// Catches: a manual clock that wakes a sleeper before its deadline, or
// never.
TEST(FakeClock, SleepersWakeWhenTimeIsAdvanced) {
  FakeClock clock;
  auto start = clock.Now();
  std::thread sleeper([&] { EXPECT_TRUE(clock.SleepFor(10s)); });
  while (clock.sleepers() == 0) std::this_thread::yield();
  clock.Advance(5s);
  EXPECT_EQ(clock.sleepers(), 1);
  clock.Advance(5s);
  sleeper.join();
  EXPECT_EQ(clock.Now() - start, 10s);
}

// Catches: a stop token that does not end a sleep.
TEST(FakeClock, StopTokenEndsASleep) {
  FakeClock clock;
  std::stop_source stop;
  std::thread sleeper([&] { EXPECT_FALSE(clock.SleepFor(1h, stop.get_token())); });
  while (clock.sleepers() == 0) std::this_thread::yield();
  stop.request_stop();
  sleeper.join();
}

// Catches: a sleep with a token stopped beforehand that blocks (its stop
// callback runs at once, on the sleeping thread) instead of returning false.
TEST(FakeClock, AStoppedTokenReturnsAtOnce) {
  for (auto mode : {FakeClock::Mode::kManual, FakeClock::Mode::kWhenIdle}) {
    FakeClock clock(mode);
    std::stop_source stop;
    stop.request_stop();
    const auto start = clock.Now();
    EXPECT_FALSE(clock.SleepFor(1h, stop.get_token()));
    EXPECT_EQ(clock.Now(), start);
  }
}

// Catches: kOnSleep not recording what was slept, or not moving both clocks.
TEST(FakeClock, OnSleepRecordsWhatWasSlept) {
  FakeClock clock(FakeClock::Mode::kOnSleep);
  auto wall = clock.WallNow();
  clock.SleepFor(3s);
  EXPECT_EQ(clock.slept(), 3s);
  EXPECT_EQ(clock.WallNow() - wall, 3s);
}

// Catches: an idle clock that does not jump (a lone sleeper would block
// for good), or jumps by anything but the sleep asked for.
TEST(FakeClock, WhenIdleALoneSleeperJumpsToItsDeadline) {
  FakeClock clock(FakeClock::Mode::kWhenIdle);
  const auto start = clock.Now();
  const auto wall = clock.WallNow();
  EXPECT_TRUE(clock.SleepUntil(start + 1h));
  EXPECT_EQ(clock.Now() - start, 1h);
  EXPECT_EQ(clock.WallNow() - wall, 1h);
}

// Two held sleepers: time goes to the earlier deadline first and waits for
// the thread it woke, so the events of a virtual-time test happen in the
// order of their times. Catches: a jump to the later deadline (or to each
// sleeper's own, as kOnSleep does), which would let the 5 s sleeper see
// 10 s; a held thread that time does not wait for once woken.
TEST(FakeClock, WhenIdleTimeGoesToTheEarliestDeadlineFirst) {
  FakeClock clock(FakeClock::Mode::kWhenIdle);
  const auto start = clock.Now();
  std::mutex mu;
  std::vector<std::pair<int, std::chrono::nanoseconds>> woke;
  auto sleeper = [&](int id, std::chrono::nanoseconds d, std::unique_ptr<FakeClock::Hold> hold) {
    hold->Bind();
    clock.SleepFor(d);
    std::this_thread::sleep_for(10ms);  // slow to act: time waits for it
    std::lock_guard<std::mutex> lock(mu);
    woke.emplace_back(id, clock.Now() - start);
  };
  // Both holds before either thread starts: a hold made once thread a
  // sleeps would come too late, time having gone on to a's 10 s.
  auto hold_a = std::make_unique<FakeClock::Hold>(clock);
  auto hold_b = std::make_unique<FakeClock::Hold>(clock);
  std::thread a(sleeper, 1, 10s, std::move(hold_a));
  std::thread b(sleeper, 2, 5s, std::move(hold_b));
  a.join();
  b.join();
  ASSERT_EQ(woke.size(), 2u);
  EXPECT_EQ(woke[0], std::make_pair(2, std::chrono::nanoseconds(5s)));
  EXPECT_EQ(woke[1], std::make_pair(1, std::chrono::nanoseconds(10s)));
}

// A hold made for a thread that has not started yet counts from its
// making: the other sleeper cannot run ahead of it. Catches: a hold that
// counts only once bound (the thread would wake at 12 s, not 2 s).
TEST(FakeClock, WhenIdleAHoldCountsBeforeItsThreadRuns) {
  FakeClock clock(FakeClock::Mode::kWhenIdle);
  const auto start = clock.Now();
  std::chrono::nanoseconds seen{0};
  auto hold = std::make_unique<FakeClock::Hold>(clock);
  std::thread t([&, h = std::move(hold)]() mutable {
    std::this_thread::sleep_for(20ms);  // starts late
    h->Bind();
    clock.SleepFor(2s);
    seen = clock.Now() - start;
    h.reset();
  });
  EXPECT_TRUE(clock.SleepFor(10s));
  EXPECT_EQ(clock.Now() - start, 10s);
  t.join();
  EXPECT_EQ(seen, 2s);
}

// Catches: a hold whose thread's sleeps do not let time go on (a test
// polling with clock sleeps would block for good), or a hold that does not
// stop time for the others while its thread is awake.
TEST(FakeClock, WhenIdleAHoldingThreadStopsTimeOnlyWhileAwake) {
  FakeClock clock(FakeClock::Mode::kWhenIdle);
  const auto start = clock.Now();
  std::optional<FakeClock::Hold> hold;
  hold.emplace(clock);
  hold->Bind();
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.SleepFor(5s);
    woke = true;
  });
  while (clock.sleepers() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(clock.Now(), start);
  EXPECT_FALSE(woke.load());
  EXPECT_TRUE(clock.SleepFor(1s));  // the earlier deadline: the sleeper stays asleep
  EXPECT_EQ(clock.Now() - start, 1s);
  EXPECT_FALSE(woke.load());
  hold.reset();  // let go: time jumps to the sleeper's deadline
  sleeper.join();
  EXPECT_TRUE(woke.load());
  EXPECT_EQ(clock.Now() - start, 5s);
}

// Catches: a stop token that does not reach a sleep of the system clock.
TEST(SystemClock, StopTokenEndsASleepEarly) {
  std::stop_source stop;
  auto start = std::chrono::steady_clock::now();
  std::thread t([&] { EXPECT_FALSE(SystemClock::Instance().SleepFor(30s, stop.get_token())); });
  std::this_thread::sleep_for(20ms);
  stop.request_stop();
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

}  // namespace
}  // namespace fairbench

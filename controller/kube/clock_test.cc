#include "controller/kube/clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace fairbench::kube {
namespace {

using std::chrono::milliseconds;

TEST(FakeClock, SleepersWakeWhenTimeIsAdvanced) {
  FakeClock clock;
  auto start = clock.Now();
  std::thread sleeper([&] { EXPECT_TRUE(clock.SleepFor(std::chrono::seconds(10))); });
  while (clock.sleepers() == 0) std::this_thread::yield();
  clock.Advance(std::chrono::seconds(5));
  EXPECT_EQ(clock.sleepers(), 1);
  clock.Advance(std::chrono::seconds(5));
  sleeper.join();
  EXPECT_EQ(clock.Now() - start, std::chrono::seconds(10));
}

TEST(FakeClock, StopTokenEndsASleep) {
  FakeClock clock;
  std::stop_source stop;
  std::thread sleeper([&] { EXPECT_FALSE(clock.SleepFor(std::chrono::hours(1), stop.get_token())); });
  while (clock.sleepers() == 0) std::this_thread::yield();
  stop.request_stop();
  sleeper.join();
}

TEST(FakeClock, AutoAdvanceRecordsWhatWasSlept) {
  FakeClock clock(true);
  auto wall = clock.WallNow();
  clock.SleepFor(std::chrono::seconds(3));
  EXPECT_EQ(clock.slept(), std::chrono::seconds(3));
  EXPECT_EQ(clock.WallNow() - wall, std::chrono::seconds(3));
}

TEST(SystemClock, StopTokenEndsASleepEarly) {
  std::stop_source stop;
  auto start = std::chrono::steady_clock::now();
  std::thread t([&] { EXPECT_FALSE(SystemClock::Instance().SleepFor(std::chrono::seconds(30), stop.get_token())); });
  std::this_thread::sleep_for(milliseconds(20));
  stop.request_stop();
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace fairbench::kube

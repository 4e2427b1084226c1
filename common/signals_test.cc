// Signals sent to this very process (SIGUSR2, blocked by the code under
// test before it is sent, so it can never end the test binary).
#include "common/signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace fairbench {
namespace {

using namespace std::chrono_literals;

// What the watcher's callback saw.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> signals;
  std::thread::id thread;

  void Add(int sig) {
    std::lock_guard<std::mutex> lock(mu);
    signals.push_back(sig);
    thread = std::this_thread::get_id();
    cv.notify_all();
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 5s, [&] { return signals.size() >= n; });
  }
};

TEST(SignalWatcherTest, CallsBackOnItsOwnThreadForEachSignal) {
  Seen seen;
  SignalWatcher watcher({SIGUSR2}, [&seen](int sig) { seen.Add(sig); });
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  ASSERT_TRUE(seen.WaitFor(1));
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  ASSERT_TRUE(seen.WaitFor(2));
  std::lock_guard<std::mutex> lock(seen.mu);
  EXPECT_EQ(seen.signals, (std::vector<int>{SIGUSR2, SIGUSR2}));
  EXPECT_NE(seen.thread, std::this_thread::get_id());
}

TEST(SignalWatcherTest, DestructionWaitsForTheCallbackUnderWayAndJoins) {
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  std::optional<SignalWatcher> watcher;
  watcher.emplace(std::initializer_list<int>{SIGUSR2}, [&](int) {
    started = true;
    std::this_thread::sleep_for(200ms);
    finished = true;
  });
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!started && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(started);
  watcher.reset();
  EXPECT_TRUE(finished);  // the destructor returned only after the callback
}

TEST(SignalWatcherTest, StopsPromptlyWithNoSignalAndLeavesLaterOnesPending) {
  int calls = 0;
  const auto began = std::chrono::steady_clock::now();
  {
    SignalWatcher watcher({SIGUSR2}, [&calls](int) { ++calls; });
    watcher.Stop();
    watcher.Stop();  // idempotent
  }
  EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);
  EXPECT_EQ(calls, 0);  // the wake-up is not reported as a signal

  // Still blocked after the watcher: a signal now is pending, not fatal.
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGUSR2), 1);
  EXPECT_EQ(BlockedSignals({SIGUSR2}).Wait(), SIGUSR2);  // take it
}

TEST(BlockedSignalsTest, WaitReturnsThePendingSignal) {
  const BlockedSignals blocked({SIGUSR1, SIGUSR2});
  ASSERT_EQ(raise(SIGUSR2), 0);  // pending: blocked in this thread
  EXPECT_EQ(blocked.Wait(), SIGUSR2);
  ASSERT_EQ(kill(getpid(), SIGUSR1), 0);
  EXPECT_EQ(blocked.Wait(), SIGUSR1);
}

}  // namespace
}  // namespace fairbench

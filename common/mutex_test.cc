// Mutex, MutexLock and CondVar do what the std types they wrap do: the lock
// is held for the scope and given up by unlock(), a wait gives the mutex up
// while it sleeps and holds it again when it returns.
#include "common/mutex.h"

#include <gtest/gtest.h>

#include <thread>

namespace fairbench {
namespace {

using namespace std::chrono_literals;

// Whether another thread finds `mu` taken (a probe the analysis cannot
// follow: it takes and gives back the mutex on another thread).
bool HeldElsewhere(Mutex& mu) {
  bool held = false;
  std::thread([&]() NO_THREAD_SAFETY_ANALYSIS {
    held = !mu.try_lock();
    if (!held) mu.unlock();
  }).join();
  return held;
}

// Catches: a MutexLock that does not lock (try_lock would succeed), or whose
// unlock() leaves the mutex held, or whose destructor unlocks a mutex it
// already gave up (a double unlock: undefined, aborts under the debug
// runtime).
TEST(MutexTest, MutexLockHoldsForItsScopeAndUnlocks) {
  Mutex mu;
  {
    MutexLock lock(mu);
    EXPECT_TRUE(HeldElsewhere(mu));
    lock.unlock();
    EXPECT_FALSE(HeldElsewhere(mu));
    lock.lock();
    EXPECT_TRUE(HeldElsewhere(mu));
  }
  EXPECT_FALSE(HeldElsewhere(mu));
}

// Catches: a wait that keeps the mutex while it sleeps (the notifier could
// never set the flag: the test would hang, then time out), that returns
// without the mutex held, or whose timeouts are ignored or not reported.
TEST(MutexTest, CondVarWaitsWithoutTheMutexAndReturnsWithIt) {
  Mutex mu;
  CondVar cv;
  bool ready = false;
  std::thread notifier([&] {
    std::this_thread::sleep_for(20ms);
    MutexLock lock(mu);
    ready = true;
    cv.notify_all();
  });
  {
    MutexLock lock(mu);
    cv.wait(lock, [&] { return ready; });
    EXPECT_TRUE(ready);
    EXPECT_TRUE(HeldElsewhere(mu));
  }
  notifier.join();
  MutexLock lock(mu);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(cv.wait_for(lock, 30ms, [] { return false; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  EXPECT_EQ(cv.wait_until(lock, std::chrono::steady_clock::now() + 10ms), std::cv_status::timeout);
  EXPECT_TRUE(HeldElsewhere(mu));
}

}  // namespace
}  // namespace fairbench

// Mutex, MutexLock and CondVar: std::mutex, std::unique_lock and
// std::condition_variable as clang's thread-safety analysis knows them
// (common/thread_annotations.h). libstdc++'s own types carry no
// annotations, so members guarded by a std::mutex cannot be checked.
//
//   Mutex mu_;
//   std::deque<Job> queue_ GUARDED_BY(mu_);
//   CondVar cv_;
//   …
//   MutexLock lock(mu_);
//   cv_.wait(lock, [&]() REQUIRES(mu_) { return !queue_.empty(); });
//
// A MutexLock holds its mutex from construction to destruction, or until
// unlock() (lock() takes it again); it also serves
// std::condition_variable_any (a wait with a stop_token). Same costs as
// the std types they wrap; the same thread-safety (a Mutex and a CondVar
// are shared between threads, a MutexLock belongs to one).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace fairbench {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the calling thread holds it (a callback the
  // holder runs); checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    held_ = false;
    mu_.unlock();
  }

 private:
  friend class CondVar;
  Mutex& mu_;
  bool held_ = true;
};

class CondVar {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }
  void wait(MutexLock& lock) {
    Adopted a(lock);
    cv_.wait(a.lock);
  }
  template <typename Pred>
  void wait(MutexLock& lock, Pred pred) {
    Adopted a(lock);
    cv_.wait(a.lock, std::move(pred));
  }
  template <typename Clock, typename Duration>
  std::cv_status wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& t) {
    Adopted a(lock);
    return cv_.wait_until(a.lock, t);
  }
  template <typename Clock, typename Duration, typename Pred>
  bool wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& t, Pred pred) {
    Adopted a(lock);
    return cv_.wait_until(a.lock, t, std::move(pred));
  }
  template <typename Rep, typename Period>
  std::cv_status wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& d) {
    Adopted a(lock);
    return cv_.wait_for(a.lock, d);
  }
  template <typename Rep, typename Period, typename Pred>
  bool wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& d, Pred pred) {
    Adopted a(lock);
    return cv_.wait_for(a.lock, d, std::move(pred));
  }

 private:
  // The held std::mutex as the std::unique_lock std::condition_variable
  // waits with; given back to the MutexLock, still held, afterwards.
  struct Adopted {
    explicit Adopted(MutexLock& l) : lock(l.mu_.mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    std::unique_lock<std::mutex> lock;
  };
  std::condition_variable cv_;
};

}  // namespace fairbench

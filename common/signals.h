// Signals taken synchronously, by a thread that waits for them (sigwait),
// not by an asynchronous handler, so that ordinary code (locks, logging,
// stopping a server) may run when one arrives.
//
// Both classes block their signals in the calling thread. Create them
// first thing in main(), before any other thread starts: threads inherit
// the mask, so no thread has the signals unblocked and only the waiter sees
// them. (A thread started earlier would take the signal's default action,
// usually ending the process.) The signals stay blocked afterwards.
//
//   fairbench::BlockedSignals shutdown({SIGTERM, SIGINT});  // at the start
//   ... start the server ...
//   shutdown.Wait();                                        // at the end
//
//   fairbench::SignalWatcher watcher({SIGINT, SIGTERM}, [&](int) { engine.Stop(); });
//   ... run; the watcher's destructor ends and joins its thread ...
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <initializer_list>
#include <thread>

namespace fairbench {

class BlockedSignals {
 public:
  // Blocks `signals` in the calling thread.
  explicit BlockedSignals(std::initializer_list<int> signals);
  // Blocks until one of the signals is pending, takes it and returns it.
  int Wait() const;

 private:
  sigset_t set_;
};

class SignalWatcher {
 public:
  // Blocks `signals` (not empty) in the calling thread, then starts a thread
  // that calls `on_signal` with each one received, one call at a time, on
  // that thread. A signal that arrives again before it was taken counts once.
  SignalWatcher(std::initializer_list<int> signals, std::function<void(int signal)> on_signal);
  ~SignalWatcher();  // Stop()
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Ends the thread and joins it; a callback under way finishes first.
  // Signals that arrive afterwards stay pending. Idempotent; from one thread
  // at a time, never from the callback.
  void Stop();

 private:
  void Run();

  BlockedSignals blocked_;
  std::function<void(int)> on_signal_;
  int wake_signal_ = 0;  // one of the watched signals; Stop() sends it to the thread
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace fairbench

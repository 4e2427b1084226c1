// ShutdownSignals: how fairbench's two long-running binaries (`fairbench
// run`, fairbench-controller) take SIGINT and SIGTERM. The first one asks
// for a graceful stop (on_first: cancel the run, stop leading); a second
// one means "now": on_again says with which exit code, and the process ends
// at once (_exit; children started with PR_SET_PDEATHSIG die with it).
// SIGPIPE is ignored: a peer that went away is an error value on the write,
// never the end of the process.
//
// Made first thing in main (before any thread starts: see SignalWatcher in
// common/signals.h). Callbacks run on the watcher's thread, one at a time.
// Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "common/signals.h"

namespace fairbench::controller {

class ShutdownSignals {
 public:
  // on_first(signal): the first SIGINT or SIGTERM. on_again(first, signal):
  // any later one; returns the exit code.
  ShutdownSignals(std::function<void(int signal)> on_first, std::function<int(int first, int again)> on_again);
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  // The first signal taken; 0 while none came.
  int first() const { return first_.load(); }
  // Stops watching (signals that come later stay pending). Not from a callback.
  void Stop() { watcher_.Stop(); }

 private:
  std::function<void(int)> on_first_;
  std::function<int(int, int)> on_again_;
  std::atomic<int> first_{0};
  SignalWatcher watcher_;  // last: its thread uses the members above
};

// "SIGINT", "SIGTERM", else "a signal".
std::string SignalName(int signal);

}  // namespace fairbench::controller

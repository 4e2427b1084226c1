#include "common/signals.h"

#include <pthread.h>

#include <cstdlib>

namespace fairbench {

BlockedSignals::BlockedSignals(std::initializer_list<int> signals) {
  sigemptyset(&set_);
  for (int s : signals) sigaddset(&set_, s);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

int BlockedSignals::Wait() const {
  int sig = 0;
  while (sigwait(&set_, &sig) != 0) {
  }
  return sig;
}

SignalWatcher::SignalWatcher(std::initializer_list<int> signals, std::function<void(int signal)> on_signal)
    : blocked_(signals), on_signal_(std::move(on_signal)) {
  if (signals.size() == 0) std::abort();  // nothing to wait for, and nothing to wake the thread with
  wake_signal_ = *signals.begin();
  // Created after the signals were blocked here: the thread inherits the mask.
  thread_ = std::thread([this] { Run(); });
}

SignalWatcher::~SignalWatcher() { Stop(); }

void SignalWatcher::Run() {
  for (;;) {
    const int sig = blocked_.Wait();
    if (stopping_.load()) return;
    on_signal_(sig);
  }
}

void SignalWatcher::Stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true);
  // One of the watched signals, sent to the watcher's thread alone: it is
  // blocked there, so it stays pending until the thread's next wait takes it
  // (at once, or after the callback under way). No other thread can take a
  // signal directed at this one.
  pthread_kill(thread_.native_handle(), wake_signal_);
  thread_.join();
}

}  // namespace fairbench

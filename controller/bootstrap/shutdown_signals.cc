#include "controller/bootstrap/shutdown_signals.h"

#include <unistd.h>

#include <csignal>

namespace fairbench::controller {
namespace {

// Before the watcher blocks its signals: SIGPIPE must be ignored before any
// thread starts, as SIGINT and SIGTERM must be blocked.
bool IgnoreSigpipe() {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}

}  // namespace

ShutdownSignals::ShutdownSignals(std::function<void(int)> on_first, std::function<int(int, int)> on_again)
    : on_first_((IgnoreSigpipe(), std::move(on_first))),
      on_again_(std::move(on_again)),
      watcher_({SIGINT, SIGTERM}, [this](int signal) {
        int none = 0;
        if (first_.compare_exchange_strong(none, signal)) {
          on_first_(signal);
          return;
        }
        _exit(on_again_(first_.load(), signal));
      }) {}

std::string SignalName(int signal) { return signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "a signal"; }

}  // namespace fairbench::controller

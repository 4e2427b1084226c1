// One open watch: a bounded queue of newline-terminated JSON events between
// the store (producer, under the API server's lock) and the HTTP thread that
// streams them (consumer).
//
// Thread-safe. A channel ends once: cleanly (the stream is finished with the
// terminating chunk — a clean close) or abruptly (the connection is cut, as
// when a watch is dropped). A consumer that overflows the queue is ended
// cleanly, as the real server does with slow watchers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

#include "common/mutex.h"

namespace fairbench::apiserver {

class WatchChannel {
 public:
  enum class End { kOpen, kClean, kAbrupt };
  struct Item {
    enum class Kind { kLine, kIdle, kClean, kAbrupt } kind;
    std::string line;
  };

  WatchChannel(size_t max_queued, std::chrono::steady_clock::time_point deadline)
      : max_queued_(max_queued), deadline_(deadline) {}

  // Producer side. Push returns false once the channel has ended.
  bool Push(std::string line);
  void Finish(End how);

  // Consumer side: the next line, kIdle after `wait` without one, or the
  // end. Reaching the deadline (timeoutSeconds) is a clean end.
  Item Next(std::chrono::milliseconds wait);
  // The consumer went away (client closed); producers stop feeding it.
  void Cancel();
  bool ended() const;

 private:
  const size_t max_queued_;
  const std::chrono::steady_clock::time_point deadline_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::string> lines_ GUARDED_BY(mu_);
  End end_ GUARDED_BY(mu_) = End::kOpen;
};

}  // namespace fairbench::apiserver

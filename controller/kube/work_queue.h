// WorkQueue: the queue in front of a level-based reconciler (client-go's
// workqueue semantics). Keys are deduplicated: a key added while queued is
// queued once; a key added while being processed is queued again when its
// worker calls Done, so one key is never processed by two workers at once.
// AddRateLimited requeues with per-key exponential backoff (Forget resets
// it); AddAfter schedules a delayed add. Bounded: beyond `capacity` distinct
// pending keys, Add refuses (and counts) new ones.
//
// Thread-safe. Get blocks until a key is ready, the queue shuts down, or
// the stop token is requested.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>

#include "common/mutex.h"

namespace fairbench::kube {

struct WorkQueueOptions {
  std::chrono::milliseconds base_delay{5};
  std::chrono::milliseconds max_delay{1000 * 1000};
  size_t capacity = 100000;
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {});

  // False if the queue is shut down or full.
  bool Add(const std::string& key);
  void AddAfter(const std::string& key, std::chrono::nanoseconds delay);
  // Requeue after base_delay · 2^(failures so far), capped at max_delay.
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // The next key to process; nullopt after ShutDown or on stop.
  std::optional<std::string> Get(std::stop_token stop = {});
  void Done(const std::string& key);
  void ShutDown();
  bool shutting_down() const;
  size_t Len() const;
  uint64_t dropped() const;

 private:
  bool AddLocked(const std::string& key) REQUIRES(mu_);
  void PromoteDueLocked(std::chrono::steady_clock::time_point now) REQUIRES(mu_);

  const WorkQueueOptions options_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<std::string> queue_ GUARDED_BY(mu_);
  std::set<std::string> dirty_ GUARDED_BY(mu_);
  std::set<std::string> processing_ GUARDED_BY(mu_);
  std::map<std::string, std::chrono::steady_clock::time_point> waiting_ GUARDED_BY(mu_);
  std::map<std::string, int> failures_ GUARDED_BY(mu_);
  uint64_t waiting_epoch_ GUARDED_BY(mu_) = 0;  // wakes Get when a sooner delay arrives
  bool shutdown_ GUARDED_BY(mu_) = false;
  uint64_t dropped_ GUARDED_BY(mu_) = 0;
};

}  // namespace fairbench::kube

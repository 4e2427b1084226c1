#include "controller/kube/work_queue.h"

#include <algorithm>

#include "common/backoff.h"
#include "common/mutex.h"

namespace fairbench::kube {

WorkQueue::WorkQueue(WorkQueueOptions options) : options_(options) {}

bool WorkQueue::AddLocked(const std::string& key) {
  if (shutdown_) return false;
  if (dirty_.count(key)) return true;
  if (dirty_.size() >= options_.capacity) {
    ++dropped_;
    return false;
  }
  dirty_.insert(key);
  if (processing_.count(key)) return true;  // re-queued by Done
  queue_.push_back(key);
  cv_.notify_one();
  return true;
}

bool WorkQueue::Add(const std::string& key) {
  MutexLock lock(mu_);
  return AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::nanoseconds delay) {
  MutexLock lock(mu_);
  if (shutdown_) return;
  if (delay <= std::chrono::nanoseconds::zero()) {
    AddLocked(key);
    return;
  }
  auto at = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
  auto it = waiting_.find(key);
  if (it == waiting_.end() || at < it->second) waiting_[key] = at;
  ++waiting_epoch_;
  cv_.notify_all();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::chrono::nanoseconds delay;
  {
    MutexLock lock(mu_);
    const int n = failures_[key]++;
    delay = BackoffDelay(BackoffPolicy{options_.base_delay, options_.max_delay, 2.0, 0.0}, static_cast<uint32_t>(n), 0);
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  MutexLock lock(mu_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked(std::chrono::steady_clock::time_point now) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->second <= now) {
      std::string key = it->first;
      it = waiting_.erase(it);
      AddLocked(key);
    } else {
      ++it;
    }
  }
}

std::optional<std::string> WorkQueue::Get(std::stop_token stop) {
  MutexLock lock(mu_);
  for (;;) {
    if (shutdown_ || stop.stop_requested()) return std::nullopt;
    PromoteDueLocked(std::chrono::steady_clock::now());
    if (!queue_.empty()) {
      std::string key = std::move(queue_.front());
      queue_.pop_front();
      processing_.insert(key);
      dirty_.erase(key);
      return key;
    }
    if (waiting_.empty()) {
      cv_.wait(lock, stop, [&]() REQUIRES(mu_) { return shutdown_ || !queue_.empty() || !waiting_.empty(); });
    } else {
      auto next = std::min_element(waiting_.begin(), waiting_.end(), [](const auto& a, const auto& b) {
                    return a.second < b.second;
                  })->second;
      uint64_t epoch = waiting_epoch_;
      cv_.wait_until(lock, stop, next,
                     [&]() REQUIRES(mu_) { return shutdown_ || !queue_.empty() || waiting_epoch_ != epoch; });
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  MutexLock lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key)) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  MutexLock lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  MutexLock lock(mu_);
  return shutdown_;
}

size_t WorkQueue::Len() const {
  MutexLock lock(mu_);
  return queue_.size();
}

uint64_t WorkQueue::dropped() const {
  MutexLock lock(mu_);
  return dropped_;
}

}  // namespace fairbench::kube

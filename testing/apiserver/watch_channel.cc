#include "testing/apiserver/watch_channel.h"
#include "common/mutex.h"

namespace fairbench::apiserver {

bool WatchChannel::Push(std::string line) {
  MutexLock lock(mu_);
  if (end_ != End::kOpen) return false;
  if (lines_.size() >= max_queued_) {
    end_ = End::kClean;
    cv_.notify_all();
    return false;
  }
  lines_.push_back(std::move(line));
  cv_.notify_all();
  return true;
}

void WatchChannel::Finish(End how) {
  MutexLock lock(mu_);
  if (end_ == End::kOpen) end_ = how;
  // An abrupt end loses what was queued, like a cut connection does.
  if (end_ == End::kAbrupt) lines_.clear();
  cv_.notify_all();
}

WatchChannel::Item WatchChannel::Next(std::chrono::milliseconds wait) {
  MutexLock lock(mu_);
  auto until = std::min(std::chrono::steady_clock::now() + wait, deadline_);
  cv_.wait_until(lock, until, [&]() REQUIRES(mu_) { return !lines_.empty() || end_ != End::kOpen; });
  if (!lines_.empty()) {
    Item item{Item::Kind::kLine, std::move(lines_.front())};
    lines_.pop_front();
    return item;
  }
  if (end_ == End::kAbrupt) return {Item::Kind::kAbrupt, {}};
  if (end_ == End::kClean) return {Item::Kind::kClean, {}};
  if (std::chrono::steady_clock::now() >= deadline_) {
    end_ = End::kClean;
    return {Item::Kind::kClean, {}};
  }
  return {Item::Kind::kIdle, {}};
}

void WatchChannel::Cancel() { Finish(End::kAbrupt); }

bool WatchChannel::ended() const {
  MutexLock lock(mu_);
  return end_ != End::kOpen;
}

}  // namespace fairbench::apiserver

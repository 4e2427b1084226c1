#include "controller/kube/load_slot.h"
#include "common/mutex.h"

namespace fairbench::kube {

const char* LoadSlotStateName(LoadSlot::State s) {
  switch (s) {
    case LoadSlot::State::kIdle: return "Idle";
    case LoadSlot::State::kWaiting: return "Waiting";
    case LoadSlot::State::kHeld: return "Held";
    case LoadSlot::State::kLost: return "Lost";
  }
  return "Unknown";
}

LoadSlot::LoadSlot(Client& client, Clock& clock, LoadSlotConfig config)
    : config_(std::move(config)),
      clock_(clock),
      lock_(client, config_.ns, config_.name, config_.renew_deadline),
      candidate_(lock_, clock, config_.identity, config_.lease_duration) {}

LoadSlot::~LoadSlot() {
  if (state() == State::kHeld) {
    Release();
  } else {
    StopRenewer();
  }
}

void LoadSlot::set_on_lost(std::function<void()> on_lost) {
  MutexLock lock(mu_);
  on_lost_ = std::move(on_lost);
}

LoadSlot::State LoadSlot::state() const {
  MutexLock lock(mu_);
  return state_;
}

bool LoadSlot::Held() const {
  MutexLock lock(mu_);
  // Judged on the clock, not only by the renewer: between two renewer wake-ups
  // the deadline may already have passed.
  return state_ == State::kHeld && clock_.Now() - last_renew_ < config_.renew_deadline;
}

bool LoadSlot::TryAcquire() {
  {
    MutexLock lock(mu_);
    if (state_ == State::kHeld) return true;
    state_ = State::kWaiting;
  }
  auto attempt_time = clock_.Now();
  if (!candidate_.TryAcquireOrRenew()) return false;
  MutexLock lock(mu_);
  state_ = State::kHeld;
  last_renew_ = attempt_time;
  return true;
}

Status LoadSlot::Acquire(std::stop_token stop) {
  while (!TryAcquire()) {
    if (!clock_.SleepFor(config_.retry_period, stop)) {
      MutexLock lock(mu_);
      state_ = State::kIdle;
      return Status::Cancelled("stopped while waiting for the load slot " + lock_.Describe() + " (held by " +
                               candidate_.ObservedHolder() + ")");
    }
  }
  StopRenewer();
  renewer_ = std::jthread([this](std::stop_token s) {
    while (clock_.SleepFor(config_.retry_period, s)) {
      if (!RenewStep()) return;
    }
  });
  return Status::Ok();
}

bool LoadSlot::RenewStep() {
  {
    MutexLock lock(mu_);
    if (state_ != State::kHeld) return false;
  }
  // The renewal counts from when it was attempted: a slow answer must not
  // stretch our idea of how long the lease is valid.
  auto attempt_time = clock_.Now();
  bool ok = candidate_.TryAcquireOrRenew();
  std::function<void()> lost;
  {
    MutexLock lock(mu_);
    if (state_ != State::kHeld) return false;
    if (ok) {
      last_renew_ = attempt_time;
      return true;
    }
    if (clock_.Now() - last_renew_ < config_.renew_deadline) return true;
    state_ = State::kLost;
    lost = on_lost_;
  }
  if (lost) lost();
  return false;
}

void LoadSlot::StopRenewer() {
  if (renewer_.joinable() && renewer_.get_id() != std::this_thread::get_id()) {
    renewer_.request_stop();
    renewer_.join();
  }
}

void LoadSlot::Release() {
  StopRenewer();
  bool was_held;
  {
    MutexLock lock(mu_);
    was_held = state_ == State::kHeld;
    state_ = State::kIdle;
  }
  if (was_held) candidate_.Release();
}

void LoadSlot::Abandon() {
  StopRenewer();
  MutexLock lock(mu_);
  state_ = State::kIdle;
}

}  // namespace fairbench::kube

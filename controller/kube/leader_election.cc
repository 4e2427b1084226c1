#include "controller/kube/leader_election.h"
#include "common/mutex.h"

#include <spdlog/spdlog.h>

namespace fairbench::kube {

const char* LeaderStateName(LeaderElector::State s) {
  switch (s) {
    case LeaderElector::State::kFollowing: return "Following";
    case LeaderElector::State::kLeading: return "Leading";
    case LeaderElector::State::kStopped: return "Stopped";
  }
  return "Unknown";
}

Status LeaderElectionConfig::Validate() const {
  if (name.empty() || ns.empty())
    return Status::InvalidArgument("leader election: lease namespace and name are required");
  if (identity.empty()) return Status::InvalidArgument("leader election: identity is required");
  if (std::chrono::milliseconds(lease_duration) <= renew_deadline) {
    return Status::InvalidArgument("leader election: leaseDuration must be greater than renewDeadline");
  }
  if (static_cast<double>(renew_deadline.count()) <= 1.2 * static_cast<double>(retry_period.count())) {
    return Status::InvalidArgument("leader election: renewDeadline must be greater than 1.2 × retryPeriod");
  }
  if (retry_period.count() <= 0 || lease_duration.count() < 1) {
    return Status::InvalidArgument("leader election: durations must be positive (lease duration ≥ 1 s)");
  }
  return Status::Ok();
}

Result<std::unique_ptr<LeaderElector>> LeaderElector::Create(Client& client, Clock& clock,
                                                             LeaderElectionConfig config) {
  Status s = config.Validate();
  if (!s.ok()) return s;
  return std::unique_ptr<LeaderElector>(new LeaderElector(client, clock, std::move(config)));
}

LeaderElector::LeaderElector(Client& client, Clock& clock, LeaderElectionConfig config)
    : config_(std::move(config)),
      clock_(clock),
      // A lease call must not outlive the window in which it matters.
      lock_(client, config_.ns, config_.name, config_.renew_deadline),
      candidate_(lock_, clock, config_.identity, config_.lease_duration) {}

LeaderElector::State LeaderElector::state() const {
  MutexLock lock(mu_);
  return state_;
}

void LeaderElector::SetState(State s) {
  MutexLock lock(mu_);
  state_ = s;
}

std::string LeaderElector::leader() const { return candidate_.ObservedHolder(); }

bool LeaderElector::IsLeader() const {
  MutexLock lock(mu_);
  // Judged on the clock too: a renewal stuck in a slow call must not keep us
  // leading past the renew deadline, after which others may take over.
  return state_ == State::kLeading && clock_.Now() - last_renew_ < config_.renew_deadline;
}

void LeaderElector::SetLastRenew(Clock::Steady t) {
  MutexLock lock(mu_);
  last_renew_ = t;
}

Clock::Steady LeaderElector::LastRenew() const {
  MutexLock lock(mu_);
  return last_renew_;
}

LeaderElector::State LeaderElector::Step() {
  State s = state();
  if (s == State::kStopped) return s;
  // A renewal counts from when it was attempted, not from when it returned.
  const auto attempted = clock_.Now();
  bool ok = candidate_.TryAcquireOrRenew();
  const auto now = clock_.Now();
  std::string holder = candidate_.ObservedHolder();
  if (holder != reported_leader_ && !holder.empty()) {
    reported_leader_ = holder;
    if (config_.on_new_leader) config_.on_new_leader(holder);
  }
  switch (s) {
    case State::kFollowing:
      if (ok) {
        SetLastRenew(attempted);
        SetState(State::kLeading);
        if (config_.on_started_leading) config_.on_started_leading();
      }
      break;
    case State::kLeading:
      if (ok) {
        SetLastRenew(attempted);
      } else if (now - LastRenew() < config_.renew_deadline) {
        // The cause is in the client's retry lines; this says what is at stake.
        spdlog::warn("leader election: lease {}/{} not renewed; {} ms left before leadership is given up", config_.ns,
                     config_.name,
                     std::chrono::duration_cast<std::chrono::milliseconds>(config_.renew_deadline - (now - LastRenew()))
                         .count());
      } else {
        // No renewal within the deadline: another candidate may take the
        // lease once it expires, so stop acting as leader now.
        SetState(State::kStopped);
        if (config_.on_stopped_leading) config_.on_stopped_leading();
      }
      break;
    case State::kStopped: break;
  }
  return state();
}

void LeaderElector::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    State s = Step();
    if (s == State::kStopped) return;
    std::chrono::nanoseconds wait = config_.retry_period;
    if (s == State::kFollowing) {
      // Followers spread their attempts (client-go's JitterFactor 1.2).
      std::uniform_real_distribution<double> jitter(0, 1.2);
      wait += std::chrono::nanoseconds(static_cast<int64_t>(
          jitter(rng_) * static_cast<double>(std::chrono::nanoseconds(config_.retry_period).count())));
    }
    if (!clock_.SleepFor(wait, stop)) break;
  }
  if (state() == State::kLeading) {
    // No longer leading before the Lease is given up: once released, another
    // candidate may lead at once, and two must never both say they lead.
    SetState(State::kStopped);
    if (config_.release_on_cancel) candidate_.Release();
    if (config_.on_stopped_leading) config_.on_stopped_leading();
  }
}

}  // namespace fairbench::kube

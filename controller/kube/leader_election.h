// Leader election on a Lease with client-go's algorithm and defaults
// (KUBE-API.md §6): lease duration 15 s, renew deadline 10 s, retry period
// 2 s (duration > deadline > 1.2 × retry). A follower tries every retry
// period (jittered); the leader renews every retry period and stops leading
// when no renewal succeeded within the renew deadline — an operator should
// then exit. On a clean stop the leader releases the lease.
//
// States: kFollowing → kLeading → kStopped (final). Step() performs one
// iteration (tests drive it with a FakeClock); Run() loops on the caller's
// thread. Callbacks run on that thread. Thread-safe accessors.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "common/clock.h"
#include "controller/kube/lease_candidate.h"
#include "controller/kube/lease_lock.h"

namespace fairbench::kube {

struct LeaderElectionConfig {
  std::string ns;
  std::string name;
  std::string identity;
  std::chrono::seconds lease_duration{15};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  bool release_on_cancel = true;
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& identity)> on_new_leader;

  Status Validate() const;
};

class LeaderElector {
 public:
  enum class State { kFollowing, kLeading, kStopped };

  static Result<std::unique_ptr<LeaderElector>> Create(Client& client, Clock& clock, LeaderElectionConfig config);

  State Step();
  // Until `stop`, or until leadership is lost. Releases the lease on the way
  // out if it leads and release_on_cancel is set.
  void Run(std::stop_token stop);

  State state() const;
  // Leading, and renewed within the renew deadline.
  bool IsLeader() const;
  std::string leader() const;  // the last holder observed

 private:
  LeaderElector(Client& client, Clock& clock, LeaderElectionConfig config);
  void SetState(State s);
  void SetLastRenew(Clock::Steady t);
  Clock::Steady LastRenew() const;

  const LeaderElectionConfig config_;
  Clock& clock_;
  LeaseLock lock_;
  LeaseCandidate candidate_;
  std::mt19937_64 rng_{std::random_device{}()};
  mutable Mutex mu_;
  State state_ GUARDED_BY(mu_) = State::kFollowing;
  Clock::Steady last_renew_ GUARDED_BY(mu_){};
  std::string reported_leader_;  // loop thread only
};

const char* LeaderStateName(LeaderElector::State s);

}  // namespace fairbench::kube

#include "controller/kube/lease_candidate.h"
#include "common/mutex.h"

namespace fairbench::kube {

LeaseCandidate::LeaseCandidate(LeaseLock& lock, Clock& clock, std::string identity, std::chrono::seconds lease_duration)
    : lock_(lock), clock_(clock), identity_(std::move(identity)), lease_duration_(lease_duration) {}

bool LeaseCandidate::LeaseValidLocked(Clock::Steady now) const {
  return observed_time_ + std::chrono::seconds(observed_.lease_duration_seconds) > now;
}

void LeaseCandidate::ObserveLocked(const LeaseRecord& record, const std::string& raw) {
  observed_ = record;
  observed_raw_ = raw;
  observed_time_ = clock_.Now();
}

bool LeaseCandidate::IsHolder() const {
  MutexLock lock(mu_);
  return observed_.holder_identity == identity_;
}

std::string LeaseCandidate::ObservedHolder() const {
  MutexLock lock(mu_);
  return observed_.holder_identity;
}

bool LeaseCandidate::TryAcquireOrRenew() {
  MutexLock lock(mu_);
  const auto wall_now = clock_.WallNow();
  LeaseRecord desired;
  desired.holder_identity = identity_;
  desired.lease_duration_seconds = static_cast<int32_t>(lease_duration_.count());
  desired.renew_time = wall_now;
  desired.acquire_time = wall_now;

  // 1. Fast path: we hold it and believe our copy is current.
  if (observed_.holder_identity == identity_ && LeaseValidLocked(clock_.Now())) {
    desired.acquire_time = observed_.acquire_time;
    desired.lease_transitions = observed_.lease_transitions;
    if (lock_.Update(desired).ok()) {
      ObserveLocked(desired, "");
      return true;
    }
    // Fall back to reading the lease.
  }

  // 2. Read it, or create it.
  std::string raw;
  auto current = lock_.Get(&raw);
  if (!current.ok()) {
    if (current.reason() != Reason::kNotFound) return false;
    if (!lock_.Create(desired).ok()) return false;
    ObserveLocked(desired, "");
    return true;
  }

  // 3. Someone else's, and alive on our clock: wait.
  if (raw != observed_raw_) ObserveLocked(*current, raw);
  if (!current->holder_identity.empty() && current->holder_identity != identity_ && LeaseValidLocked(clock_.Now())) {
    return false;
  }

  // 4. Take it over (or renew it through the slow path).
  if (current->holder_identity == identity_) {
    desired.acquire_time = current->acquire_time;
    desired.lease_transitions = current->lease_transitions;
  } else {
    desired.lease_transitions = current->lease_transitions + 1;
  }
  if (!lock_.Update(desired).ok()) return false;
  ObserveLocked(desired, "");
  return true;
}

bool LeaseCandidate::Release() {
  MutexLock lock(mu_);
  if (observed_.holder_identity != identity_) return true;
  LeaseRecord released;
  released.lease_duration_seconds = 1;
  released.lease_transitions = observed_.lease_transitions;
  released.renew_time = clock_.WallNow();
  released.acquire_time = released.renew_time;
  if (!lock_.Update(released).ok()) return false;
  ObserveLocked(released, "");
  return true;
}

}  // namespace fairbench::kube

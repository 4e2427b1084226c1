// LeaseCandidate: client-go's tryAcquireOrRenew (KUBE-API.md §6), shared by
// leader election and the load slot. Expiry is timed on the candidate's own
// clock from the moment it last saw the record change — never by comparing
// the record's renewTime with the local clock, so clock skew between
// machines cannot hand the lease to two holders.
//
//   1. A holder whose lease is still valid first tries a fast update.
//   2. GET; 404 → CREATE holding it.
//   3. A record held by someone else that changed within its
//      leaseDurationSeconds (on our clock) → wait.
//   4. Otherwise UPDATE with the RV read: holder = self, renewTime = now; a
//      change of holder sets acquireTime = now and transitions + 1. 409 →
//      someone else won.
//
// Thread-safe (one mutex); its operations block on the API.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "common/mutex.h"
#include "controller/kube/clock.h"
#include "controller/kube/lease_lock.h"

namespace fairbench::kube {

class LeaseCandidate {
 public:
  LeaseCandidate(LeaseLock& lock, Clock& clock, std::string identity, std::chrono::seconds lease_duration);

  // True when this candidate holds the lease after the attempt.
  bool TryAcquireOrRenew();
  // Gives the lease up if held: holder "" and a 1 s duration, so that the
  // next candidate need not wait for expiry.
  bool Release();
  bool IsHolder() const;
  std::string ObservedHolder() const;
  const std::string& identity() const { return identity_; }

 private:
  bool LeaseValidLocked(Clock::Steady now) const REQUIRES(mu_);
  void ObserveLocked(const LeaseRecord& record, const std::string& raw) REQUIRES(mu_);

  LeaseLock& lock_;
  Clock& clock_;
  const std::string identity_;
  const std::chrono::seconds lease_duration_;
  mutable Mutex mu_;
  LeaseRecord observed_ GUARDED_BY(mu_);
  std::string observed_raw_ GUARDED_BY(mu_);
  Clock::Steady observed_time_ GUARDED_BY(mu_){};
};

}  // namespace fairbench::kube

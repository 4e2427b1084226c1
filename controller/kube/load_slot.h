// LoadSlot: the cluster-wide slot that a controller holds while a target is
// under load, so that even two controller installations sharing nodes never
// load at the same time (DESIGN.md). It is a Lease taken with the same
// algorithm as leader election (LeaseCandidate): a slot held by someone
// else is taken over only after it expired on our clock.
//
// While held, a renewer thread renews it every retry period. Held() turns
// false — and on_lost runs — as soon as no renewal succeeded within the
// renew deadline, which is shorter than the lease duration: the old holder
// has stopped counting itself as holder before anyone else can take over.
// Release() gives the slot up at once (holder "", duration 1 s).
//
// States: kIdle → kWaiting → kHeld → (kIdle on Release | kLost).
// Thread-safe. Acquire blocks; TryAcquire/RenewStep are the single steps
// the threads run, for tests that drive time with a FakeClock.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"
#include "controller/kube/clock.h"
#include "controller/kube/lease_candidate.h"
#include "controller/kube/lease_lock.h"

namespace fairbench::kube {

struct LoadSlotConfig {
  std::string ns;
  std::string name = "fairbench-load-slot";
  std::string identity;  // who holds it: installation, run and target
  std::chrono::seconds lease_duration{15};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

class LoadSlot {
 public:
  enum class State { kIdle, kWaiting, kHeld, kLost };

  LoadSlot(Client& client, Clock& clock, LoadSlotConfig config);
  ~LoadSlot();
  LoadSlot(const LoadSlot&) = delete;
  LoadSlot& operator=(const LoadSlot&) = delete;

  // Waits (polling every retry period) until the slot is ours, then starts
  // the renewer. Cancelled if `stop` is requested first.
  Status Acquire(std::stop_token stop = {});
  // One attempt; true if the slot is now held (the renewer is not started).
  bool TryAcquire();
  // One renewal; false once the slot is lost.
  bool RenewStep();
  // Stops renewing and gives the slot up.
  void Release();
  // Stops renewing without giving the slot up, as a crashed holder would.
  void Abandon();

  bool Held() const;
  State state() const;
  std::string holder() const { return candidate_.ObservedHolder(); }
  // Runs on the renewer thread when the slot is lost.
  void set_on_lost(std::function<void()> on_lost);

 private:
  void StopRenewer();

  const LoadSlotConfig config_;
  Clock& clock_;
  LeaseLock lock_;
  LeaseCandidate candidate_;
  mutable Mutex mu_;
  State state_ GUARDED_BY(mu_) = State::kIdle;
  Clock::Steady last_renew_ GUARDED_BY(mu_){};
  std::function<void()> on_lost_ GUARDED_BY(mu_);
  std::jthread renewer_;
};

const char* LoadSlotStateName(LoadSlot::State s);

}  // namespace fairbench::kube

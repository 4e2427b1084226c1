// LeaseLock: a coordination.k8s.io/v1 Lease used as a lock (KUBE-API.md
// §6), as client-go's resourcelock.LeaseLock: Get reads the record and
// remembers the Lease (its RV); Update writes with that RV, so a concurrent
// change makes it fail with 409 Conflict; Create makes a new Lease.
//
// Not thread-safe: one lock per candidate loop.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "controller/kube/client.h"
#include "controller/kube/objects.h"

namespace fairbench::kube {

struct LeaseRecord {
  std::string holder_identity;
  int32_t lease_duration_seconds = 0;
  WallTime acquire_time{};
  WallTime renew_time{};
  int32_t lease_transitions = 0;
};

class LeaseLock {
 public:
  LeaseLock(Client& client, std::string ns, std::string name, std::chrono::milliseconds call_timeout);

  // The current record; `raw` receives a canonical text of it, compared by
  // candidates to notice any change at all.
  ApiResult<LeaseRecord> Get(std::string* raw);
  ApiStatus Create(const LeaseRecord& record);
  // Requires a previous Get or Create.
  ApiStatus Update(const LeaseRecord& record);
  std::string Describe() const { return ns_ + "/" + name_; }

 private:
  Lease ToLease(const LeaseRecord& record) const;

  Client& client_;
  const std::string ns_;
  const std::string name_;
  const std::chrono::milliseconds timeout_;
  std::optional<Lease> current_;
};

}  // namespace fairbench::kube

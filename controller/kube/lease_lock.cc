#include "controller/kube/lease_lock.h"

#include "controller/kube/typed_client.h"

namespace fairbench::kube {

LeaseLock::LeaseLock(Client& client, std::string ns, std::string name, std::chrono::milliseconds call_timeout)
    : client_(client), ns_(std::move(ns)), name_(std::move(name)), timeout_(call_timeout) {}

ApiResult<LeaseRecord> LeaseLock::Get(std::string* raw) {
  GetOptions o;
  o.timeout = timeout_;
  auto lease = LeaseClient(client_).Get(ns_, name_, o);
  if (!lease.ok()) return lease.error();
  current_ = *lease;
  const LeaseSpec& s = lease->spec;
  LeaseRecord r;
  r.holder_identity = s.holder_identity;
  r.lease_duration_seconds = s.lease_duration_seconds.value_or(0);
  r.acquire_time = s.acquire_time.value_or(WallTime{});
  r.renew_time = s.renew_time.value_or(WallTime{});
  r.lease_transitions = s.lease_transitions;
  if (raw) *raw = lease->ToJson()["spec"].dump();
  return r;
}

Lease LeaseLock::ToLease(const LeaseRecord& record) const {
  Lease l;
  if (current_) l.metadata = current_->metadata;
  l.metadata.name = name_;
  l.metadata.namespace_ = ns_;
  l.spec.holder_identity = record.holder_identity;
  l.spec.lease_duration_seconds = record.lease_duration_seconds;
  l.spec.acquire_time = record.acquire_time;
  l.spec.renew_time = record.renew_time;
  l.spec.lease_transitions = record.lease_transitions;
  return l;
}

ApiStatus LeaseLock::Create(const LeaseRecord& record) {
  current_.reset();
  WriteOptions o;
  o.timeout = timeout_;
  auto created = LeaseClient(client_).Create(ToLease(record), o);
  if (!created.ok()) return created.error();
  current_ = *created;
  return ApiOk();
}

ApiStatus LeaseLock::Update(const LeaseRecord& record) {
  if (!current_) {
    ApiError e;
    e.reason = Reason::kConflict;
    e.message = "lease " + Describe() + " not read yet: call Get or Create first";
    return e;
  }
  WriteOptions o;
  o.timeout = timeout_;
  auto updated = LeaseClient(client_).Update(ToLease(record), o);
  if (!updated.ok()) return updated.error();
  current_ = *updated;
  return ApiOk();
}

}  // namespace fairbench::kube

// CpuManager: the test kubelet's CPU manager, the kubelet's
// (pkg/kubelet/cm/cpumanager) two policies over the node's CPUs (--cpus).
//
// - none: every container runs on all of the node's CPUs.
// - static: a container of a Guaranteed pod with an integer CPU request
//   gets that many CPUs of its own (lowest-numbered first), taken from the
//   shared pool but never from the reserved CPUs (--reserved-cpus, the
//   kubelet's reservedSystemCPUs); every other container runs on the shared
//   pool: the node's CPUs minus those assigned exclusively now (the
//   reserved CPUs stay in it). Init containers' CPUs are reused by the
//   app containers of their pod, as the kubelet's cpusToReuse. A pod's
//   CPUs return to the shared pool when RemovePod says the pod is over.
//
// The shared pool changes as pods come and go; generation() counts those
// changes so that pod workers re-pin their shared-pool containers.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/mutex.h"
#include "common/status.h"

namespace fairbench::kubelet {

enum class CpuManagerPolicy { kNone, kStatic };

// "none" / "static", the kubelet's cpuManagerPolicy values.
const char* CpuManagerPolicyName(CpuManagerPolicy p);

// The kernel's (and Kubernetes' cpuset.CPUSet.String()) list format:
// {0,1,2,5} → "0-2,5".
std::string FormatCpuList(std::vector<int> cpus);

class CpuManager {
 public:
  // `reserved` must be empty under none (the flag is static-only here) and,
  // under static, non-empty (as the kubelet: "the static policy requires
  // systemreserved.cpu + kubereserved.cpu to be greater than zero") and a
  // subset of `cpus`.
  static Result<std::unique_ptr<CpuManager>> Create(CpuManagerPolicy policy, std::vector<int> cpus,
                                                    std::vector<int> reserved);

  CpuManagerPolicy policy() const { return policy_; }
  const std::vector<int>& cpus() const { return cpus_; }
  const std::vector<int>& reserved() const { return reserved_; }
  // The node's allocatable cpu: its CPUs minus the reserved ones (a kubelet
  // with reservedSystemCPUs reserves their count as systemReserved cpu).
  int64_t AllocatableMillis() const;

  // The pod's exclusive CPUs (static policy, Guaranteed pods), all or none.
  // The error is the static policy's own ("not enough cpus available to
  // satisfy request: requested=N, available=M"); the kubelet rejects the
  // pod with it (UnexpectedAdmissionError). A pod already allocated is OK.
  Status AllocatePod(const std::string& uid, const nlohmann::json& pod_spec);
  // The pod is over (terminal, or gone): its CPUs go back to the shared pool.
  void RemovePod(const std::string& uid);

  // The CPUs a container runs on: its own, or the shared pool.
  std::vector<int> ContainerCpus(const std::string& uid, const std::string& container) const;
  std::vector<int> SharedPool() const;
  // Changes whenever the shared pool does.
  uint64_t generation() const;

  // How many CPUs of its own a container of this pod gets under the static
  // policy: its integer cpu request in a Guaranteed pod, else 0.
  static int GuaranteedCpus(const nlohmann::json& pod_spec, const nlohmann::json& container);

 private:
  CpuManager(CpuManagerPolicy policy, std::vector<int> cpus, std::vector<int> reserved);
  std::vector<int> SharedPoolLocked() const REQUIRES(mu_);

  const CpuManagerPolicy policy_;
  const std::vector<int> cpus_;      // sorted
  const std::vector<int> reserved_;  // sorted, a subset of cpus_

  mutable Mutex mu_;
  // pod uid → container name → its exclusive CPUs (sorted).
  std::map<std::string, std::map<std::string, std::vector<int>>> assignments_ GUARDED_BY(mu_);
  uint64_t generation_ GUARDED_BY(mu_) = 0;
};

}  // namespace fairbench::kubelet

#include "testing/kubelet/cpu_manager.h"

#include <algorithm>
#include <set>

#include "testing/kubelet/pod_spec.h"

namespace fairbench::kubelet {

using nlohmann::json;

const char* CpuManagerPolicyName(CpuManagerPolicy p) {
  switch (p) {
    case CpuManagerPolicy::kNone: return "none";
    case CpuManagerPolicy::kStatic: return "static";
  }
  return "none";
}

std::string FormatCpuList(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

namespace {

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string QuantityText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

CpuManager::CpuManager(CpuManagerPolicy policy, std::vector<int> cpus, std::vector<int> reserved)
    : policy_(policy), cpus_(Sorted(std::move(cpus))), reserved_(Sorted(std::move(reserved))) {}

Result<std::unique_ptr<CpuManager>> CpuManager::Create(CpuManagerPolicy policy, std::vector<int> cpus,
                                                       std::vector<int> reserved) {
  cpus = Sorted(std::move(cpus));
  reserved = Sorted(std::move(reserved));
  if (cpus.empty()) return Status::InvalidArgument("the node has no CPUs");
  if (policy == CpuManagerPolicy::kNone && !reserved.empty()) {
    return Status::InvalidArgument("--reserved-cpus is only for --cpu-manager-policy static");
  }
  if (policy == CpuManagerPolicy::kStatic) {
    if (reserved.empty()) {
      return Status::InvalidArgument(
          "--cpu-manager-policy static needs --reserved-cpus (the kubelet: the static policy requires "
          "systemreserved.cpu + kubereserved.cpu to be greater than zero)");
    }
    std::vector<int> outside;
    std::set_difference(reserved.begin(), reserved.end(), cpus.begin(), cpus.end(), std::back_inserter(outside));
    if (!outside.empty()) {
      return Status::InvalidArgument("--reserved-cpus " + FormatCpuList(reserved) + " is not a subset of --cpus " +
                                     FormatCpuList(cpus) + " (" + FormatCpuList(outside) + " outside)");
    }
    if (reserved.size() == cpus.size()) {
      return Status::InvalidArgument("--reserved-cpus " + FormatCpuList(reserved) +
                                     " leaves no CPU of --cpus to allocate");
    }
  }
  return std::unique_ptr<CpuManager>(new CpuManager(policy, std::move(cpus), std::move(reserved)));
}

int64_t CpuManager::AllocatableMillis() const { return static_cast<int64_t>(cpus_.size() - reserved_.size()) * 1000; }

int CpuManager::GuaranteedCpus(const json& pod_spec, const json& container) {
  if (ComputeQos(pod_spec) != QosClass::kGuaranteed) return 0;
  const json resources = container.value("resources", json::object());
  // API defaulting: a missing request is the limit.
  json cpu;
  for (const char* which : {"requests", "limits"}) {
    const json m = resources.value(which, json::object());
    if (cpu.is_null() && m.is_object() && m.contains("cpu")) cpu = m["cpu"];
  }
  if (cpu.is_null()) return 0;
  auto millis = ParseCpuMillis(QuantityText(cpu));
  if (!millis.ok() || *millis % 1000 != 0) return 0;  // only whole CPUs are exclusive
  return static_cast<int>(*millis / 1000);
}

Status CpuManager::AllocatePod(const std::string& uid, const json& pod_spec) {
  if (policy_ != CpuManagerPolicy::kStatic) return Status::Ok();
  MutexLock lock(mu_);
  if (assignments_.count(uid)) return Status::Ok();
  const std::vector<int> shared = SharedPoolLocked();
  std::set<int> available;
  std::set_difference(shared.begin(), shared.end(), reserved_.begin(), reserved_.end(),
                      std::inserter(available, available.end()));
  std::set<int> reuse;  // the init containers' CPUs, for the app containers
  std::map<std::string, std::vector<int>> got;
  for (const char* list : {"initContainers", "containers"}) {
    const bool init = std::string(list) == "initContainers";
    for (const json& c : pod_spec.value(list, json::array())) {
      const int n = GuaranteedCpus(pod_spec, c);
      if (n == 0) continue;
      std::set<int> pool = available;
      pool.insert(reuse.begin(), reuse.end());
      if (pool.size() < static_cast<size_t>(n)) {
        return Status::FailedPrecondition("not enough cpus available to satisfy request: requested=" +
                                          std::to_string(n) + ", available=" + std::to_string(pool.size()));
      }
      // Lowest-numbered first, as the static policy packs them.
      std::vector<int> take(pool.begin(), std::next(pool.begin(), n));
      for (int cpu : take) available.erase(cpu);
      const bool sidecar = init && c.value("restartPolicy", std::string()) == "Always";
      if (init && !sidecar) {
        reuse.insert(take.begin(), take.end());
      } else {
        for (int cpu : take) reuse.erase(cpu);
      }
      got[c.value("name", std::string())] = std::move(take);
    }
  }
  if (got.empty()) return Status::Ok();
  assignments_[uid] = std::move(got);
  ++generation_;
  return Status::Ok();
}

void CpuManager::RemovePod(const std::string& uid) {
  MutexLock lock(mu_);
  if (assignments_.erase(uid) > 0) ++generation_;
}

std::vector<int> CpuManager::ContainerCpus(const std::string& uid, const std::string& container) const {
  MutexLock lock(mu_);
  if (auto pod = assignments_.find(uid); pod != assignments_.end()) {
    if (auto c = pod->second.find(container); c != pod->second.end()) return c->second;
  }
  return SharedPoolLocked();
}

std::vector<int> CpuManager::SharedPool() const {
  MutexLock lock(mu_);
  return SharedPoolLocked();
}

uint64_t CpuManager::generation() const {
  MutexLock lock(mu_);
  return generation_;
}

std::vector<int> CpuManager::SharedPoolLocked() const {
  std::set<int> assigned;
  for (const auto& [uid, containers] : assignments_) {
    for (const auto& [name, cpus] : containers) assigned.insert(cpus.begin(), cpus.end());
  }
  std::vector<int> out;
  for (int c : cpus_) {
    if (!assigned.count(c)) out.push_back(c);
  }
  return out;
}

}  // namespace fairbench::kubelet

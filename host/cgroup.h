// TargetCgroup: a control group of the target's own, when this machine lets
// the controller make one — so that spec.resources are enforced locally as a
// container runtime would (memory limit, CPU quota), memory is read as
// `docker stats` reads it (the working set: usage minus inactive file
// cache), CPU time covers every process the target ever ran, and an OOM
// kill is recognised as such.
//
// cgroup v2 (a unified hierarchy at /sys/fs/cgroup with the memory
// controller) and cgroup v1 (memory, cpu and cpuacct hierarchies) are both
// handled. Where neither is writable (no root, a container without
// delegation) Create fails and the platform falls back to /proc.
//
// The target joins in its child process, before exec (ProcessOptions::
// cgroup_procs): nothing it forks can escape. Destroying the object kills
// whatever is left in the group and removes it.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace fairbench::host {

class TargetCgroup {
 public:
  // `name` must be unique on the machine (e.g. "run-target-pid").
  static Result<std::unique_ptr<TargetCgroup>> Create(const std::string& name,
                                                      std::optional<int64_t> memory_limit_bytes,
                                                      std::optional<int64_t> cpu_millicores);
  ~TargetCgroup();
  TargetCgroup(const TargetCgroup&) = delete;
  TargetCgroup& operator=(const TargetCgroup&) = delete;

  // Paths of the cgroup.procs files the child writes its pid into.
  const std::vector<std::string>& procs_files() const { return procs_; }

  // Working set in bytes (usage minus inactive file cache).
  Result<uint64_t> MemoryWorkingSet() const;
  // CPU time of every process that ran in the group, in seconds.
  Result<double> CpuSeconds() const;
  // True once the kernel has killed a process of the group for memory.
  bool OomKilled() const;
  std::string Describe() const;  // "cgroup v2 /sys/fs/cgroup/fairbench/…"

 private:
  TargetCgroup() = default;
  int version_ = 0;
  std::string memory_dir_;   // v2: the group; v1: in the memory hierarchy
  std::string cpu_dir_;      // v1 only
  std::string cpuacct_dir_;  // v1 only
  std::vector<std::string> procs_;
  std::vector<std::string> dirs_;  // created, removed in reverse
};

}  // namespace fairbench::host

// ContainerCgroup: a container's own cgroup, found from its main process
// (/proc/PID/cgroup, v1 or v2) and read directly — CPU time and memory (the
// working set: usage less inactive file cache, as the kubelet counts it)
// without a round trip to the engine. Used by the Docker platform and by
// the test kubelet's container runtime.
//
// A value; Read() and Peak() read the kernel's files each time. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fairbench::host {

// A container's memory (its working set) and CPU time, as read at
// sampled_at (this machine's clock).
struct CgroupUsage {
  uint64_t memory_bytes = 0;
  double cpu_seconds = 0;  // cumulative, so that deltas give cores
  std::chrono::time_point<std::chrono::system_clock, std::chrono::nanoseconds> sampled_at{};
};

struct ContainerCgroup {
  int version = 0;      // 0: not found
  std::string cpuacct;  // v1
  std::string memory;   // v1: the memory hierarchy; v2: the group

  static ContainerCgroup Of(int64_t pid);
  // The most memory the group ever held (v1 memory.max_usage_in_bytes, v2
  // memory.peak, where the kernel has it).
  std::optional<int64_t> Peak() const;
  std::optional<CgroupUsage> Read() const;
};

}  // namespace fairbench::host

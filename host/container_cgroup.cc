#include "host/container_cgroup.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace fairbench::host {
namespace {

std::optional<int64_t> ReadNumber(const std::string& file) {
  std::ifstream in(file);
  int64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

// KEY's value in a "key value" per line file (memory.stat, cpu.stat).
std::optional<int64_t> ReadKey(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  int64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return std::nullopt;
}

}  // namespace

ContainerCgroup ContainerCgroup::Of(int64_t pid) {
  ContainerCgroup g;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (controllers.empty() && line.rfind("0::", 0) == 0) {
      if (g.version == 0) {
        g.version = 2;
        g.memory = "/sys/fs/cgroup" + path;
      }
      continue;
    }
    std::istringstream names(controllers);
    std::string name;
    while (std::getline(names, name, ',')) {
      if (name == "cpuacct") g.cpuacct = "/sys/fs/cgroup/" + controllers + path;
      if (name == "memory") g.memory = "/sys/fs/cgroup/" + controllers + path;
    }
  }
  if (!g.cpuacct.empty() && !g.memory.empty()) g.version = 1;
  return g;
}

std::optional<int64_t> ContainerCgroup::Peak() const {
  if (version == 1) return ReadNumber(memory + "/memory.max_usage_in_bytes");
  if (version == 2) return ReadNumber(memory + "/memory.peak");
  return std::nullopt;
}

std::optional<CgroupUsage> ContainerCgroup::Read() const {
  std::optional<int64_t> cpu_ns, usage, inactive;
  if (version == 1) {
    cpu_ns = ReadNumber(cpuacct + "/cpuacct.usage");
    usage = ReadNumber(memory + "/memory.usage_in_bytes");
    inactive = ReadKey(memory + "/memory.stat", "total_inactive_file");
  } else if (version == 2) {
    if (auto us = ReadKey(memory + "/cpu.stat", "usage_usec")) cpu_ns = *us * 1000;
    usage = ReadNumber(memory + "/memory.current");
    inactive = ReadKey(memory + "/memory.stat", "inactive_file");
  }
  if (!cpu_ns || !usage) return std::nullopt;
  CgroupUsage u;
  const int64_t cache = std::min(*usage, inactive.value_or(0));
  u.memory_bytes = static_cast<uint64_t>(*usage - cache);
  u.cpu_seconds = static_cast<double>(*cpu_ns) / 1e9;
  u.sampled_at = std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
  return u;
}

}  // namespace fairbench::host

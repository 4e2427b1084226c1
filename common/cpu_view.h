// CpuView: what the kernel lets a process run on and use, read the way the
// process itself sees it — the CPUs it may run on (Cpus_allowed_list of
// /proc/PID/status, which the cgroup's cpuset bounds), the CPUs online on
// its machine, its CFS CPU quota and its memory limit (cgroup v1 or v2),
// and the kernel's boot id, which names the machine: two views with one
// boot id are of processes on one kernel, so their CPU lists can be
// compared.
//
// Read inside a target pod by fairbench-nofile (printed on the target's log
// as "fairbench-cpus: {JSON}" before it runs the target), by each agent for
// itself (sent in its Hello), and by the local and Docker platforms for a
// target process they started (by PID, from the host).
//
// Limits are looked for along the cgroup's path and its parents, the
// tightest one wins: from the host, /sys/fs/cgroup/<controller>/<path>
// exists; inside a container, where the cgroup's own directory is mounted
// at /sys/fs/cgroup/<controller> (cgroup v1) or the cgroup namespace makes
// it the root (v2), the root is the container's own. A file that cannot be
// read leaves its value unset and says why in `unread`.
//
// No dependency beyond the standard library and nlohmann/json: the static
// fairbench-nofile links it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fairbench {

struct CpuView {
  std::string cpus;    // "2-3": the CPUs the process may run on, as the kernel writes them
  std::string online;  // "0-3": the CPUs online on its machine
  std::string boot_id;
  std::optional<double> cpu_quota;       // cores: CFS quota ÷ period; unset: no quota
  std::optional<uint64_t> memory_limit;  // bytes; unset: no limit
  std::string cgroup;                    // the process's cgroup (the cpu controller's path), for people
  std::vector<std::string> unread;       // "cpu quota: …": what could not be read, and why
  friend bool operator==(const CpuView&, const CpuView&) = default;
};

// pid 0: this process. `root` prefixes /proc and /sys (tests give a tree of
// their own).
CpuView ReadCpuView(int pid = 0, const std::string& root = "");

inline constexpr std::string_view kCpuViewPrefix = "fairbench-cpus: ";

nlohmann::json CpuViewToJson(const CpuView& view);
// Nullopt unless an object whose known fields have the right types.
std::optional<CpuView> CpuViewFromJson(const nlohmann::json& json);
// The first line "fairbench-cpus: {JSON}" of a log.
std::optional<CpuView> CpuViewFromLog(std::string_view log);

}  // namespace fairbench

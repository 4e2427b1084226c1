#include "common/cpu_view.h"

#include "common/log_lines.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace fairbench {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t at = 0;
  while (at < s.size() && (s[at] == ' ' || s[at] == '\t')) ++at;
  return s.substr(at);
}

std::optional<int64_t> Number(std::string_view s) {
  int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

struct CgroupPaths {
  std::string cpu;     // the cpu controller's path (v1) or the unified path (v2)
  std::string memory;  // the memory controller's path
  bool v2 = false;
};

// /proc/PID/cgroup: "0::/path" (v2) or "4:cpu,cpuacct:/path" (v1).
CgroupPaths Cgroups(const std::string& text) {
  CgroupPaths out;
  std::stringstream in(text);
  bool v1_seen = false;
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? std::string::npos : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (controllers.empty()) {
      if (!v1_seen) {
        out.cpu = out.memory = path;
        out.v2 = true;
      }
      continue;
    }
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');) {
      if (c != "cpu" && c != "memory") continue;
      (c == "cpu" ? out.cpu : out.memory) = path;
      v1_seen = true;
      out.v2 = false;
    }
  }
  return out;
}

// The directories from the cgroup's own up to the hierarchy's root under
// `mount`, those that exist (the first that exists is the process's own).
std::vector<std::string> Chain(const std::string& mount, std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path != "/") {
    const std::string dir = mount + path;
    if (access(dir.c_str(), F_OK) == 0) out.push_back(dir);
    path = path.substr(0, path.rfind('/'));
  }
  if (access(mount.c_str(), F_OK) == 0) out.push_back(mount);
  return out;
}

// The tightest CFS quota along the chain, in cores.
std::optional<double> CpuQuota(const std::string& root, const CgroupPaths& cg, std::vector<std::string>& unread) {
  std::vector<std::string> mounts;
  if (cg.v2) {
    mounts = {root + "/sys/fs/cgroup"};
  } else {
    mounts = {root + "/sys/fs/cgroup/cpu,cpuacct", root + "/sys/fs/cgroup/cpu"};
  }
  for (const std::string& mount : mounts) {
    const std::vector<std::string> chain = Chain(mount, cg.cpu);
    if (chain.empty()) continue;
    std::optional<double> tightest;
    bool read_any = false;
    for (const std::string& dir : chain) {
      std::optional<int64_t> quota, period;
      if (cg.v2) {
        auto text = ReadFile(dir + "/cpu.max");
        if (!text) continue;
        std::stringstream in(*text);
        std::string q, p;
        in >> q >> p;
        read_any = true;
        if (q == "max") continue;
        quota = Number(q);
        period = Number(p);
      } else {
        auto q = ReadFile(dir + "/cpu.cfs_quota_us");
        auto p = ReadFile(dir + "/cpu.cfs_period_us");
        if (!q || !p) continue;
        read_any = true;
        quota = Number(Trim(*q));
        period = Number(Trim(*p));
        if (quota && *quota < 0) continue;  // -1: no quota
      }
      if (!quota || !period || *period <= 0) continue;
      const double cores = static_cast<double>(*quota) / static_cast<double>(*period);
      if (!tightest || cores < *tightest) tightest = cores;
    }
    if (read_any) return tightest;
  }
  unread.push_back("cpu quota: no cgroup cpu controller found under " + root + "/sys/fs/cgroup");
  return std::nullopt;
}

// The tightest memory limit along the chain, in bytes.
std::optional<uint64_t> MemoryLimit(const std::string& root, const CgroupPaths& cg, std::vector<std::string>& unread) {
  const std::string mount = cg.v2 ? root + "/sys/fs/cgroup" : root + "/sys/fs/cgroup/memory";
  const std::vector<std::string> chain = Chain(mount, cg.memory);
  std::optional<uint64_t> tightest;
  bool read_any = false;
  for (const std::string& dir : chain) {
    auto text = ReadFile(dir + (cg.v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    if (!text) continue;
    read_any = true;
    const std::string t = Trim(*text);
    if (t == "max") continue;
    auto v = Number(t);
    // cgroup v1 writes "no limit" as the page counter's maximum.
    if (!v || *v <= 0 || *v >= (int64_t{1} << 62)) continue;
    if (!tightest || static_cast<uint64_t>(*v) < *tightest) tightest = static_cast<uint64_t>(*v);
  }
  if (!read_any) unread.push_back("memory limit: no cgroup memory controller found under " + root + "/sys/fs/cgroup");
  return tightest;
}

}  // namespace

CpuView ReadCpuView(int pid, const std::string& root) {
  CpuView v;
  const std::string proc = root + "/proc/" + (pid == 0 ? std::string("self") : std::to_string(pid));
  if (auto status = ReadFile(proc + "/status")) {
    std::stringstream in(*status);
    for (std::string line; std::getline(in, line);) {
      constexpr std::string_view kKey = "Cpus_allowed_list:";
      if (line.rfind(kKey, 0) == 0) v.cpus = Trim(line.substr(kKey.size()));
    }
    if (v.cpus.empty()) v.unread.push_back("cpus: no Cpus_allowed_list in " + proc + "/status");
  } else {
    v.unread.push_back("cpus: cannot read " + proc + "/status");
  }
  if (auto online = ReadFile(root + "/sys/devices/system/cpu/online")) {
    v.online = Trim(*online);
  } else {
    v.unread.push_back("online cpus: cannot read " + root + "/sys/devices/system/cpu/online");
  }
  if (auto id = ReadFile(root + "/proc/sys/kernel/random/boot_id")) {
    v.boot_id = Trim(*id);
  } else {
    v.unread.push_back("boot id: cannot read " + root + "/proc/sys/kernel/random/boot_id");
  }
  auto cgroup = ReadFile(proc + "/cgroup");
  if (!cgroup) {
    v.unread.push_back("cgroup: cannot read " + proc + "/cgroup");
    return v;
  }
  const CgroupPaths cg = Cgroups(*cgroup);
  v.cgroup = cg.cpu;
  v.cpu_quota = CpuQuota(root, cg, v.unread);
  v.memory_limit = MemoryLimit(root, cg, v.unread);
  return v;
}

nlohmann::json CpuViewToJson(const CpuView& view) {
  nlohmann::json j = {{"cpus", view.cpus}, {"online", view.online}, {"bootId", view.boot_id}};
  if (view.cpu_quota) j["cpuQuota"] = *view.cpu_quota;
  if (view.memory_limit) j["memoryLimit"] = *view.memory_limit;
  if (!view.cgroup.empty()) j["cgroup"] = view.cgroup;
  if (!view.unread.empty()) j["unread"] = view.unread;
  return j;
}

std::optional<CpuView> CpuViewFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  CpuView v;
  auto text = [&](const char* key, std::string& out) {
    if (!j.contains(key)) return true;
    if (!j[key].is_string()) return false;
    out = j[key].get<std::string>();
    return true;
  };
  if (!text("cpus", v.cpus) || !text("online", v.online) || !text("bootId", v.boot_id) || !text("cgroup", v.cgroup)) {
    return std::nullopt;
  }
  if (j.contains("cpuQuota")) {
    if (!j["cpuQuota"].is_number()) return std::nullopt;
    v.cpu_quota = j["cpuQuota"].get<double>();
  }
  if (j.contains("memoryLimit")) {
    if (!j["memoryLimit"].is_number_unsigned()) return std::nullopt;
    v.memory_limit = j["memoryLimit"].get<uint64_t>();
  }
  if (j.contains("unread")) {
    if (!j["unread"].is_array()) return std::nullopt;
    for (const auto& u : j["unread"]) {
      if (!u.is_string()) return std::nullopt;
      v.unread.push_back(u.get<std::string>());
    }
  }
  return v;
}

std::optional<CpuView> CpuViewFromLog(std::string_view log) {
  for (std::string_view rest : LinesAfter(log, kCpuViewPrefix)) {
    if (auto v = CpuViewFromJson(nlohmann::json::parse(rest, nullptr, false))) return v;
  }
  return std::nullopt;
}

}  // namespace fairbench

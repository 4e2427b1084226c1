#include "host/cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <linux/magic.h>

namespace fairbench::host {
namespace {

namespace fs = std::filesystem;

bool IsCgroup2(const std::string& path) {
  struct statfs s {};
  return statfs(path.c_str(), &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC;
}
bool IsCgroup1(const std::string& path) {
  struct statfs s {};
  return statfs(path.c_str(), &s) == 0 && s.f_type == CGROUP_SUPER_MAGIC;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status Write(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.flush();
  if (!out) return Status::IoError("cannot write '" + value + "' to " + path);
  return Status::Ok();
}

Status MakeDir(const std::string& path, std::vector<std::string>& created) {
  if (mkdir(path.c_str(), 0755) == 0) {
    created.push_back(path);
    return Status::Ok();
  }
  if (errno == EEXIST) return Status::Ok();
  return Status::IoError("cannot create " + path + ": " + std::strerror(errno));
}

// The value of `key` in a "key value" file such as memory.stat.
std::optional<uint64_t> StatValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return std::nullopt;
}

}  // namespace

Result<std::unique_ptr<TargetCgroup>> TargetCgroup::Create(const std::string& name, std::optional<int64_t> memory_limit,
                                                           std::optional<int64_t> cpu_millicores) {
  std::unique_ptr<TargetCgroup> g(new TargetCgroup());
  const std::string root = "/sys/fs/cgroup";
  auto fail = [&](const Status& s) -> Result<std::unique_ptr<TargetCgroup>> {
    g.reset();  // removes what was created
    return s;
  };
  if (IsCgroup2(root) && Read(root + "/cgroup.controllers").find("memory") != std::string::npos) {
    g->version_ = 2;
    // The root group may hold processes and still delegate controllers;
    // where it already does (or may not be written) the next write says
    // whether our group can have them.
    (void)Write(root + "/cgroup.subtree_control", "+memory +cpu");
    const std::string base = root + "/fairbench";
    if (Status s = MakeDir(base, g->dirs_); !s.ok()) return fail(s);
    if (Status s = Write(base + "/cgroup.subtree_control", "+memory +cpu"); !s.ok()) return fail(s);
    g->memory_dir_ = base + "/" + name;
    if (Status s = MakeDir(g->memory_dir_, g->dirs_); !s.ok()) return fail(s);
    if (memory_limit) {
      if (Status s = Write(g->memory_dir_ + "/memory.max", std::to_string(*memory_limit)); !s.ok()) return fail(s);
      // Absent without swap accounting, where there is no swap to limit.
      (void)Write(g->memory_dir_ + "/memory.swap.max", "0");
    }
    if (cpu_millicores) {
      // A CPU limit that cannot be set must not be reported as enforced.
      if (Status s = Write(g->memory_dir_ + "/cpu.max", std::to_string(*cpu_millicores * 100) + " 100000"); !s.ok()) {
        return fail(s);
      }
    }
    g->procs_ = {g->memory_dir_ + "/cgroup.procs"};
    return g;
  }
  if (IsCgroup1(root + "/memory") && IsCgroup1(root + "/cpuacct")) {
    g->version_ = 1;
    for (const char* h : {"memory", "cpuacct", "cpu"}) {
      const std::string hierarchy = root + "/" + h;
      if (!IsCgroup1(hierarchy)) continue;
      if (Status s = MakeDir(hierarchy + "/fairbench", g->dirs_); !s.ok()) return fail(s);
      const std::string dir = hierarchy + "/fairbench/" + name;
      if (Status s = MakeDir(dir, g->dirs_); !s.ok()) return fail(s);
      g->procs_.push_back(dir + "/cgroup.procs");
      if (std::string(h) == "memory") g->memory_dir_ = dir;
      if (std::string(h) == "cpuacct") g->cpuacct_dir_ = dir;
      if (std::string(h) == "cpu") g->cpu_dir_ = dir;
    }
    if (memory_limit) {
      if (Status s = Write(g->memory_dir_ + "/memory.limit_in_bytes", std::to_string(*memory_limit)); !s.ok())
        return fail(s);
    }
    if (cpu_millicores && !g->cpu_dir_.empty()) {
      if (Status s = Write(g->cpu_dir_ + "/cpu.cfs_period_us", "100000"); !s.ok()) return fail(s);
      if (Status s = Write(g->cpu_dir_ + "/cpu.cfs_quota_us", std::to_string(*cpu_millicores * 100)); !s.ok())
        return fail(s);
    }
    return g;
  }
  return Status::Unavailable("no writable cgroup hierarchy with the memory controller");
}

TargetCgroup::~TargetCgroup() {
  // Kill what is left, wait for it to go, remove the groups (leaves first).
  for (const std::string& procs : procs_) {
    std::istringstream in(Read(procs));
    pid_t pid;
    while (in >> pid) kill(pid, SIGKILL);
  }
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    for (int i = 0; i < 100 && rmdir(it->c_str()) != 0 && errno == EBUSY; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

Result<uint64_t> TargetCgroup::MemoryWorkingSet() const {
  const std::string stat = Read(memory_dir_ + "/memory.stat");
  if (version_ == 2) {
    const std::string current = Read(memory_dir_ + "/memory.current");
    if (current.empty()) return Status::IoError("cannot read " + memory_dir_ + "/memory.current");
    const uint64_t usage = std::stoull(current);
    const uint64_t inactive = StatValue(stat, "inactive_file").value_or(0);
    return usage > inactive ? usage - inactive : 0;
  }
  const std::string usage_text = Read(memory_dir_ + "/memory.usage_in_bytes");
  if (usage_text.empty()) return Status::IoError("cannot read " + memory_dir_ + "/memory.usage_in_bytes");
  const uint64_t usage = std::stoull(usage_text);
  const uint64_t inactive = StatValue(stat, "total_inactive_file").value_or(0);
  return usage > inactive ? usage - inactive : 0;
}

Result<double> TargetCgroup::CpuSeconds() const {
  if (version_ == 2) {
    const auto usec = StatValue(Read(memory_dir_ + "/cpu.stat"), "usage_usec");
    if (!usec) return Status::IoError("cannot read " + memory_dir_ + "/cpu.stat");
    return static_cast<double>(*usec) / 1e6;
  }
  const std::string ns = Read(cpuacct_dir_ + "/cpuacct.usage");
  if (ns.empty()) return Status::IoError("cannot read " + cpuacct_dir_ + "/cpuacct.usage");
  return static_cast<double>(std::stoull(ns)) / 1e9;
}

bool TargetCgroup::OomKilled() const {
  if (version_ == 2) return StatValue(Read(memory_dir_ + "/memory.events"), "oom_kill").value_or(0) > 0;
  return StatValue(Read(memory_dir_ + "/memory.oom_control"), "oom_kill").value_or(0) > 0;
}

std::string TargetCgroup::Describe() const { return "cgroup v" + std::to_string(version_) + " " + memory_dir_; }

}  // namespace fairbench::host

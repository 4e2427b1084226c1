#include "common/cpu_view.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// A /proc and /sys of a process in a cgroup v1 hierarchy: its pod's cgroup
// has a 2-CPU quota and 1 GiB, its own 1.5 CPUs and no memory limit.
fs::path V1Tree(const fs::path& root) {
  Write(root / "proc/42/status", "Name:\tserver\nCpus_allowed:\t0c\nCpus_allowed_list:\t2-3\n");
  Write(root / "proc/42/cgroup", "12:memory:/kubepods/pod1/c1\n4:cpu,cpuacct:/kubepods/pod1/c1\n0::/\n");
  Write(root / "sys/devices/system/cpu/online", "0-3\n");
  Write(root / "proc/sys/kernel/random/boot_id", "b00t\n");
  const fs::path cpu = root / "sys/fs/cgroup/cpu,cpuacct";
  Write(cpu / "cpu.cfs_quota_us", "-1\n");
  Write(cpu / "cpu.cfs_period_us", "100000\n");
  Write(cpu / "kubepods/pod1/cpu.cfs_quota_us", "200000\n");
  Write(cpu / "kubepods/pod1/cpu.cfs_period_us", "100000\n");
  Write(cpu / "kubepods/pod1/c1/cpu.cfs_quota_us", "150000\n");
  Write(cpu / "kubepods/pod1/c1/cpu.cfs_period_us", "100000\n");
  const fs::path mem = root / "sys/fs/cgroup/memory";
  Write(mem / "memory.limit_in_bytes", "9223372036854771712\n");
  Write(mem / "kubepods/pod1/memory.limit_in_bytes", "1073741824\n");
  Write(mem / "kubepods/pod1/c1/memory.limit_in_bytes", "9223372036854771712\n");
  return root;
}

// Catches: Cpus_allowed (the mask) read instead of the list, the quota's
// period ignored (1.5 CPUs read as 150000), a parent's tighter limit or
// v1's "no limit" sentinel taken as a limit.
TEST(CpuViewTest, ReadsTheTightestLimitsAlongTheCgroupPath) {
  auto dir = testing::TempDir::Create("cpu-view");
  ASSERT_TRUE(dir.ok());
  const CpuView v = ReadCpuView(42, V1Tree(dir->path()).string());
  EXPECT_EQ(v.cpus, "2-3");
  EXPECT_EQ(v.online, "0-3");
  EXPECT_EQ(v.boot_id, "b00t");
  ASSERT_TRUE(v.cpu_quota.has_value());
  EXPECT_DOUBLE_EQ(*v.cpu_quota, 1.5);
  EXPECT_EQ(v.memory_limit, std::optional<uint64_t>(1073741824));
  EXPECT_EQ(v.cgroup, "/kubepods/pod1/c1");
  EXPECT_TRUE(v.unread.empty());
}

// Inside a container the cgroup's own directory is the hierarchy's root
// (v1: bind-mounted; v2: the cgroup namespace), whatever /proc says.
// Catches: limits read only at the path /proc/PID/cgroup names.
TEST(CpuViewTest, InsideAContainerTheRootIsTheContainersCgroup) {
  auto dir = testing::TempDir::Create("cpu-view");
  ASSERT_TRUE(dir.ok());
  const fs::path root = dir->path();
  Write(root / "proc/self/status", "Cpus_allowed_list:\t1\n");
  Write(root / "proc/self/cgroup", "0::/kubepods.slice/pod2/c2\n");
  Write(root / "sys/fs/cgroup/cpu.max", "50000 100000\n");
  Write(root / "sys/fs/cgroup/memory.max", "67108864\n");
  const CpuView v = ReadCpuView(0, root.string());
  EXPECT_EQ(v.cpus, "1");
  ASSERT_TRUE(v.cpu_quota.has_value());
  EXPECT_DOUBLE_EQ(*v.cpu_quota, 0.5);
  EXPECT_EQ(v.memory_limit, std::optional<uint64_t>(67108864));
  EXPECT_EQ(v.unread.size(), 2u) << "the online CPUs and the boot id are missing from this tree";

  Write(root / "sys/fs/cgroup/cpu.max", "max 100000\n");
  Write(root / "sys/fs/cgroup/memory.max", "max\n");
  const CpuView unlimited = ReadCpuView(0, root.string());
  EXPECT_FALSE(unlimited.cpu_quota.has_value());
  EXPECT_FALSE(unlimited.memory_limit.has_value());
}

// Catches: a field lost or renamed between the line fairbench-nofile
// prints and the controller's reading of it.
TEST(CpuViewTest, RoundTripsThroughTheLogLine) {
  CpuView v{"2-3", "0-3", "b00t", 1.5, 1073741824, "/a", {"x: y"}};
  const std::string log =
      "fairbench-nofile: nofile 1024\n" + std::string(kCpuViewPrefix) + CpuViewToJson(v).dump() + "\r\nlistening\n";
  EXPECT_EQ(CpuViewFromLog(log), v);
  EXPECT_EQ(CpuViewFromLog("fairbench-cpus: {\"cpus\": 3}\n"), std::nullopt);
  EXPECT_EQ(CpuViewFromLog("x fairbench-cpus: {}\n"), std::nullopt);
  EXPECT_EQ(CpuViewFromLog(""), std::nullopt);
}

// The kernel's own answer for a real process: pinned to one CPU, in a
// cgroup v1 with a quota and a memory limit made here.
// Catches: the pid ignored (this process read instead), a quota or limit
// read from the wrong hierarchy.
TEST(CpuViewTest, AgreesWithTheKernelForAPinnedProcess) {
  if (get_nprocs() < 2) GTEST_SKIP() << "pinning to one CPU of several needs two";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(1, &one);
  ASSERT_EQ(sched_setaffinity(child, sizeof one, &one), 0);
  fs::path cpu_mount;
  for (const char* m : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
    if (cpu_mount.empty() && fs::exists(fs::path(m) / "cpu.cfs_quota_us")) cpu_mount = m;
  }
  const fs::path cg = cpu_mount.empty() ? fs::path() : cpu_mount / ("fairbench-cpu-view-" + std::to_string(child));
  const fs::path mg = "/sys/fs/cgroup/memory/fairbench-cpu-view-" + std::to_string(child);
  bool limited = false;
  if (getuid() == 0 && !cpu_mount.empty() && fs::exists("/sys/fs/cgroup/memory/memory.limit_in_bytes")) {
    std::error_code ec;
    fs::create_directory(cg, ec);
    fs::create_directory(mg, ec);
    std::ofstream(cg / "cpu.cfs_quota_us") << "25000";
    std::ofstream(cg / "cpu.cfs_period_us") << "100000";
    std::ofstream(mg / "memory.limit_in_bytes") << "268435456";
    std::ofstream(cg / "cgroup.procs") << child;
    std::ofstream(mg / "cgroup.procs") << child;
    limited = true;
  }
  const CpuView v = ReadCpuView(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (limited) {
    std::error_code ec;
    fs::remove(cg, ec);
    fs::remove(mg, ec);
  }
  EXPECT_EQ(v.cpus, "1");
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  boot >> id;
  EXPECT_EQ(v.boot_id, id);
  if (!limited) GTEST_SKIP() << "making a cgroup v1 needs root and cgroup v1's cpu and memory hierarchies";
  ASSERT_TRUE(v.cpu_quota.has_value());
  EXPECT_DOUBLE_EQ(*v.cpu_quota, 0.25);
  EXPECT_EQ(v.memory_limit, std::optional<uint64_t>(268435456));
}

}  // namespace
}  // namespace fairbench

#include "host/cgroup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "host/process.h"

namespace fairbench::host {
namespace {

using namespace std::chrono_literals;

class TargetCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "creating cgroups needs root";
  }
};

TEST_F(TargetCgroupTest, EnforcesTheMemoryLimitAndNamesTheOomKill) {
  auto g = TargetCgroup::Create("test-oom-" + std::to_string(getpid()), 32 << 20, std::nullopt);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ProcessOptions o;
  // tail keeps the last lines in memory, and without a newline the whole
  // input is one line: 200 MB of it.
  o.argv = {"sh", "-c", "head -c 200000000 /dev/zero | tail >/dev/null"};
  o.cgroup_procs = (*g)->procs_files();
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::optional<ExitInfo> e;
  for (int i = 0; i < 300 && !(e = p->Poll()); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE((*g)->OomKilled()) << (*g)->Describe() << " " << e->ToString();
}

TEST_F(TargetCgroupTest, MeasuresMemoryAndCpuOfEveryProcessInIt) {
  auto g = TargetCgroup::Create("test-usage-" + std::to_string(getpid()), std::nullopt, std::nullopt);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ProcessOptions o;
  // A child that burns CPU for a moment, then holds 20 MB in a shell variable.
  o.argv = {"sh", "-c",
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; x=$(head -c 20000000 /dev/zero | tr '\\0' a); sleep 5"};
  o.cgroup_procs = (*g)->procs_files();
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok());
  double cpu = 0;
  uint64_t memory = 0;
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(100ms);
    auto c = (*g)->CpuSeconds();
    auto m = (*g)->MemoryWorkingSet();
    ASSERT_TRUE(c.ok() && m.ok());
    cpu = *c;
    memory = std::max(memory, *m);
    if (memory > (16u << 20) && cpu > 0.05) break;
  }
  EXPECT_GT(cpu, 0.05);
  EXPECT_GT(memory, 16u << 20);  // the 20 MB string, give or take the shell's own
  EXPECT_FALSE((*g)->OomKilled());
  p->Stop(1s);
}

}  // namespace
}  // namespace fairbench::host

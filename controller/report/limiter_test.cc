// The limiter's rules on cells built here: each verdict, two resources at
// their ceilings at once, and Unknown wherever the numbers do not identify
// one. Ceilings come from CpuViews as the kernel would report them.
#include "controller/report/limiter.h"

#include <gtest/gtest.h>

#include "controller/report/cell_checks.h"

namespace fairbench::report {
namespace {

using api::LimiterKind;

CpuView View(const std::string& cpus, std::optional<double> quota = std::nullopt, const std::string& boot = "boot-a") {
  CpuView v;
  v.cpus = cpus;
  v.online = "0-7";
  v.boot_id = boot;
  v.cpu_quota = quota;
  return v;
}

api::ScenarioSettings Settings(int32_t threads = 4, int32_t agents = 1, int64_t rate = 0) {
  api::ScenarioSettings s;
  s.threads = threads;
  s.agents = agents;
  s.pipeline = 1;
  s.rate = rate;
  return s;
}

// A succeeded cell whose Little's-law figures CheckCell computes, as the
// orchestrator does.
CellRecord Cell(const api::ScenarioSettings& settings, int64_t connections, double rps, double mean_us,
                std::optional<double> target_cpu, std::optional<double> agent_cpu) {
  CellRecord c;
  c.result.target = "t";
  c.result.scenario = "hello";
  c.result.connections = connections;
  c.result.requests_per_second = rps;
  c.result.requests = static_cast<uint64_t>(rps * 10);
  c.result.latency.mean = mean_us;
  c.result.target_cpu = target_cpu;
  c.result.agent_cpu = agent_cpu;
  CheckCell(settings, Protocol::kHttp1, c);
  return c;
}

// The target on CPUs 0-1 (2 CPUs, no quota), one agent on CPU 2 with 4 threads.
LimiterContext TwoCpuTarget(const api::ScenarioSettings& s, int64_t connections) {
  return LimiterContextFor(s, connections, View("0-1"), {View("2")});
}

// Catches: a target at its quota judged by its CPU count (2) instead of the
// quota (it would read 0.49 of 2: not saturated); a quota ignored.
TEST(LimiterTest, TargetAtItsQuotaIsTargetCpu) {
  const auto s = Settings();
  const CellRecord c = Cell(s, 100, 50'000, 2'000, 0.98, 0.40);
  const auto v = JudgeLimiter(c, LimiterContextFor(s, 100, View("0-1", 1.0), {View("2-3")}));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, LimiterKind::kTargetCpu);
  EXPECT_EQ(v->evidence, "target CPU 0.98 cores of its CPU quota of 1.");
}

// Catches: the CPU count as the ceiling where no quota binds; a threshold
// moved off 90 % (0.89 of a ceiling is not saturated, 0.90 is).
TEST(LimiterTest, TargetAtItsCpusIsTargetCpuFromNinetyPercent) {
  const auto s = Settings();
  auto judge = [&](double cores) {
    return JudgeLimiter(Cell(s, 100, 50'000, 2'000, cores, 0.30), TwoCpuTarget(s, 100))->kind;
  };
  EXPECT_EQ(judge(1.80), LimiterKind::kTargetCpu);
  EXPECT_NE(judge(1.78), LimiterKind::kTargetCpu);
  const auto v = JudgeLimiter(Cell(s, 100, 50'000, 2'000, 1.96, 0.30), TwoCpuTarget(s, 100));
  EXPECT_EQ(v->evidence, "target CPU 1.96 cores of its 2 CPUs (0-1).");
}

// Catches: the agents' ceiling taken as their threads (4) when they may run
// on one CPU — the saturated generator would go unnoticed.
TEST(LimiterTest, AgentsAtTheirCpusAreGeneratorCpu) {
  const auto s = Settings(4);
  const auto v = JudgeLimiter(Cell(s, 100, 50'000, 2'000, 0.50, 0.97), TwoCpuTarget(s, 100));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, LimiterKind::kGeneratorCpu);
  EXPECT_EQ(v->evidence, "agents' CPU 0.97 cores of their 1 CPU (2).");
}

// Catches: a verdict that names one saturated resource and hides the
// other; the stated order (generator before target) not kept.
TEST(LimiterTest, TwoAtTheirCeilingsNameBothAndPickTheGenerator) {
  const auto s = Settings(4);
  const auto v = JudgeLimiter(Cell(s, 100, 50'000, 2'000, 1.95, 0.99), TwoCpuTarget(s, 100));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, LimiterKind::kGeneratorCpu);
  EXPECT_EQ(v->evidence, "agents' CPU 0.99 cores of their 1 CPU (2); also target CPU 1.95 cores of its 2 CPUs (0-1).");
}

// Catches: Little's law left out of the Connections verdict, or a closed
// loop called Connections-limited while its target was at its ceiling.
TEST(LimiterTest, ClosedLoopWithEveryConnectionBusyAndCpuToSpareIsConnections) {
  const auto s = Settings(1);
  // 4 connections, 10 ms each: 400 requests/s, 4 in flight.
  const auto v = JudgeLimiter(Cell(s, 4, 400, 10'000, 0.05, 0.10), TwoCpuTarget(s, 4));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, LimiterKind::kConnections);
  EXPECT_EQ(v->evidence,
            "every connection busy (400 requests/s × 10.00 ms mean latency = 4.0 requests in flight for 4 "
            "connections) while the target used 0.05 cores of its 2 CPUs (0-1), the agents 0.10 cores of their 1 "
            "thread, under half of each ceiling: the rate is what the connections carried, and of each request's "
            "10.00 ms the target spent 125.00 µs on its CPU; the rest it waited (on a delay, a lock or its own "
            "workers).");
}

// Catches: Connections claimed without proof of headroom — the target's
// CPUs not read, its quota not read, or its CPU on too few samples.
TEST(LimiterTest, ClosedLoopWithoutProvenHeadroomIsUnknown) {
  const auto s = Settings(1);
  const CellRecord c = Cell(s, 4, 400, 10'000, 0.05, 0.10);
  const auto not_read = JudgeLimiter(c, LimiterContextFor(s, 4, std::nullopt, {View("2")}));
  EXPECT_EQ(not_read->kind, LimiterKind::kUnknown);
  EXPECT_NE(not_read->evidence.find("the target's CPU headroom is not known"), std::string::npos) << not_read->evidence;

  CpuView quota_unread = View("0-1");
  quota_unread.unread.push_back("cpu quota: no cgroup cpu controller found under /sys/fs/cgroup");
  EXPECT_EQ(JudgeLimiter(c, LimiterContextFor(s, 4, quota_unread, {View("2")}))->kind, LimiterKind::kUnknown);

  CellRecord sparse = c;
  sparse.flags.push_back(CellFlag::kSparseUsage);
  const auto v = JudgeLimiter(sparse, TwoCpuTarget(s, 4));
  EXPECT_EQ(v->kind, LimiterKind::kUnknown);
  EXPECT_NE(v->evidence.find("rests on too few samples"), std::string::npos) << v->evidence;
}

// Catches: Connections named without room to double — a target below its
// ceiling but above half of it (queueing, not connections, may set the
// latency), or on CPUs it shared (others' use of them is not measured).
TEST(LimiterTest, ClosedLoopWithoutRoomToDoubleIsUnknown) {
  const auto s = Settings(1);
  const auto above_half = JudgeLimiter(Cell(s, 64, 66'000, 970, 1.20, 0.30), TwoCpuTarget(s, 64));
  EXPECT_EQ(above_half->kind, LimiterKind::kUnknown);
  EXPECT_NE(above_half->evidence.find("the target used more than 50 % of its CPU ceiling"), std::string::npos)
      << above_half->evidence;
  EXPECT_EQ(JudgeLimiter(Cell(s, 64, 66'000, 970, 0.98, 0.30), TwoCpuTarget(s, 64))->kind, LimiterKind::kConnections);
  CellRecord shared = Cell(s, 4, 400, 10'000, 0.05, 0.10);
  shared.flags.push_back(CellFlag::kSharedCpus);
  const auto v = JudgeLimiter(shared, TwoCpuTarget(s, 4));
  EXPECT_EQ(v->kind, LimiterKind::kUnknown);
  EXPECT_NE(v->evidence.find("(its CPUs were shared)"), std::string::npos) << v->evidence;
}

// Catches: Connections named when Little's law shows connections idle
// (2 in flight of 4), or when it shows more in flight than the connections
// can carry (the numbers contradict each other).
TEST(LimiterTest, ConnectionsNotAllBusyIsUnknown) {
  const auto s = Settings(1);
  EXPECT_EQ(JudgeLimiter(Cell(s, 4, 200, 10'000, 0.05, 0.10), TwoCpuTarget(s, 4))->kind, LimiterKind::kUnknown);
  EXPECT_EQ(JudgeLimiter(Cell(s, 4, 600, 10'000, 0.05, 0.10), TwoCpuTarget(s, 4))->kind, LimiterKind::kUnknown);
  EXPECT_EQ(JudgeLimiter(Cell(s, 4, 380, 10'000, 0.05, 0.10), TwoCpuTarget(s, 4))->kind, LimiterKind::kConnections);
}

// Catches: an open model that met its offered rate blamed on a resource
// below its ceiling, or on its idle connections.
TEST(LimiterTest, OpenModelThatMetTheRateIsOfferedRate) {
  const auto s = Settings(1, 1, 1'000);
  const auto v = JudgeLimiter(Cell(s, 50, 995, 1'000, 0.20, 0.10), TwoCpuTarget(s, 50));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, LimiterKind::kOfferedRate);
  EXPECT_EQ(v->evidence.rfind("achieved 995 of the 1,000 requests/s offered (99.5 %)", 0), 0u) << v->evidence;
}

// Catches: an open model that fell short with every connection busy not
// called Connections; one that fell short with idle connections guessed at.
TEST(LimiterTest, OpenModelShortOfTheRate) {
  const auto s = Settings(1, 1, 1'000);
  // 4 connections × 10 ms carry 400 requests/s.
  EXPECT_EQ(JudgeLimiter(Cell(s, 4, 400, 10'000, 0.05, 0.10), TwoCpuTarget(s, 4))->kind, LimiterKind::kConnections);
  EXPECT_EQ(JudgeLimiter(Cell(s, 50, 600, 1'000, 0.20, 0.10), TwoCpuTarget(s, 50))->kind, LimiterKind::kUnknown);
}

// Catches: errors ignored (a rate that counts failures), a threshold off
// 1 %, socket errors left out of the requests attempted.
TEST(LimiterTest, ErrorsFromOnePercentOfTheAttempts) {
  const auto s = Settings(1);
  CellRecord c = Cell(s, 4, 400, 10'000, 0.05, 0.10);  // 4,000 requests
  c.result.errors.timeout = 41;                        // 41 of 4,041 attempts: 1.01 %
  auto v = JudgeLimiter(c, TwoCpuTarget(s, 4));
  EXPECT_EQ(v->kind, LimiterKind::kErrors);
  EXPECT_EQ(v->evidence, "41 of 4,041 requests attempted failed (1.0 %): 41 timeouts.");
  c.result.errors.timeout = 39;  // 0.97 %
  EXPECT_EQ(JudgeLimiter(c, TwoCpuTarget(s, 4))->kind, LimiterKind::kConnections);
}

// Catches: a target at its memory limit not named, or its limit taken from
// anywhere but the target's own view.
TEST(LimiterTest, MemoryAtItsLimitIsMemoryLimit) {
  const auto s = Settings(1);
  CellRecord c = Cell(s, 4, 400, 10'000, 0.05, 0.10);
  c.result.memory_loaded = 500ull << 20;
  CpuView target = View("0-1");
  target.memory_limit = 512ull << 20;
  const auto v = JudgeLimiter(c, LimiterContextFor(s, 4, target, {View("2")}));
  EXPECT_EQ(v->kind, LimiterKind::kMemoryLimit);
  EXPECT_EQ(v->evidence, "target memory 500.00 MiB of its 512.00 MiB limit.");
}

// Catches: a verdict on a cell that produced no numbers.
TEST(LimiterTest, FailedCellHasNoVerdict) {
  CellRecord c;
  c.result.state = api::CellState::kFailed;
  EXPECT_FALSE(JudgeLimiter(c, {}).has_value());
}

// Catches: agents on one machine counted once each (their shared CPUs
// twice), agents on two machines not summed, threads not capped at an
// agent's connections, an agent that did not say treated as exact.
TEST(LimiterTest, GeneratorCeilingFromTheAgentsViews) {
  const auto two = Settings(4, 2);
  // One machine: CPUs 2 and 2-3 together are 2 CPUs.
  Ceiling c = LimiterContextFor(two, 100, View("0-1"), {View("2"), View("2-3")}).generator_cpu;
  EXPECT_DOUBLE_EQ(c.value, 2);
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.text, "their 2 CPUs (2-3)");
  // Two machines of 2 CPUs each.
  c = LimiterContextFor(two, 100, View("0-1"), {View("0-1", std::nullopt, "x"), View("0-1", std::nullopt, "y")})
          .generator_cpu;
  EXPECT_DOUBLE_EQ(c.value, 4);
  // 3 connections over 2 agents: 2 and 1 threads, whatever their CPUs.
  c = LimiterContextFor(two, 3, View("0-1"), {View("0-7", std::nullopt, "x"), View("0-7", std::nullopt, "y")})
          .generator_cpu;
  EXPECT_DOUBLE_EQ(c.value, 3);
  EXPECT_EQ(c.text, "their 3 threads");
  // A quota below the CPUs.
  c = LimiterContextFor(Settings(4), 100, View("0-1"), {View("2-5", 1.5)}).generator_cpu;
  EXPECT_DOUBLE_EQ(c.value, 1.5);
  // An agent that did not say: the threads, as an upper bound only.
  c = LimiterContextFor(two, 100, View("0-1"), {View("2"), std::nullopt}).generator_cpu;
  EXPECT_DOUBLE_EQ(c.value, 8);
  EXPECT_FALSE(c.exact);
}

}  // namespace
}  // namespace fairbench::report

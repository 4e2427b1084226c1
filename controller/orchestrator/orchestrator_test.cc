// The orchestrator against a fake platform, a fake agent pool and a store
// in memory: no process, no socket. The fakes behave like the real parts
// where the orchestrator can tell (agents stream snapshots after the job's
// start and answer a cancel; a target's usage carries the platform's own
// timestamps; a slot can be lost), and record what they were asked to do,
// so that every test asserts on the record and on the calls. Time is the
// fakes' virtual clock: no test waits for a cell's lead, warmup or
// duration, and every time a test asserts on is that clock's.
#include "controller/orchestrator/orchestrator.h"
#include "controller/orchestrator/fakes_for_test.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

namespace fairbench::controller {
namespace {

using namespace fakes;

using namespace std::chrono_literals;

class OrchestratorTest : public ::testing::Test {
 protected:
  OrchestratorTest() : platform_(state_), agents_(state_) {
    spdlog::set_level(spdlog::level::warn);
    options_.agent_timeout = 2s;
    options_.job_grace = 2s;
    options_.sample_period = 20ms;
    options_.idle_settle = 0ms;
    options_.fairbench_version = "9.9.9";
    options_.clock = &clock_;
    options_.verify = [this](const TargetPlacement& where, const api::ScenarioSettings& s) {
      verified_.push_back(where.host + ":" + std::to_string(where.port) + s.requests.front().request.path);
      return verify_result_;
    };
    HoldTheClock();
  }
  ~OrchestratorTest() override {
    if (thread_.joinable()) {  // a test that failed before Finish()
      hold_.reset();
      orchestrator_->Cancel();
      thread_.join();
    }
  }
  Orchestrator Make() { return Orchestrator(platform_, agents_, options_, &recorder_); }
  // Runs `run` on a thread and cancels it when `when` says so; returns the
  // record and how long the run took after the cancel.
  Result<report::RunRecord> RunAndCancel(const api::BenchmarkRun& run, const std::function<bool()>& when,
                                         std::chrono::milliseconds* after_cancel) {
    Start(run);
    const auto give_up = clock_.Now() + 5s;
    while (!when() && clock_.Now() < give_up) Sleep(5ms);
    Sleep(50ms);
    const auto cancel_at = clock_.Now();
    orchestrator_->Cancel();
    auto result = Finish();
    *after_cancel = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now() - cancel_at);
    return result;
  }

  // Starts `run` on a thread of its own; Finish() waits for its record.
  // The run's thread holds the clock, as the test does: time goes on only
  // while both sleep, so what the test does happens at the time it says.
  void Start(const api::BenchmarkRun& run) {
    orchestrator_ = std::make_unique<Orchestrator>(Make());
    thread_ = std::thread([this, run, hold = std::make_unique<FakeClock::Hold>(clock_)]() mutable {
      hold->Bind();
      result_.emplace(orchestrator_->Run(run, store_, false));
      hold.reset();
    });
  }
  Result<report::RunRecord> Finish() {
    hold_.reset();
    thread_.join();
    HoldTheClock();
    return std::move(*result_);
  }
  // The test's thread holds the clock (as it runs the orchestrator itself,
  // or acts on a run in progress) except while it waits for the run's
  // thread to end.
  void HoldTheClock() {
    hold_.emplace(clock_);
    hold_->Bind();
  }
  // Lets `d` of the run's time pass (between Start and Finish).
  void Sleep(std::chrono::nanoseconds d) { clock_.SleepFor(d); }
  // Until an agent has sent its first interval of load.
  void WaitUntilLoaded() {
    while (agents_.last_interval_ns.load() == 0) Sleep(5ms);
  }
  // Takes the slot away from its holder (a lease lost); returns when.
  Clock::Steady LoseSlot() {
    std::lock_guard<std::mutex> lock(state_.slot_mu);
    EXPECT_TRUE(state_.slot);
    if (state_.slot) *state_.slot = false;
    return clock_.Now();
  }

  SharedState state_;
  FakeClock& clock_ = state_.clock;
  std::optional<FakeClock::Hold> hold_;  // the test's
  FakePlatform platform_;
  FakeAgents agents_;
  MemoryStore store_;
  Recorder recorder_;
  OrchestratorOptions options_;
  Status verify_result_;
  std::vector<std::string> verified_;
  std::unique_ptr<Orchestrator> orchestrator_;
  std::thread thread_;
  std::optional<Result<report::RunRecord>> result_;
};

// ------------------------------------------------------------------ tests

// spec.profile: the target is sampled in the cells selected, only while
// they are measured (not the warmup, not the drain), at the frequency
// asked for, and the folded stacks land in the cell's record. Catches:
// sampling started with the load instead of the window, left running past
// it, a selector ignored, the profile not recorded.
TEST_F(OrchestratorTest, ProfilesCoverTheMeasuredWindowOfTheSelectedCellsOnly) {
  api::BenchmarkRun run = MakeRun({"alpha"}, {10, 20});
  run.spec.load.warmup = 300ms;
  run.spec.load.duration = 400ms;
  run.spec.profile = api::Profile{false, {api::ProfileCell{"", "", 20}}, 123};
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();
  ASSERT_EQ(record->cells.size(), 2u);
  EXPECT_FALSE(record->cells[0].profile.has_value()) << "10 connections were not selected";
  ASSERT_TRUE(record->cells[1].profile.has_value());
  const report::CellProfile& p = *record->cells[1].profile;
  EXPECT_EQ(p.state, report::ProfileState::kRecorded);
  EXPECT_EQ(p.frequency_hz, 123);
  EXPECT_EQ(p.stacks.size(), 2u);
  ASSERT_EQ(state_.profile_windows.size(), 1u);
  const auto& w = state_.profile_windows[0];
  const wire::JobSpec job = agents_.Jobs().back();
  const auto measure_start = *job.start + job.warmup;
  const auto measure_end = measure_start + job.duration;
  EXPECT_GE(w.start, measure_start - 5ms) << "sampling began in the warmup";
  EXPECT_LE(w.start, measure_start + 60ms) << "sampling began late";
  EXPECT_GE(w.stop, measure_end - 5ms) << "sampling ended before the window";
  EXPECT_LE(w.stop, measure_end + 60ms) << "sampling ran past the window";
  EXPECT_EQ(w.hz, 123);
}

// Where the platform cannot sample, the profiled cell still succeeds and
// its profile says why; the reason is told once, not per cell.
// Catches: the answer read before the load not asked for a scenario with
// vary (or asked for one without), asked more than once per target and
// scenario, or what it found not reaching every cell of that target
// (another target's finding carried over), nor the jobs' vary.
TEST_F(OrchestratorTest, VaryReadsOneAnswerPerTargetAndItsFindingsFlagTheCells) {
  api::BenchmarkRun run = MakeRun({"alpha", "beta"}, {10, 20});
  run.spec.scenarios[0].request->path = "/echo/{n}";
  run.spec.scenarios[0].expect.body = "{n}";
  run.spec.scenarios[0].vary = api::Vary{};
  std::vector<std::string> read;
  options_.read_answer = [&read](const TargetPlacement& where,
                                 const api::ScenarioSettings& s) -> Result<api::AnswerChecks> {
    read.push_back(where.host + s.requests.front().request.path);
    api::AnswerChecks found;
    if (read.size() == 1) {  // alpha's
      found.content_length = 5;
      found.body_bytes = 6;
    }
    return found;
  };
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();
  ASSERT_EQ(read.size(), 2u);
  ASSERT_EQ(record->cells.size(), 4u);
  for (const report::CellRecord& c : record->cells) {
    ASSERT_TRUE(c.result.answers.has_value()) << c.result.target;
    const bool flagged =
        std::find(c.flags.begin(), c.flags.end(), report::CellFlag::kContentLengthMismatch) != c.flags.end();
    EXPECT_EQ(flagged, c.result.target == "alpha") << c.result.target;
    EXPECT_EQ(c.result.answers->content_length.has_value(), c.result.target == "alpha") << c.result.target;
  }
  for (const wire::JobSpec& job : agents_.Jobs()) EXPECT_TRUE(job.vary.has_value());
  read.clear();
  auto plain = Make().Run(MakeRun({"alpha"}, {10}), store_, false);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(read.empty());
  EXPECT_FALSE(plain->cells[0].result.answers.has_value());
}

TEST_F(OrchestratorTest, AProfileThatCannotBeTakenSaysWhyAndTheRunGoesOn) {
  state_.profiling = false;
  api::BenchmarkRun run = MakeRun({"alpha"}, {10, 20});
  run.spec.profile = api::Profile{true, {}, 99};
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();
  EXPECT_EQ(record->run.status.phase, api::RunPhase::kSucceeded);
  for (const report::CellRecord& c : record->cells) {
    EXPECT_EQ(c.result.state, api::CellState::kSucceeded);
    ASSERT_TRUE(c.profile.has_value());
    EXPECT_EQ(c.profile->state, report::ProfileState::kUnavailable);
    EXPECT_EQ(c.profile->message, "perf is not installed here");
  }
  EXPECT_EQ(std::count(recorder_.messages.begin(), recorder_.messages.end(),
                       "target alpha: no profile: perf is not installed here"),
            1);
}

// Catches: two targets up (or loaded) at once, a slot released before the
// teardown, agents not told the target's node, the run identity not given
// to Deploy, a job started without the slot, numbers computed from anything
// but the agents' counts (rps = 2 × 1,000 responses per agent ÷ 2 s), the
// target's cores computed from the controller's sampling clock instead of
// the platform's timestamps (1.5 exactly), a record not saved after a cell.
TEST_F(OrchestratorTest, TargetsRunOneAtATimeAndNumbersComeFromTheAgents) {
  const api::BenchmarkRun run = MakeRun({"alpha", "beta"}, {10, 20}, /*agents=*/2);
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();

  EXPECT_EQ(record->run.status.phase, api::RunPhase::kSucceeded);
  ASSERT_EQ(record->cells.size(), 4u);
  for (const report::CellRecord& c : record->cells) {
    SCOPED_TRACE(c.result.target + "/" + std::to_string(c.result.connections));
    EXPECT_EQ(c.result.state, api::CellState::kSucceeded) << api::ToString(c.result.reason) << ": " << c.result.message;
    EXPECT_EQ(c.result.requests, 4000u);                     // 2 agents × 2 intervals × 1,000
    EXPECT_DOUBLE_EQ(c.result.requests_per_second, 2000.0);  // ÷ 2 s measured
    EXPECT_DOUBLE_EQ(c.result.bytes_per_response, 150.0);
    EXPECT_NEAR(c.result.latency.p50, 1000, 1);
    EXPECT_NEAR(c.result.latency.p99, 5000, 5);
    EXPECT_NEAR(c.result.latency.mean, 1400, 2);
    EXPECT_EQ(c.result.status_classes.c2xx, 4000u);
    ASSERT_TRUE(c.result.target_cpu.has_value());
    EXPECT_DOUBLE_EQ(*c.result.target_cpu, 1.5);
    ASSERT_TRUE(c.result.agent_cpu.has_value());
    EXPECT_DOUBLE_EQ(*c.result.agent_cpu, 0.5);  // 2 agents × 2 × 0.25 CPU-s ÷ 2 s
    EXPECT_EQ(c.result.memory_idle, std::optional<uint64_t>(32u << 20));
    EXPECT_EQ(c.result.memory_loaded, std::optional<uint64_t>(64u << 20));
    EXPECT_EQ(c.agents, 2u);
    EXPECT_NE(c.wrk_text.find("http://10.1.2.3:8080/"), std::string::npos);
    // Fresh samples all through the measure phase: the figures stand.
    EXPECT_GE(c.usage_samples, 2u);
    EXPECT_GE(c.usage_span_seconds, 1.0);
    EXPECT_EQ(std::count(c.flags.begin(), c.flags.end(), report::CellFlag::kSparseUsage), 0);
  }
  // What each target ran with, read back from it, is in the record.
  for (const std::string t : {"alpha", "beta"}) {
    const auto& notes = record->environment.notes;
    EXPECT_EQ(std::count(notes.begin(), notes.end(), "target " + t + ": nofile in force: 4096, read back by the fake"),
              1)
        << t;
  }
  EXPECT_EQ(state_.max_deployed.load(), 1);
  EXPECT_EQ(state_.violations.load(), 0);

  // The calls in order: never a second slot or deploy before the first
  // target's teardown and release.
  const std::vector<std::string> log = state_.log.Get();
  std::vector<std::string> lifecycle;
  for (const std::string& e : log) {
    if (e.rfind("job ", 0) != 0) lifecycle.push_back(e);
  }
  const std::vector<std::string> want = {
      "slot demo/alpha",
      "deploy alpha run=demo uid=uid-1 index=0 node=node-a",
      "agents 2 threads=2 avoid=node-a",
      "agents 2 threads=2 avoid=node-a",
      "teardown alpha",
      "release demo/alpha",
      "slot demo/beta",
      "deploy beta run=demo uid=uid-1 index=1 node=node-a",
      "agents 2 threads=2 avoid=node-a",
      "agents 2 threads=2 avoid=node-a",
      "teardown beta",
      "release demo/beta",
  };
  EXPECT_EQ(lifecycle, want);

  // Each agent got its share of the connections, the same start, the
  // target's address.
  const std::vector<wire::JobSpec> jobs = agents_.Jobs();
  ASSERT_EQ(jobs.size(), 8u);
  EXPECT_EQ(jobs[0].connections + jobs[1].connections, 10u);
  EXPECT_EQ(jobs[1].connection_offset, jobs[0].connections);
  EXPECT_EQ(jobs[0].start, jobs[1].start);
  EXPECT_EQ(jobs[0].host, "10.1.2.3");
  EXPECT_EQ(jobs[0].port, 8080);

  // Saved: the start, each cell, the end; the store's record is the result.
  EXPECT_EQ(store_.saves, 6);
  EXPECT_EQ(recorder_.persists.load(), 6);
  ASSERT_TRUE(store_.stored.has_value());
  EXPECT_EQ(store_.stored->cells.size(), 4u);
  EXPECT_EQ(store_.stored->run.status.phase, api::RunPhase::kSucceeded);
  EXPECT_EQ(store_.cell_keys.size(), 4u);
  // Each target verified once per scenario at its placement.
  EXPECT_EQ(verified_, (std::vector<std::string>{"10.1.2.3:8080/", "10.1.2.3:8080/"}));
  // Observers learn where each ready target runs.
  EXPECT_EQ(recorder_.ready, (std::vector<std::string>{"alpha@node-a/10.1.2.3:8080", "beta@node-a/10.1.2.3:8080"}));
  // The environment is the platform's, with the version added.
  EXPECT_EQ(record->environment.platform, "fake");
  EXPECT_EQ(record->environment.fairbench_version, "9.9.9");
}

// Catches: interleaved repetitions run sequentially (a target's repetitions
// back to back, so a drift of the machine lands on one target), a round that
// skips or repeats a target, an order that does not follow the seed (the
// same seed must give the same order, recorded with it), a seed drawn anew
// on resume (the order would change half-way).
TEST_F(OrchestratorTest, InterleavedRepetitionsDeployEveryTargetOncePerRoundInTheSeededOrder) {
  api::BenchmarkRun run = MakeRun({"alpha", "beta", "gamma"}, {10}, /*agents=*/1);
  run.spec.repetitions = 3;
  run.spec.seed = 42;
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();
  ASSERT_EQ(record->cells.size(), 9u);
  for (const report::CellRecord& c : record->cells) EXPECT_EQ(c.result.state, api::CellState::kSucceeded);
  // The cells finish round by round, yet the record keeps them in cell
  // order, each once, with status.results mirroring them. Catches: a cell
  // appended where it finished, or its result not mirrored.
  const std::vector<api::Cell> cells = api::ExpandCells(run.spec);
  ASSERT_EQ(record->run.status.results.size(), 9u);
  for (size_t i = 0; i < cells.size(); ++i) {
    EXPECT_TRUE(cells[i].Matches(record->cells[i].result)) << "cell " << i << " is " << record->cells[i].result.target;
    EXPECT_TRUE(cells[i].Matches(record->run.status.results[i])) << "status.results[" << i << "]";
    EXPECT_EQ(record->run.status.results[i], record->cells[i].result) << i;
    // Catches: no limiter verdict judged where every platform's cells end
    // (the fakes read no CPUs: nothing identifies a limiter).
    ASSERT_TRUE(record->run.status.results[i].limiter.has_value()) << i;
    EXPECT_EQ(record->run.status.results[i].limiter->kind, api::LimiterKind::kUnknown) << i;
  }
  EXPECT_EQ(record->run.status.progress.completed, 9);
  std::vector<std::string> deployed;
  for (const std::string& e : state_.log.Get()) {
    if (e.rfind("deploy ", 0) == 0) deployed.push_back(e.substr(7, e.find(' ', 7) - 7));
  }
  ASSERT_EQ(deployed.size(), 9u);
  const auto rounds = api::TargetRounds(run.spec, api::RepetitionOrder::kInterleaved, 42);
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(record->schedule.order, "Interleaved");
  EXPECT_EQ(record->schedule.seed, 42);
  ASSERT_EQ(record->schedule.rounds.size(), 3u);
  for (size_t r = 0; r < 3; ++r) {
    std::vector<std::string> want;
    for (size_t t : rounds[r]) want.push_back(run.spec.targets[t].name);
    EXPECT_EQ(std::vector<std::string>(deployed.begin() + static_cast<long>(3 * r),
                                       deployed.begin() + static_cast<long>(3 * r + 3)),
              want)
        << "round " << r + 1;
    EXPECT_EQ(record->schedule.rounds[r], want);
    std::vector<std::string> sorted = want;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<std::string>{"alpha", "beta", "gamma"})) << "round " << r + 1;
  }
  // Three rounds from one seed: not all in the same order (this seed's
  // rounds differ), so the order is drawn, not spec order every time.
  EXPECT_FALSE(rounds[0] == rounds[1] && rounds[1] == rounds[2]);
  // Another seed, another order; the same seed, the same order.
  EXPECT_EQ(api::TargetRounds(run.spec, api::RepetitionOrder::kInterleaved, 42), rounds);
  EXPECT_NE(api::TargetRounds(run.spec, api::RepetitionOrder::kInterleaved, 43), rounds);
}

// Catches: a resumed interleaved run drawing a new seed (its remaining
// rounds would follow another order than the record says).
TEST_F(OrchestratorTest, AResumedInterleavedRunKeepsItsSeed) {
  api::BenchmarkRun run = MakeRun({"alpha", "beta"}, {10}, /*agents=*/1);
  run.spec.repetitions = 2;
  auto first = Make().Run(run, store_, false);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->schedule.order, "Interleaved");
  auto again = Make().Run(run, store_, /*resume=*/true);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->schedule.seed, first->schedule.seed);
  EXPECT_EQ(again->schedule.rounds, first->schedule.rounds);
}

// Catches: a capacity search that does not find the highest rate meeting
// the objective (a server whose p99 is 1 ms up to 3,000 requests/s and
// 50 ms above: the ladder 100 … 3,200 then bisection must end at 3,000), a
// search that does not run at a constant rate, trials not recorded, errors'
// onset not found, the cell's figures taken from a trial that failed.
TEST_F(OrchestratorTest, CapacitySearchFindsTheHighestRateMeetingTheObjective) {
  agents_.latency_at_rate = [](double rate) -> int64_t { return rate <= 3000 ? 1000 : 50000; };
  agents_.errors_at_rate = [](double rate) { return rate > 2000 ? 0.001 : 0.0; };
  api::BenchmarkRun run = MakeRun({"alpha"}, {10}, /*agents=*/1);
  run.spec.scenarios[0].slo = api::Slo{};
  run.spec.scenarios[0].slo->p99 = std::chrono::milliseconds(10);
  run.spec.scenarios[0].slo->start_rate = 100;
  run.spec.scenarios[0].slo->max_steps = 12;
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();
  ASSERT_EQ(record->cells.size(), 1u);
  const report::CellRecord& c = record->cells[0];
  ASSERT_EQ(c.result.state, api::CellState::kSucceeded) << api::ToString(c.result.reason) << ": " << c.result.message;
  ASSERT_TRUE(c.capacity.has_value());
  EXPECT_EQ(c.capacity->rate, 3000);
  EXPECT_TRUE(c.capacity->bounded);
  EXPECT_EQ(c.capacity->objective, "p99 ≤ 10ms");
  EXPECT_EQ(c.capacity->errors_began_at, 2400);  // the first trial above 2,000
  // Ladder 100, 200, …, 3,200 (fails), then bisection until the gap is
  // within 2 %: 2,400, 2,800, 3,000, 3,100, 3,050.
  std::vector<double> offered;
  for (const report::CapacityTrial& t : c.capacity->trials) offered.push_back(t.offered);
  EXPECT_EQ(offered, (std::vector<double>{100, 200, 400, 800, 1600, 3200, 2400, 2800, 3000, 3100, 3050}));
  for (const report::CapacityTrial& t : c.capacity->trials) EXPECT_EQ(t.pass, t.offered <= 3000) << t.offered;
  // The cell's figures are the 3,000 requests/s trial's.
  EXPECT_NEAR(c.result.requests_per_second, 3000 * (1 - 0.001), 1);
  EXPECT_LE(c.result.latency.p99, 1001);
  EXPECT_TRUE(c.latency_corrected);
  // Every job ran at a constant rate.
  for (const wire::JobSpec& j : agents_.Jobs()) EXPECT_GT(j.rate, 0);
  EXPECT_NE(c.result.message.find("capacity 3,000 requests/s within p99 ≤ 10ms"), std::string::npos)
      << c.result.message;
}

// Catches: a server that fails the objective at the first rate reported as
// a capacity of 0 (or a success) instead of one clear reason.
TEST_F(OrchestratorTest, AnUnreachableObjectiveFailsTheCellWithOneClearReason) {
  agents_.latency_at_rate = [](double) -> int64_t { return 35000; };
  api::BenchmarkRun run = MakeRun({"alpha"}, {10}, /*agents=*/1);
  run.spec.scenarios[0].slo = api::Slo{};
  run.spec.scenarios[0].slo->p99 = std::chrono::milliseconds(10);
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok());
  const report::CellRecord& c = record->cells[0];
  EXPECT_EQ(c.result.state, api::CellState::kFailed);
  EXPECT_EQ(api::ToString(c.result.reason), "SloUnreachable");
  EXPECT_NE(c.result.message.find("p99 ≤ 10ms is not met even at 100 requests/s"), std::string::npos)
      << c.result.message;
  ASSERT_TRUE(c.capacity.has_value());
  EXPECT_EQ(c.capacity->trials.size(), 1u);
}

// Catches: a cell whose target figures rest on samples the platform never
// refreshed during the measure phase (a kubelet refreshes every 10–15 s)
// reported as exact: it is flagged SparseUsage, with the count of fresh
// samples recorded.
TEST_F(OrchestratorTest, StaleUsageSamplesFlagTheCell) {
  platform_.stale_usage = true;
  const api::BenchmarkRun run = MakeRun({"alpha"}, {10}, /*agents=*/1);
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();
  ASSERT_EQ(record->cells.size(), 1u);
  const report::CellRecord& c = record->cells[0];
  EXPECT_EQ(c.result.state, api::CellState::kSucceeded);
  EXPECT_LT(c.usage_samples, 2u);
  EXPECT_EQ(std::count(c.flags.begin(), c.flags.end(), report::CellFlag::kSparseUsage), 1);
}

// What the target got, read inside it, judged in status.cpus; a target
// that shared its CPUs flags its cells, or with requireExclusiveCpus fails
// them before any load.
TargetCpuFacts KubeletFacts(std::string policy, std::string cpus) {
  TargetCpuFacts f;
  f.kubelet = true;
  f.node = "node-a";
  f.cpu_manager_policy = std::move(policy);
  f.asked = api::CpuQuantity{1000};
  CpuView v;
  v.cpus = std::move(cpus);
  v.online = "0-3";
  v.boot_id = "machine-a";
  f.view = v;
  return f;
}

// Catches: the verdict not reaching status.cpus, a shared target's cells not
// flagged, the flag on the cells of an exclusive one.
TEST_F(OrchestratorTest, SharedCpusFlagTheCellsAndStatusSaysWhy) {
  platform_.cpus = KubeletFacts("none", "0-3");
  auto record = Make().Run(MakeRun({"alpha"}, {10, 20}), store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();
  ASSERT_EQ(record->cells.size(), 2u);
  for (const report::CellRecord& c : record->cells) {
    EXPECT_EQ(c.result.state, api::CellState::kSucceeded);
    EXPECT_EQ(std::count(c.flags.begin(), c.flags.end(), report::CellFlag::kSharedCpus), 1);
  }
  ASSERT_EQ(record->run.status.cpus.size(), 1u);
  const api::TargetCpus& t = record->run.status.cpus[0];
  EXPECT_EQ(t.target, "alpha");
  EXPECT_EQ(t.exclusive, api::ConditionStatus::kFalse);
  EXPECT_NE(t.message.find("CPU manager policy none"), std::string::npos) << t.message;

  platform_.cpus = KubeletFacts("static", "2");
  auto exclusive = Make().Run(MakeRun({"alpha"}, {10}), store_, false);
  ASSERT_TRUE(exclusive.ok());
  EXPECT_EQ(
      std::count(exclusive->cells[0].flags.begin(), exclusive->cells[0].flags.end(), report::CellFlag::kSharedCpus), 0);
  EXPECT_EQ(exclusive->run.status.cpus[0].exclusive, api::ConditionStatus::kTrue);
  // Catches: the CPUs read from inside the target not reaching the cell's
  // limiter verdict (the fake target uses 1.5 cores; its one CPU caps it).
  ASSERT_TRUE(exclusive->cells[0].result.limiter.has_value());
  EXPECT_EQ(exclusive->cells[0].result.limiter->kind, api::LimiterKind::kTargetCpu)
      << exclusive->cells[0].result.limiter->evidence;
  EXPECT_EQ(exclusive->cells[0].result.limiter->evidence.rfind("target CPU 1.50 cores of its 1 CPU (2)", 0), 0u)
      << exclusive->cells[0].result.limiter->evidence;
}

// Catches: requireExclusiveCpus ignored, checked only after the load, or
// failing cells without naming the node's CPU manager policy.
TEST_F(OrchestratorTest, RequiredExclusiveCpusFailTheCellsBeforeAnyLoad) {
  platform_.cpus = KubeletFacts("none", "0-3");
  api::BenchmarkRun run = MakeRun({"alpha"}, {10, 20});
  run.spec.placement.require_exclusive_cpus = true;
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();
  ASSERT_EQ(record->cells.size(), 2u);
  for (const report::CellRecord& c : record->cells) {
    EXPECT_EQ(c.result.state, api::CellState::kFailed);
    EXPECT_EQ(c.result.reason, api::CellReason::kCpusNotExclusive);
    EXPECT_NE(c.result.message.find("the likely cause: node node-a's kubelet CPU manager policy is none"),
              std::string::npos)
        << c.result.message;
  }
  EXPECT_EQ(agents_.last_interval_ns.load(), 0) << "no load ran";
}

// Catches: the agents of a cell not compared with the target (an agent on
// the target's machine and CPUs under the static policy).
TEST_F(OrchestratorTest, AnAgentOnTheTargetsCpusIsCaughtInItsCell) {
  platform_.cpus = KubeletFacts("static", "2");
  CpuView beside;
  beside.cpus = "1-2";
  beside.online = "0-3";
  beside.boot_id = "machine-a";
  agents_.cpus["agent-0"] = beside;
  auto record = Make().Run(MakeRun({"alpha"}, {10}), store_, false);
  ASSERT_TRUE(record.ok()) << record.status().message();
  EXPECT_EQ(std::count(record->cells[0].flags.begin(), record->cells[0].flags.end(), report::CellFlag::kSharedCpus), 1);
  const api::TargetCpus& t = record->run.status.cpus[0];
  EXPECT_EQ(t.disjoint_from_agents, api::ConditionStatus::kFalse);
  ASSERT_EQ(t.agents.size(), 1u);
  EXPECT_TRUE(t.agents[0].same_machine);

  api::BenchmarkRun required = MakeRun({"alpha"}, {10});
  required.spec.placement.require_exclusive_cpus = true;
  auto failed = Make().Run(required, store_, false);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->cells[0].result.reason, api::CellReason::kCpusNotExclusive);
  EXPECT_NE(failed->cells[0].result.message.find("agent agent-0 may run on CPUs 2 too"), std::string::npos)
      << failed->cells[0].result.message;
}

// Catches: LoadSlot::held() never checked during a cell (a lost lease
// keeping a target under load), a lost slot recorded as a result or with
// another reason, load not stopped within a second, the target's other
// cells run without waiting for the slot again.
TEST_F(OrchestratorTest, LostSlotStopsTheLoadWithinASecondAndFailsTheCell) {
  agents_.mode = AgentMode::kHang;
  Start(MakeRun({"alpha"}, {10, 20}));
  WaitUntilLoaded();
  agents_.mode = AgentMode::kNormal;  // the next jobs finish normally
  const auto lost_at = LoseSlot();
  auto result = Finish();

  const std::vector<Clock::Steady> cancels = agents_.CancelTimes();
  ASSERT_FALSE(cancels.empty());
  EXPECT_LT(cancels.front() - lost_at, 1s) << "the load went on after the slot was lost";
  // The fake agent stops sending intervals once cancelled.
  EXPECT_LT(Clock::Steady(Clock::Steady::duration(agents_.last_interval_ns.load())) - lost_at, 1s);

  ASSERT_TRUE(result.ok()) << result.status().message();
  const report::RunRecord& record = *result;
  ASSERT_EQ(record.cells.size(), 2u);
  EXPECT_EQ(record.cells[0].result.state, api::CellState::kFailed);
  EXPECT_EQ(api::ToString(record.cells[0].result.reason), "SlotLost");
  EXPECT_EQ(record.cells[0].result.requests, 0u) << "numbers of a cell without the slot must not be kept";
  EXPECT_EQ(record.cells[0].result.requests_per_second, 0.0);
  // The second cell waited for the slot again, on a fresh deployment.
  EXPECT_EQ(record.cells[1].result.state, api::CellState::kSucceeded);
  EXPECT_EQ(state_.log.Count("slot demo/alpha"), 2u);
  EXPECT_EQ(state_.log.Count("deploy alpha"), 2u);
  EXPECT_EQ(state_.log.Count("teardown alpha"), 2u);
  EXPECT_EQ(record.run.status.phase, api::RunPhase::kFailed);
}

// Catches: a slot that keeps being lost retried forever.
TEST_F(OrchestratorTest, SlotLostTooOftenFailsTheRestOfTheTarget) {
  options_.slot_attempts = 1;
  agents_.mode = AgentMode::kHang;
  Start(MakeRun({"alpha"}, {10, 20}));
  WaitUntilLoaded();
  LoseSlot();
  auto result = Finish();
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->cells.size(), 2u);
  EXPECT_EQ(api::ToString(result->cells[0].result.reason), "SlotLost");
  EXPECT_EQ(api::ToString(result->cells[1].result.reason), "SlotLost");
  EXPECT_EQ(state_.log.Count("slot "), 1u);
}

// Catches: AcquireSlot not cancellable (a deleted run stuck for up to 24 h).
TEST_F(OrchestratorTest, CancelWhileWaitingForTheSlot) {
  platform_.block_slot = true;
  std::chrono::milliseconds after{};
  auto record = RunAndCancel(
      MakeRun({"alpha"}, {10}), [&] { return state_.log.Count("slot ") > 0; }, &after);
  EXPECT_LT(after, 1s);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->run.status.phase, api::RunPhase::kCancelled);
  EXPECT_TRUE(record->cells.empty());
  EXPECT_EQ(state_.log.Count("deploy "), 0u);
}

// Catches: WaitReady not cancellable, or the target left running.
TEST_F(OrchestratorTest, CancelWhileWaitingForTheTargetToBeReady) {
  platform_.block_ready = true;
  std::chrono::milliseconds after{};
  auto record = RunAndCancel(
      MakeRun({"alpha"}, {10}), [&] { return state_.log.Count("waiting ready") > 0; }, &after);
  EXPECT_LT(after, 1s);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->run.status.phase, api::RunPhase::kCancelled);
  EXPECT_TRUE(record->cells.empty()) << "a cancelled run records no cell it did not finish";
  EXPECT_EQ(state_.log.Count("teardown alpha"), 1u);
  EXPECT_EQ(state_.log.Count("release demo/alpha"), 1u);
}

// Catches: the wait for agents not cancellable (pods pulling images for
// minutes), or a cancelled cell recorded as AgentsUnavailable.
TEST_F(OrchestratorTest, CancelWhileWaitingForAgents) {
  agents_.block_wait = true;
  std::chrono::milliseconds after{};
  auto record = RunAndCancel(
      MakeRun({"alpha"}, {10}), [&] { return state_.log.Count("waiting for agents") > 0; }, &after);
  EXPECT_LT(after, 1s);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->run.status.phase, api::RunPhase::kCancelled);
  EXPECT_TRUE(record->cells.empty());
  EXPECT_EQ(state_.log.Count("teardown alpha"), 1u);
}

// Catches: a cancel during load not reaching the agents, or the interrupted
// cell recorded (a resume would then skip it).
TEST_F(OrchestratorTest, CancelDuringLoadStopsTheAgentsAndRecordsNothing) {
  agents_.mode = AgentMode::kHang;
  std::chrono::milliseconds after{};
  auto record = RunAndCancel(
      MakeRun({"alpha", "beta"}, {10}), [&] { return agents_.last_interval_ns.load() != 0; }, &after);
  EXPECT_LT(after, 1500ms);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->run.status.phase, api::RunPhase::kCancelled);
  EXPECT_TRUE(record->cells.empty());
  EXPECT_EQ(agents_.CancelTimes().size(), 1u);
  EXPECT_EQ(state_.log.Count("teardown alpha"), 1u);
  EXPECT_EQ(state_.log.Count("deploy beta"), 0u);
  ASSERT_TRUE(store_.stored.has_value());
  EXPECT_EQ(store_.stored->run.status.phase, api::RunPhase::kCancelled);
}

// The record of an interrupted run says why and where: the reason given to
// Cancel, the cell, the stage and how far into the measurement it was.
// Catches: a cancelled run whose record does not say where it stopped (the
// user cannot tell what a resume will redo), a reason lost, the elapsed
// time measured from the wrong moment (it must lie between what the test
// waited and what the run took).
TEST_F(OrchestratorTest, ACancelledRunSaysWhyAndWhereItStopped) {
  agents_.mode = AgentMode::kHang;
  api::BenchmarkRun run = MakeRun({"alpha", "beta"}, {10});
  run.spec.load.duration = 10s;
  Start(run);
  WaitUntilLoaded();
  const auto loaded = clock_.Now();
  Sleep(300ms);
  orchestrator_->Cancel("interrupted by SIGTERM");
  orchestrator_->Cancel("a second reason is not taken");
  auto record = Finish();
  const double most = std::chrono::duration<double>(clock_.Now() - loaded).count() + 0.2;
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->run.status.phase, api::RunPhase::kCancelled);
  const api::Condition* progressing = nullptr;
  for (const api::Condition& c : record->run.status.conditions) {
    if (c.type == "Progressing") progressing = &c;
  }
  ASSERT_NE(progressing, nullptr);
  EXPECT_EQ(progressing->reason, "Cancelled");
  const std::string& m = progressing->message;
  const std::string head = "interrupted by SIGTERM during cell alpha/hello/c10/r1, measuring: ";
  ASSERT_EQ(m.rfind(head, 0), 0u) << m;
  const double measured = std::stod(m.substr(head.size()));
  EXPECT_GE(measured, 0.3) << m;
  EXPECT_LE(measured, most) << m;
  EXPECT_NE(
      m.find(" s of 10.0 s measured; 0 of 2 cells finished (an interrupted cell is not recorded: a resume runs it "
             "again)"),
      std::string::npos)
      << m;
  ASSERT_TRUE(store_.stored.has_value());
  EXPECT_EQ(store_.stored->run.status.conditions, record->run.status.conditions);
}

// A target whose teardown fails (one killed after ignoring SIGTERM) is
// told in the record's notes; its cells stay. Catches: a teardown error
// only logged, or lost when the environment is described again.
TEST_F(OrchestratorTest, ATeardownFailureIsNotedInTheRecord) {
  state_.teardown_error = "did not exit within 10 s of SIGTERM; killed (SIGKILL)";
  Orchestrator o = Make();
  auto record = o.Run(MakeRun({"alpha", "beta"}, {10}), store_, false);
  ASSERT_TRUE(record.ok());
  ASSERT_EQ(record->cells.size(), 2u);
  for (const report::CellRecord& c : record->cells) EXPECT_EQ(c.result.state, api::CellState::kSucceeded);
  for (const std::string name : {"alpha", "beta"}) {
    const std::string note = "target " + name + ": teardown: did not exit within 10 s of SIGTERM; killed (SIGKILL)";
    EXPECT_EQ(std::count(record->environment.notes.begin(), record->environment.notes.end(), note), 1)
        << ::testing::PrintToString(record->environment.notes);
  }
  EXPECT_EQ(store_.stored->environment.notes, record->environment.notes);
}

// Catches: a target that dies under load recorded as an agent failure or a
// result, its remaining cells run against nothing, the run not moving on,
// how it ended (OOM-killed) not kept with the cells.
TEST_F(OrchestratorTest, TargetThatDiesFailsItsCellAndSkipsTheRest) {
  agents_.mode = AgentMode::kHang;
  Start(MakeRun({"alpha", "beta"}, {10, 20}));
  WaitUntilLoaded();
  agents_.mode = AgentMode::kNormal;
  const report::TargetExit oom{std::nullopt, 9, true, "was OOMKilled (killed by signal 9)"};
  platform_.target(0)->Kill(oom);
  auto result = Finish();
  ASSERT_TRUE(result.ok()) << result.status().message();
  const report::RunRecord& record = *result;
  ASSERT_EQ(record.cells.size(), 4u);
  EXPECT_EQ(record.cells[0].result.state, api::CellState::kFailed);
  EXPECT_EQ(api::ToString(record.cells[0].result.reason), "TargetExited");
  EXPECT_NE(record.cells[0].result.message.find("OOMKilled"), std::string::npos);
  EXPECT_NE(record.cells[0].result.message.find("logs/alpha.log"), std::string::npos);
  EXPECT_EQ(record.cells[1].result.state, api::CellState::kSkipped);
  EXPECT_EQ(api::ToString(record.cells[1].result.reason), "TargetExited");
  // How it ended goes with both cells, for the status writer's Event.
  EXPECT_EQ(record.cells[0].target_exit, oom);
  EXPECT_EQ(record.cells[1].target_exit, oom);
  EXPECT_EQ(record.cells[2].result.state, api::CellState::kSucceeded);
  EXPECT_EQ(record.cells[3].result.state, api::CellState::kSucceeded);
  EXPECT_EQ(record.run.status.phase, api::RunPhase::kFailed);
}

// Catches: resume losing a finished cell, redoing it, or deploying a
// target whose cells are all done.
TEST_F(OrchestratorTest, ResumeKeepsFinishedCellsAndRunsOnlyTheRest) {
  const api::BenchmarkRun run = MakeRun({"alpha", "beta"}, {10});
  report::RunRecord earlier = EarlierAttempt(run, 777);
  earlier.environment.notes = {"target alpha ran alpha-server"};
  store_.stored = earlier;

  auto record = Make().Run(run, store_, /*resume=*/true);
  ASSERT_TRUE(record.ok()) << record.status().message();
  ASSERT_EQ(record->cells.size(), 2u);
  EXPECT_EQ(record->cells[0].result.requests, 777u);
  EXPECT_EQ(record->cells[1].result.target, "beta");
  EXPECT_EQ(record->cells[1].result.requests, 2000u);
  EXPECT_EQ(state_.log.Count("deploy alpha"), 0u);
  EXPECT_EQ(agents_.Jobs().size(), 1u);
  EXPECT_EQ(record->run.status.phase, api::RunPhase::kSucceeded);
  // What the earlier attempt ran stays in the environment.
  const auto& notes = record->environment.notes;
  EXPECT_NE(std::find(notes.begin(), notes.end(), "target alpha ran alpha-server"), notes.end());
  ASSERT_FALSE(recorder_.messages.empty());
  EXPECT_EQ(recorder_.messages.front(), "resuming: 1 of 2 cells kept from the interrupted run");
}

// Catches: resuming a record of another spec (two runs mixed in one report).
TEST_F(OrchestratorTest, ResumeRefusesARecordOfAnotherSpec) {
  report::RunRecord earlier;
  earlier.run = MakeRun({"alpha"}, {10});
  store_.stored = earlier;
  auto record = Make().Run(MakeRun({"alpha"}, {10, 20}), store_, true);
  ASSERT_FALSE(record.ok());
  EXPECT_EQ(record.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(state_.log.Count("deploy "), 0u);
}

// Catches: a lost agent recorded as success or ending the run; agents not
// ensured again for the next cell.
TEST_F(OrchestratorTest, LostAgentFailsItsCellAndTheNextCellRuns) {
  agents_.mode = AgentMode::kFail;
  Start(MakeRun({"alpha"}, {10, 20}));
  while (agents_.Jobs().empty()) Sleep(2ms);
  agents_.mode = AgentMode::kNormal;
  auto result = Finish();
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->cells.size(), 2u);
  EXPECT_EQ(api::ToString(result->cells[0].result.reason), "AgentFailed");
  EXPECT_NE(result->cells[0].result.message.find("the agent went away"), std::string::npos);
  EXPECT_EQ(result->cells[1].result.state, api::CellState::kSucceeded);
  EXPECT_EQ(state_.log.Count("agents "), 2u);
}

// Catches: a failing endpoint loaded anyway, or its failure not named.
TEST_F(OrchestratorTest, FailedVerificationSkipsTheScenarioWithoutLoad) {
  verify_result_ = Status::FailedPrecondition("GET /: expected status 200, got 404");
  auto record = Make().Run(MakeRun({"alpha"}, {10, 20}), store_, false);
  ASSERT_TRUE(record.ok());
  ASSERT_EQ(record->cells.size(), 2u);
  for (const report::CellRecord& c : record->cells) {
    EXPECT_EQ(c.result.state, api::CellState::kSkipped);
    EXPECT_EQ(api::ToString(c.result.reason), "VerificationFailed");
    EXPECT_EQ(c.result.message, "GET /: expected status 200, got 404");
  }
  EXPECT_TRUE(agents_.Jobs().empty());
}

// Catches: a failed deploy ending the run or leaving the slot taken.
TEST_F(OrchestratorTest, FailedDeployFailsThatTargetOnly) {
  platform_.fail_deploy = {"alpha"};
  auto record = Make().Run(MakeRun({"alpha", "beta"}, {10}), store_, false);
  ASSERT_TRUE(record.ok());
  ASSERT_EQ(record->cells.size(), 2u);
  EXPECT_EQ(api::ToString(record->cells[0].result.reason), "DeployFailed");
  EXPECT_EQ(record->cells[0].result.message, "image pull failed");
  EXPECT_EQ(record->cells[1].result.state, api::CellState::kSucceeded);
  EXPECT_EQ(state_.log.Count("release demo/alpha"), 1u);
}

// Catches: the readiness timeout read from local settings only (a
// Kubernetes target has none) instead of spec.targets[].readiness.
TEST_F(OrchestratorTest, ReadinessTimeoutComesFromTheTarget) {
  platform_.block_ready = true;
  api::BenchmarkRun run = MakeRun({"alpha"}, {10});
  run.spec.targets[0].readiness = api::Readiness{"/healthz", 150ms, std::nullopt};
  const auto start = clock_.Now();
  auto record = Make().Run(run, store_, false);
  ASSERT_TRUE(record.ok());
  EXPECT_LT(clock_.Now() - start, 2s);
  ASSERT_EQ(record->cells.size(), 1u);
  EXPECT_EQ(api::ToString(record->cells[0].result.reason), "NotReady");
}

}  // namespace
}  // namespace fairbench::controller

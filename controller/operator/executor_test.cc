// The operator's executor with the orchestrator's fakes: it runs one run at
// a time on its own thread, always resumes from the run's store, hands the
// end to the run's finish hook, and lets go (idle) so that the next run
// can start. In the fakes' virtual time: the test holds the clock, and so
// does each run's thread from its first report (the run's observer binds
// it), so time goes on only while both sleep.
#include "controller/operator/executor.h"

#include <gtest/gtest.h>

#include <optional>
#include <spdlog/spdlog.h>

#include "controller/orchestrator/fakes_for_test.h"

namespace fairbench::controller {
namespace {

using namespace fakes;

class ExecutorTest : public ::testing::Test {
 protected:
  ExecutorTest() : agents_(state_) {
    spdlog::set_level(spdlog::level::warn);
    platform_ = std::make_shared<FakePlatform>(state_);
    options_.agent_timeout = 2s;
    options_.job_grace = 2s;
    options_.sample_period = 20ms;
    options_.idle_settle = 0ms;
    options_.verify = [](const TargetPlacement&, const api::ScenarioSettings&) { return Status::Ok(); };
    options_.clock = &clock_;
    hold_.emplace(clock_);
    hold_->Bind();
  }
  std::unique_ptr<OrchestratorExecutor> Make() {
    return std::make_unique<OrchestratorExecutor>(
        agents_, options_,
        [this](const api::BenchmarkRun&) -> Result<RunParts> {
          RunParts parts;
          parts.platform = platform_;
          auto store = std::make_unique<MemoryStore>();
          if (stored_) store->stored = stored_;
          MemoryStore* s = store.get();
          parts.store = std::move(store);
          parts.observer = std::make_unique<HoldingObserver>(clock_);
          parts.finish = [this, s](const Result<report::RunRecord>& r) {
            std::lock_guard<std::mutex> lock(mu_);
            ended_.push_back(r.ok() ? std::string(api::ToString(*r->run.status.phase)) : r.status().message());
            saved_ = s->stored;
          };
          return parts;
        },
        [this] { ++idle_calls_; });
  }
  // Until the executor is idle, for at most `timeout` of real time. The
  // test lets go of the clock meanwhile: time goes on as the run needs, not
  // as the test polls.
  bool WaitIdle(OrchestratorExecutor& e, std::chrono::milliseconds timeout) {
    hold_.reset();
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!e.Active().empty() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    hold_.emplace(clock_);
    hold_->Bind();
    return e.Active().empty();
  }

  // The observer of each run: its thread holds the clock from the run's
  // first report until the executor lets the observer go.
  class HoldingObserver final : public RunObserver {
   public:
    explicit HoldingObserver(FakeClock& clock) : hold_(clock) {}
    void OnPersist(const report::RunRecord&) override {
      if (!bound_) hold_.Bind();
      bound_ = true;
    }
    void OnStage(const api::BenchmarkRun&, const api::CurrentCell&) override {}
    void OnLive(const api::CurrentCell&, double, double) override {}
    void OnCellDone(const report::RunRecord&, const report::CellRecord&) override {}
    void OnMessage(const std::string&) override {}

   private:
    FakeClock::Hold hold_;
    bool bound_ = false;
  };

  SharedState state_;
  FakeClock& clock_ = state_.clock;
  std::optional<FakeClock::Hold> hold_;  // the test's
  std::shared_ptr<FakePlatform> platform_;
  FakeAgents agents_;
  OrchestratorOptions options_;
  std::optional<report::RunRecord> stored_;
  std::mutex mu_;
  std::vector<std::string> ended_;
  std::optional<report::RunRecord> saved_;
  std::atomic<int> idle_calls_{0};
};

// Catches: the run not executed on its own thread (Start blocking the
// reconciler), a second run started while one is active, the finish hook
// or the idle notice skipped (the next run would never start).
TEST_F(ExecutorTest, RunsOneRunAtATimeAndSaysWhenItIsIdle) {
  auto e = Make();
  const auto start = clock_.Now();
  ASSERT_TRUE(e->Start("default/demo", MakeRun({"alpha"}, {10})).ok());
  EXPECT_LT(clock_.Now() - start, 100ms) << "Start must return at once";
  EXPECT_EQ(e->Active(), "default/demo");
  const Status busy = e->Start("default/other", MakeRun({"beta"}, {10}));
  EXPECT_EQ(busy.code(), Status::Code::kFailedPrecondition);
  ASSERT_TRUE(WaitIdle(*e, 5s));
  EXPECT_EQ(idle_calls_.load(), 1);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(ended_, std::vector<std::string>{"Succeeded"});
  ASSERT_TRUE(saved_.has_value());
  EXPECT_EQ(saved_->cells.size(), 1u);
  EXPECT_EQ(state_.log.Count("deploy beta"), 0u);
}

// Catches: a run started by a previous leader begun anew (finished cells
// lost or measured twice) instead of resumed from its store.
TEST_F(ExecutorTest, AlwaysResumesFromTheStore) {
  const api::BenchmarkRun run = MakeRun({"alpha", "beta"}, {10});
  report::RunRecord earlier = EarlierAttempt(run, 777);
  stored_ = earlier;
  auto e = Make();
  ASSERT_TRUE(e->Start("default/demo", run).ok());
  ASSERT_TRUE(WaitIdle(*e, 5s));
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_TRUE(saved_.has_value());
  ASSERT_EQ(saved_->cells.size(), 2u);
  EXPECT_EQ(saved_->cells[0].result.requests, 777u);
  EXPECT_EQ(state_.log.Count("deploy alpha"), 0u);
  EXPECT_EQ(state_.log.Count("deploy beta"), 1u);
}

// Catches: Cancel not reaching the orchestrator (a deleted run waiting for
// the slot for hours), a cancel of another key stopping the active run.
TEST_F(ExecutorTest, CancelStopsTheActiveRunWithinASecond) {
  platform_->block_slot = true;
  auto e = Make();
  ASSERT_TRUE(e->Start("default/demo", MakeRun({"alpha"}, {10})).ok());
  while (state_.log.Count("slot ") == 0) clock_.SleepFor(5ms);
  e->Cancel("default/other");
  clock_.SleepFor(100ms);
  EXPECT_EQ(e->Active(), "default/demo");
  const auto cancel_at = clock_.Now();
  e->Cancel("default/demo");
  ASSERT_TRUE(WaitIdle(*e, 5s));
  EXPECT_LT(clock_.Now() - cancel_at, 1s);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(ended_, std::vector<std::string>{"Cancelled"});
}

// Catches: destroying the executor with a run under way leaving its thread
// running (a crash at exit), hanging, or waiting for the run to end on its
// own (its agents would be stopped for another reason: the run's time is
// up only after 10 minutes).
TEST_F(ExecutorTest, ShutdownEndsTheActiveRun) {
  agents_.mode = AgentMode::kHang;
  api::BenchmarkRun run = MakeRun({"alpha"}, {10});
  run.spec.load.duration = std::chrono::minutes(10);
  auto e = Make();
  ASSERT_TRUE(e->Start("default/demo", run).ok());
  while (agents_.last_interval_ns.load() == 0) clock_.SleepFor(5ms);
  hold_.reset();  // the test is going to wait for the run's thread
  const auto at = std::chrono::steady_clock::now();
  e.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - at, 2s);
  EXPECT_EQ(agents_.CancelTimes().size(), 1u);
  EXPECT_EQ(state_.log.Count("cancel agent-0 the run was cancelled"), 1u);
}

// ReleaseForExit, as the controller calls it before _exit. Catches: it
// waiting for (or cancelling) a run still under way, where a standby is to
// resume it; a run started after it; the run thread neither joined nor
// detached (std::terminate when the executor is destroyed; under
// ThreadSanitizer, a thread leak at exit).
TEST_F(ExecutorTest, ReleaseForExitLeavesARunningRunAndStartsNoOther) {
  platform_->block_slot = true;
  auto e = Make();
  ASSERT_TRUE(e->Start("default/demo", MakeRun({"alpha"}, {10})).ok());
  while (state_.log.Count("slot ") == 0) clock_.SleepFor(5ms);
  // Still holding the clock: a ReleaseForExit that waited for the run
  // would wait for good (the run's 60 s wait for the slot never ends).
  const auto at = std::chrono::steady_clock::now();
  e->ReleaseForExit();
  EXPECT_LT(std::chrono::steady_clock::now() - at, 100ms) << "ReleaseForExit waited for a run under way";
  EXPECT_EQ(e->Active(), "default/demo") << "ReleaseForExit ended the run";
  EXPECT_EQ(e->Start("default/next", MakeRun({"beta"}, {10})).code(), Status::Code::kCancelled);
  e->Cancel("default/demo");
  ASSERT_TRUE(WaitIdle(*e, 5s));
  // Its thread, detached, may still be taking its last steps on the
  // executor: kept until the process ends, as the controller's is.
  static std::vector<std::unique_ptr<OrchestratorExecutor>> kept;
  kept.push_back(std::move(e));

  auto done = Make();
  platform_->block_slot = false;
  ASSERT_TRUE(done->Start("default/quick", MakeRun({"alpha"}, {10})).ok());
  ASSERT_TRUE(WaitIdle(*done, 5s));
  done->ReleaseForExit();
  EXPECT_EQ(done->Start("default/next", MakeRun({"beta"}, {10})).code(), Status::Code::kCancelled);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(ended_, (std::vector<std::string>{"Cancelled", "Succeeded"}));
}

}  // namespace
}  // namespace fairbench::controller

// Orchestrator: runs a BenchmarkRun, one target under load at a time.
//
// One state machine, the same on every platform; it knows the platform only
// through the seam (platform/platform.h), the agents only through AgentPool
// and the record's home only through RunStore. Per target in order: take
// the load slot → deploy pinned → wait until ready → verify every scenario
// once against its expect (a failing endpoint is reported, never loaded) →
// sample idle memory → for each cell (scenario × connection level ×
// repetition): warm up and measure with the run's agents (merged), sample
// loaded memory and target CPU, cool down → tear down → release the slot.
//
// Nothing finished is ever lost: after every cell the whole record is saved
// to the store, and a run resumed from it keeps every finished cell and
// continues at the first unfinished one. A target that crashes is a
// finding: its current cell fails with the reason, its remaining cells are
// skipped with it, and the run moves on. A lost agent fails its cell; the
// platform replaces it for the next one.
//
// The load slot is checked throughout every cell: a slot that is no longer
// held (a lease lost) stops the agents at once and fails the cell with the
// reason SlotLost — never a result; the target's remaining cells wait for
// the slot again (up to slot_attempts times).
//
// Cancel() reaches every wait (slot, deploy, readiness, agents, load,
// cooldown) through a stop token; the interrupted cell is not recorded (a
// resume redoes it), but the record says where the run stopped: the
// Progressing condition's message names the reason given to Cancel, the
// cell, its stage and how far into its warmup or measurement it was
// ("interrupted by SIGTERM during cell a/hello/c8/r1, measuring: 1.2 s of
// 5 s measured; 3 of 8 cells finished…"). Run() uses the calling thread;
// Cancel() may be called from any thread.
//
// A target whose teardown fails (a local one that ignored SIGTERM and had
// to be killed) is told in the log and in the record's environment notes
// ("target NAME: teardown: …"); its cells stay as they were.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "api/benchmark_run.h"
#include "api/cells.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "controller/report/run_record.h"
#include "controller/hub/agent_pool.h"
#include "controller/orchestrator/run_observer.h"
#include "controller/orchestrator/run_store.h"
#include "controller/platform/platform.h"

namespace fairbench::controller {

struct OrchestratorOptions {
  std::chrono::milliseconds agent_timeout{20000};  // to connect and go idle
  std::chrono::milliseconds slot_timeout{std::chrono::hours(24)};
  std::chrono::milliseconds job_grace{15000};  // beyond warmup + duration + timeout
  std::chrono::milliseconds sample_period{200};
  std::chrono::milliseconds idle_settle{500};  // before the idle memory sample
  // How often a target whose slot was lost waits for it again.
  int slot_attempts = 3;
  std::string fairbench_version;
  // Checks a scenario against the ready target; VerifyScenario by default.
  std::function<Status(const TargetPlacement&, const api::ScenarioSettings&)> verify;
  // Scenarios with vary on plain HTTP/1.1 targets: one answer read to the
  // end of its connection (ReadAnswerToEnd by default).
  std::function<Result<api::AnswerChecks>(const TargetPlacement&, const api::ScenarioSettings&)> read_answer;
  // Every wait and every time the orchestrator reads (a cell's phases, the
  // agents' start, the record's timestamps); null: the system clock. A
  // platform's deadlines (WaitReady) are on it too.
  Clock* clock = nullptr;
};

class Orchestrator {
 public:
  Orchestrator(Platform& platform, AgentPool& agents, OrchestratorOptions options, RunObserver* observer);

  // Runs `run` to the end, saving its record in `store`. With `resume`, the
  // stored record's finished cells are kept (its spec must be the same);
  // without, the store's record is replaced. Errors are about the run as a
  // whole (the store cannot be read or written, the spec changed); cell
  // failures are in the record.
  Result<report::RunRecord> Run(const api::BenchmarkRun& run, RunStore& store, bool resume);
  // Stops the current cell (not recorded, so a resume redoes it) and ends
  // the run as Cancelled; `reason` ("interrupted by SIGTERM") leads the
  // record's message (empty: "cancelled"). Thread-safe; the first reason
  // given stays.
  void Cancel(const std::string& reason = "");
  bool cancelled() const { return stop_.stop_requested(); }

 private:
  struct RunState;
  // One target's visit: slot → deploy → verify → cells → teardown
  // (target_visit.cc).
  class TargetVisit;
  // One measurement of one cell (cell_run.cc).
  class CellRun;
  // One deployment of a target in the run's schedule: its unfinished cells,
  // all of them (repetition 0) or those of one repetition (interleaved).
  struct Visit {
    size_t target;
    int32_t repetition;
  };
  // The steps of Run(), in order.
  Status KeepEarlier(RunState& state, report::RunRecord& earlier);
  std::vector<Visit> Schedule(RunState& state, const report::RunRecord* earlier);
  Status Start(RunState& state, bool resumed);
  Status VisitTarget(RunState& state, const Visit& visit);
  Status Finish(RunState& state);
  // The record's environment from the platform, with the earlier notes kept.
  void Describe(RunState& state);
  // Saves the whole record and tells the observer.
  Status Persist(RunState& state);

  enum class TargetOutcome { kDone, kSlotLost, kStopped };
  TargetOutcome RunTarget(RunState& state, size_t target_index, const std::vector<const api::Cell*>& todo,
                          Status* error);
  // One measurement of a cell; `rate` replaces the scenario's (a trial of
  // a capacity search).
  report::CellRecord RunCell(RunState& state, const api::Cell& cell, TargetInstance& instance, const LoadSlot& slot,
                             std::optional<uint64_t> memory_idle, std::optional<int64_t> rate = std::nullopt);
  // A scripted scenario's first request, made by one of the run's agents
  // (a probe job: setup(), init() and request() there, no load), so that
  // the endpoint can be checked with it before the load.
  Result<api::Request> ScriptFirstRequest(const api::BenchmarkRun& run, const api::ScenarioSettings& settings,
                                          const TargetPlacement& where);
  // A cell of a scenario with an objective: the capacity search.
  report::CellRecord RunCapacity(RunState& state, const api::Cell& cell, TargetInstance& instance, const LoadSlot& slot,
                                 std::optional<uint64_t> memory_idle);
  void SetStage(const api::BenchmarkRun& run, const api::Cell& cell, api::Stage stage);
  void Message(const std::string& message);
  bool SleepUnlessStopped(std::chrono::nanoseconds d);

  Platform& platform_;
  AgentPool& agents_;
  OrchestratorOptions options_;
  Clock& clock_;
  RunObserver* observer_;
  // This process's own CPUs (read at each Run): a target on the same
  // machine must not share one with it.
  std::optional<CpuView> controller_cpus_;
  // Where the run is, for the record of an interrupted run: the cell and
  // stage last entered (SetStage), and how far into it (RunCell, when it is
  // stopped under load). The run's thread only.
  std::string WhereStopped() const;
  std::string position_cell_;
  std::optional<api::Stage> position_stage_;
  std::string position_detail_;

  std::stop_source stop_;
  // The reason given to Cancel (behind a pointer, so that an Orchestrator
  // stays movable).
  struct CancelReason {
    Mutex mu;
    std::string text GUARDED_BY(mu);
  };
  std::unique_ptr<CancelReason> cancel_reason_ = std::make_unique<CancelReason>();
  uint64_t job_counter_ = 0;
};

}  // namespace fairbench::controller

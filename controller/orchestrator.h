// Orchestrator: runs BenchmarkRuns, one target under load at a time.
//
// One state machine, the same on every platform. Per run, per target in
// order: take the load slot → deploy pinned → wait until ready → verify every
// scenario once against its expect (a failing endpoint is reported, never
// loaded) → sample idle memory → for each cell (scenario × connection level
// × repetition): warm up and measure with the run's agents (merged), sample
// loaded memory and target CPU, cool down → tear down → release the slot.
//
// Nothing finished is ever lost: after every cell the whole record is
// written to OUTPUT/results.json (atomically), and a run resumed from it
// keeps every finished cell and continues at the first unfinished one. A
// target that crashes is a finding: its current cell fails with the reason,
// its remaining cells are skipped with it, and the run moves on. A lost
// agent fails its cell; the platform replaces it for the next one.
//
// Runs submitted together are run in FIFO order (RunQueue). Run() and the
// queue's worker use the calling thread; Cancel() may be called from any
// thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/api/benchmark_run.h"
#include "common/api/cells.h"
#include "common/report/run_record.h"
#include "controller/agent_hub.h"
#include "controller/platform.h"

namespace fairbench::controller {

// What the orchestrator is doing, for a person watching or a status writer.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnStage(const api::BenchmarkRun& run, const api::CurrentCell& current) = 0;
  // Once per interval during a cell: the merged requests/s so far.
  virtual void OnLive(const api::CurrentCell& current, double requests_per_second, double elapsed_seconds) = 0;
  virtual void OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) = 0;
  virtual void OnMessage(const std::string& message) = 0;
  // Each merged interval of a cell (every agent's snapshot of one sequence
  // number), in sequence order, with the wall-clock time at which the
  // interval ended (the job's start time plus its end_ns). Called on gRPC
  // threads with the cell's aggregator locked: must be quick, must not block.
  virtual void OnInterval(const std::string& /*run*/, const api::CurrentCell& /*cell*/, const Snapshot& /*merged*/,
                          api::Time /*end*/) {}
  // The target's memory and CPU, as sampled during a cell's measurement and
  // once when idle.
  virtual void OnTargetUsage(const std::string& /*run*/, const api::CurrentCell& /*cell*/, const TargetUsage& /*usage*/) {}
};

struct OrchestratorOptions {
  std::string output_dir;  // results.json, cells/*.txt; empty: nothing written
  std::chrono::milliseconds agent_timeout{20000};  // to connect and go idle
  std::chrono::milliseconds slot_timeout{std::chrono::hours(24)};
  std::chrono::milliseconds job_grace{15000};  // beyond warmup + duration + timeout
  std::chrono::milliseconds sample_period{200};
  report::Environment environment;
  // Called after every persisted change (status writers hook in here).
  std::function<void(const report::RunRecord&)> on_persist;
};

class Orchestrator {
 public:
  Orchestrator(Platform& platform, AgentHub& hub, OrchestratorOptions options, RunObserver* observer);

  // Runs `run` to the end. With `resume_from`, its finished cells are kept
  // (the spec must be the same). Errors are about the run as a whole (the
  // output cannot be written, the spec changed); cell failures are in the
  // record.
  Result<report::RunRecord> Run(const api::BenchmarkRun& run, std::optional<report::RunRecord> resume_from = {});
  // Stops the current cell (not recorded, so a resume redoes it) and ends
  // the run as Cancelled. Thread-safe.
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

 private:
  struct TargetContext;
  Status Persist(const report::RunRecord& record);
  report::CellRecord RunCell(const api::BenchmarkRun& run, const api::Cell& cell, TargetContext& target);
  report::CellRecord NotRun(const api::Cell& cell, api::CellState state, const std::string& reason, const std::string& message);
  void SetStage(const api::BenchmarkRun& run, const api::Cell& cell, api::Stage stage);
  bool SleepUnlessCancelled(std::chrono::milliseconds d);

  Platform& platform_;
  AgentHub& hub_;
  OrchestratorOptions options_;
  RunObserver* observer_;
  std::atomic<bool> cancelled_{false};
  uint64_t job_counter_ = 0;
};

// Verifies one scenario against a running target: status, content type,
// body (exact) or JSON equality. OK, or a one-line description of the
// mismatch ("expected status 200, got 404").
Status VerifyScenario(const std::string& host, uint16_t port, const api::ScenarioSettings& settings);

}  // namespace fairbench::controller

// RunObserver: what the orchestrator is doing, for a person watching (the
// terminal progress), Prometheus (metrics/run_metrics) or a status writer.
//
// OnStage, OnLive, OnCellDone, OnMessage and OnPersist come from the
// orchestrator's thread; OnInterval from gRPC threads (see there).
#pragma once

#include <string>

#include "api/benchmark_run.h"
#include "common/metrics.h"
#include "controller/report/run_record.h"
#include "controller/platform/platform.h"

namespace fairbench::controller {

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
  virtual void OnTargetUsage(const std::string& /*run*/, const api::CurrentCell& /*cell*/,
                             const TargetUsage& /*usage*/) {}
  // A deployed target answered on its readiness path: where it runs.
  virtual void OnTargetReady(const std::string& /*run*/, const std::string& /*target*/,
                             const TargetPlacement& /*placement*/) {}
  // After the record was stored (every change: start, each cell, the end).
  virtual void OnPersist(const report::RunRecord& /*record*/) {}
};

}  // namespace fairbench::controller

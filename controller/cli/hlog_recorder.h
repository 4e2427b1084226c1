// HlogRecorder: each cell's per-interval latency histograms, as `fairbench
// run` measures them, written as HdrHistogram interval logs (common/hlog.h)
// into DIR (the run's output folder's hlog/):
//
//   DIR/TARGET_SCENARIO_cN_rR.hlog   the cell's key as in cells/ ('/' → '_')
//   DIR/TARGET_SCENARIO_cN_rR-K.hlog the cell's K-th measurement (K ≥ 2): a
//                                    capacity search measures a cell once
//                                    per trial, in results.json's order
//
// One line per merged interval (every agent's histogram of that interval,
// as the record's timeline counts it), appended as it arrives: a run that
// dies loses no interval already merged. Values are microseconds (the max
// column in milliseconds); warmup intervals are tagged "warmup", so that
// HdrHistogram's tools read only the measure phase unless asked for the
// tag. BaseTime is the cell's load start (its intervals' zero).
//
// Interval calls come from gRPC threads (one write(2) each, with the
// cell's aggregator locked); the rest from the orchestrator. Thread-safe.
// A file that cannot be written is given up and said once in the log; the
// run goes on (results.json holds every number).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "common/hlog.h"
#include "common/mutex.h"
#include "controller/orchestrator/run_observer.h"

namespace fairbench::controller {

class HlogRecorder final : public RunObserver {
 public:
  HlogRecorder(std::filesystem::path dir, std::string comment) : dir_(std::move(dir)), comment_(std::move(comment)) {}

  // Warming up (a new measurement of a cell begins): the next interval
  // starts a new file.
  void OnStage(const api::BenchmarkRun& run, const api::CurrentCell& current) override;
  void OnLive(const api::CurrentCell&, double, double) override {}
  void OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) override;
  void OnMessage(const std::string&) override {}
  void OnInterval(const std::string& run, const api::CurrentCell& cell, const Snapshot& merged, api::Time end) override;

  // The file a cell's `measurement`-th measurement goes to (1-based).
  static std::string FileName(const api::CurrentCell& cell, int measurement);

 private:
  void Close() REQUIRES(mu_);

  const std::filesystem::path dir_;
  const std::string comment_;
  Mutex mu_;
  std::string key_ GUARDED_BY(mu_);      // the cell measured now
  int measurement_ GUARDED_BY(mu_) = 0;  // of that cell, 1-based
  bool opened_ GUARDED_BY(mu_) = false;  // this measurement's file was tried
  std::unique_ptr<HlogFile> file_ GUARDED_BY(mu_);
};

}  // namespace fairbench::controller

// ObserverFanout: hands every RunObserver call to several observers in
// order (the terminal's progress and the metrics, say). Holds plain
// pointers; the observers must outlive it. As thread-safe as they are.
#pragma once

#include <string>
#include <vector>

#include "controller/orchestrator/run_observer.h"

namespace fairbench::controller {

class ObserverFanout final : public RunObserver {
 public:
  explicit ObserverFanout(std::vector<RunObserver*> observers) : observers_(std::move(observers)) {}

  void OnStage(const api::BenchmarkRun& run, const api::CurrentCell& current) override {
    for (auto* o : observers_) o->OnStage(run, current);
  }
  void OnLive(const api::CurrentCell& current, double rps, double elapsed) override {
    for (auto* o : observers_) o->OnLive(current, rps, elapsed);
  }
  void OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) override {
    for (auto* o : observers_) o->OnCellDone(record, cell);
  }
  void OnMessage(const std::string& message) override {
    for (auto* o : observers_) o->OnMessage(message);
  }
  void OnInterval(const std::string& run, const api::CurrentCell& cell, const Snapshot& merged,
                  api::Time end) override {
    for (auto* o : observers_) o->OnInterval(run, cell, merged, end);
  }
  void OnTargetUsage(const std::string& run, const api::CurrentCell& cell, const TargetUsage& usage) override {
    for (auto* o : observers_) o->OnTargetUsage(run, cell, usage);
  }
  void OnTargetReady(const std::string& run, const std::string& target, const TargetPlacement& where) override {
    for (auto* o : observers_) o->OnTargetReady(run, target, where);
  }
  void OnPersist(const report::RunRecord& record) override {
    for (auto* o : observers_) o->OnPersist(record);
  }

 private:
  const std::vector<RunObserver*> observers_;
};

}  // namespace fairbench::controller
